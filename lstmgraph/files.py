"""File writing shared by every stage that produces output; where the bundled specs are."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _bundled_specs() -> Path:
    """The repository's top-level specs/ folder, which a wheel carries as package data in
    lstmgraph/specs (pyproject.toml): that folder where it exists, else the checkout's."""
    package = Path(__file__).resolve().parent
    installed = package / "specs"
    return installed if installed.is_dir() else package.parent / "specs"


#: The folder of the bundled specs, in a checkout (also an editable install) or an installed wheel.
BUNDLED_SPECS = _bundled_specs()


def write_atomically(path: Path, content: bytes) -> None:
    """Write through a temporary file in the same folder and rename it into place, so a reader
    (or a run killed mid-write) never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(content)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp makes 0600; give the usual permissions
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
