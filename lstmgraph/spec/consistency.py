"""The training section against the groups of a schema-valid spec.

The loss must suit the output activations, the task must exist, accept its options and have
as many inputs and outputs as the spec's input and output groups hold, and a data file
(``data``) must be readable with those widths. These need only the spec and the files it
names (input and output units are exactly the input and output groups), so they run at
validation, where `lstmgraph validate` reports them with the spec's other problems.
"""

from __future__ import annotations

from ..errors import Problem
from ..operations import loss_output_problem
from ..tasks import TaskError, make_task
from ..tasks.data_file import (DATA_FILE, DataError, DataFileTask, beside, read_data_file, target_problem,
                               spec_relative)
from .models import InputGroup, NetworkSpec, OutputGroup


def training_problems(spec: NetworkSpec, spec_file: str, data_files: bool = True) -> list[Problem]:
    """Every way the training section does not fit the network (none without a section);
    ``spec_file`` is the spec's file name, which a data file is relative to. Without
    ``data_files`` neither ``data`` nor the ``data_file`` task's file is read (a trained run's:
    read where used)."""
    training = spec.training
    if training is None:
        return []
    problems = []
    outputs = [group for group in spec.groups if isinstance(group, OutputGroup)]
    for group in outputs:
        mismatch = loss_output_problem(training.loss, group.name, group.activation)
        if mismatch:
            problems.append(Problem(("training", "loss"), mismatch, suggestion="use loss: sum_of_squares"))
    inputs = sum(group.size for group in spec.groups if isinstance(group, InputGroup))
    width = sum(group.size for group in outputs)
    if training.data is not None and data_files:
        path = beside(spec_file, training.data)
        try:
            sequences, _ = read_data_file(path, inputs, width)
        except DataError as error:
            return problems + [Problem(("training", "data"), str(error))]
        if problem := target_problem(sequences, training.loss, outputs):
            problems.append(Problem(("training", "data"), f"{path}: {problem}"))
    if training.task is not None and (data_files or training.task.name != DATA_FILE):
        try:
            task = make_task(training.task.name, spec_relative(training.task.name, training.task.options, spec_file))
        except TaskError as error:  # (at the option it is about, where it names one the spec gives)
            at = ("training", "task", error.option) if error.option in training.task.options else ("training", "task")
            return problems + [Problem(at, str(error))]
        if (task.n_inputs, task.n_outputs) != (inputs, width):
            data = f" (the data file {task.path})" if isinstance(task, DataFileTask) else ""
            problems.append(Problem(("training", "task"), f"task '{task.name}'{data} has {task.n_inputs} inputs "
                                    f"and {task.n_outputs} outputs, the network {inputs} and {width}"))
        elif isinstance(task, DataFileTask) and (problem := target_problem(task.sequences.strings, training.loss,
                                                                             outputs)):
            problems.append(Problem(("training", "task"), f"the data file {task.path}: {problem}"))
    return problems
