"""Give every definition in generated code its own variable name.

The generator reuses short names (``i``, ``acc``, ``coef``...) across hundreds of loops.
Numba rebuilds SSA form over all definitions of a name, which made compiling slow and, for
large kernels, exceeded Python's recursion limit. Renaming is purely syntactic: a loop target,
or an assignment at the block level where the name was last defined, gets a fresh name that
its later uses follow; an assignment inside a nested block to a name defined outside it (a
loop-carried value such as a running maximum) keeps the outer name.
"""

from __future__ import annotations

import ast


class _Renamer:
    def __init__(self, fixed: set[str]):
        self.fixed = fixed
        self.counter = 0

    def fresh(self, name: str) -> str:
        self.counter += 1
        return f"{name}_{self.counter}"

    def block(self, statements: list[ast.stmt], names: dict[str, tuple[str, int]], level: int) -> None:
        for statement in statements:
            self.statement(statement, names, level)

    def _define(self, target: ast.expr, names: dict, level: int) -> None:
        if isinstance(target, ast.Name) and target.id not in self.fixed:
            current = names.get(target.id)
            if current is None or current[1] == level:
                names[target.id] = (self.fresh(target.id), level)
            target.id = names[target.id][0]
        else:
            self.expression(target, names)

    def expression(self, node: ast.AST, names: dict) -> None:
        for child in ast.walk(node):
            if isinstance(child, ast.Name) and child.id in names:
                child.id = names[child.id][0]

    def statement(self, statement: ast.stmt, names: dict, level: int) -> None:
        if isinstance(statement, ast.Assign):
            self.expression(statement.value, names)
            for target in statement.targets:
                self._define(target, names, level)
        elif isinstance(statement, ast.AugAssign):
            self.expression(statement.value, names)
            self.expression(statement.target, names)
        elif isinstance(statement, ast.For):
            self.expression(statement.iter, names)
            inner = dict(names)
            if isinstance(statement.target, ast.Name):
                inner[statement.target.id] = (self.fresh(statement.target.id), level + 1)
                statement.target.id = inner[statement.target.id][0]
            self.block(statement.body, inner, level + 1)
        elif isinstance(statement, ast.If):
            self.expression(statement.test, names)
            self.block(statement.body, dict(names), level + 1)
            self.block(statement.orelse, dict(names), level + 1)
        else:
            self.expression(statement, names)


def unique_names(source: str) -> str:
    """The source with every function body's definitions renamed apart."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            parameters = {argument.arg for argument in node.args.args}
            _Renamer(parameters).block(node.body, {}, 0)
    return ast.unparse(tree) + "\n"
