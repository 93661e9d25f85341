"""The bundled specs by name: what a SPEC argument names (`lstmgraph specs` lists them: `plan.summary`).

A bundled spec is a ``.yaml`` file in `lstmgraph.files.BUNDLED_SPECS` (the repository's
``specs/`` in a checkout, ``lstmgraph/specs/`` in an installed wheel); its name is the file's
stem. `find_spec` turns what a user typed into a file: an existing file as it is, else a
bundled spec's name (``gers2000_cerg``, ``gers2000_cerg.yaml``, or ``specs/gers2000_cerg.yaml``
where the current folder has no such file), else a `SpecNotFound` that suggests the closest
names. `lstmgraph.load_spec` resolves every path here, so the library and every command that
takes a SPEC accept the same names.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from .errors import SPEC_EXPECTED, Problem, SpecError, SpecFileError, SpecSource
from .files import BUNDLED_SPECS, TOO_LONG, name_too_long

#: The files a spec may be, by suffix, and their formats (`spec.loader` reads them).
SPEC_FORMATS = {".yaml": "yaml", ".yml": "yaml", ".json": "json"}


class SpecNotFound(SpecFileError):
    """A SPEC argument that is neither a file nor a bundled spec's name; names the files there
    that lack only a spec suffix (``files``: ``mynet`` for ``mynet.yaml``), else the closest
    bundled specs, if any are close."""

    def __init__(self, argument: str, suggestions: list[str], files: list[str] = ()):
        suggestion = None
        if files:
            suggestion = f"did you mean the file {' or '.join(repr(name) for name in files)}?"
        elif suggestions:
            shown = " or ".join(f"'{name}'" for name in suggestions)
            suggestion = f"did you mean the bundled spec {shown}?"
        SpecError.__init__(self, [Problem((), "no such file", expected=SPEC_EXPECTED, suggestion=suggestion)],
                           SpecSource(argument))
        self.suggestions, self.files = suggestions, list(files)


def spec_names(folder: Path = BUNDLED_SPECS) -> list[str]:
    """The bundled specs' names, sorted."""
    return sorted(path.stem for path in folder.glob("*.yaml") if path.is_file())


def bundled_spec(name: str, folder: Path = BUNDLED_SPECS) -> Path | None:
    """The file of the bundled spec a name stands for (``NAME``, ``NAME.yaml``,
    ``specs/NAME.yaml``), or None."""
    path = Path(name)
    if len(path.parts) > 2 or (len(path.parts) == 2 and path.parts[0] != "specs"):
        return None
    stem = path.name[:-len(".yaml")] if path.name.endswith(".yaml") else path.name
    if stem in spec_names(folder):
        return folder / f"{stem}.yaml"
    return None


def find_spec(argument: str | Path, folder: Path = BUNDLED_SPECS) -> Path:
    """The file a SPEC argument names: the path itself where something other than a folder
    exists there (the loader says what is wrong with a device), else the bundled spec of that
    name (a run folder named ``gru`` does not hide the bundled ``gru``), else the folder
    itself (the loader refuses it); `SpecNotFound` otherwise."""
    path = Path(argument)
    if name_too_long(path):
        raise SpecFileError(str(argument), TOO_LONG, SPEC_EXPECTED)
    if not path.is_dir() and (path.exists() or path.is_symlink()):
        return path
    found = bundled_spec(str(argument), folder)
    if found is not None:
        return found
    if path.is_dir():
        return path
    files = [path.with_name(path.name + suffix) for suffix in SPEC_FORMATS if path.name]
    raise SpecNotFound(str(argument), close_names(path.name, folder),
                       [str(file) for file in files if not name_too_long(file) and file.is_file()])


def close_names(word: str, folder: Path = BUNDLED_SPECS, count: int = 3) -> list[str]:
    """Bundled specs' names close to ``word`` (its .yaml/.yml/.json stripped): by spelling,
    then those that contain it."""
    stem = word
    for suffix in SPEC_FORMATS:
        if stem.lower().endswith(suffix):
            stem = stem[:-len(suffix)]
    names = spec_names(folder)
    close = difflib.get_close_matches(stem, names, n=count, cutoff=0.6)
    if len(stem) >= 3:
        close += [name for name in names if stem.lower() in name.lower() and name not in close]
    return close[:count]


def argument_for(name: str, folder: Path = BUNDLED_SPECS) -> str:
    """What to type to use the bundled spec ``name`` (a stem or ``specs/NAME.yaml``): its name,
    which every SPEC argument takes wherever lstmgraph is installed (for `reproduce --list`)."""
    found = bundled_spec(name, folder)
    if found is None:
        raise ValueError(f"{name!r} is not a bundled spec (bundled: {', '.join(spec_names(folder))})")
    return found.stem
