"""File writing shared by every stage that produces output."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# The specs shipped beside the package (the repository's specs/ folder).
BUNDLED_SPECS = Path(__file__).resolve().parents[1] / "specs"


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
