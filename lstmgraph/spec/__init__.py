"""Stage 1, the spec language: read a YAML/JSON file, validate it against the pydantic schema."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..arrays import plain
from ..bundled import find_spec
from ..errors import SpecSource
from ..files import safe_folder_name
from .loader import read_spec_file
from .models import NetworkSpec
from .overrides import Overrides
from .validation import validate_spec_data

__all__ = ["SpecDocument", "NetworkSpec", "Overrides", "document_of", "json_schema", "load_spec", "spec_from_data"]


@dataclass(frozen=True)
class SpecDocument:
    """A validated spec together with where each of its fields came from."""

    spec: NetworkSpec
    source: SpecSource
    data: Any

    @property
    def name(self) -> str:
        """The spec's ``name``, else its file's stem made a valid name (`safe_folder_name`:
        ``my net.yaml`` is ``my_net``), else ``network`` (data built in Python)."""
        if self.spec.name:
            return self.spec.name
        stem = Path(self.source.filename).stem
        return safe_folder_name(stem) if not stem.startswith("<") else "network"


def load_spec(path: str | Path, overrides: Overrides | None = None, data_files: bool = True) -> SpecDocument:
    """Read and validate a spec file, or a bundled spec's name (``"gers2000_cerg"``:
    `lstmgraph.bundled.find_spec`), with ``overrides`` applied to its data first; raise
    `SpecError` with located problems if it is wrong; `TypeError` for anything but a path or name
    (``data_files``: `validate_spec_data`)."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"load_spec and compile_spec take a spec file's path or a bundled spec's name, not a "
                        f"{type(path).__name__}" + (": for data built in Python, spec_from_data(data) validates it "
                                                    "and compile_plan(spec_from_data(data)) compiles it"
                                                    if isinstance(path, dict) else ""))
    if overrides is not None and not isinstance(overrides, Overrides):
        raise TypeError(f"overrides are an Overrides(steps=..., seed=...), not a {type(overrides).__name__}")
    data, source = read_spec_file(find_spec(path))
    if overrides is not None:
        data, source = overrides.apply(data), source.with_given(overrides.given(data))
    return document_of(data, source, data_files)


def document_of(data: Any, source: SpecSource, data_files: bool = True) -> SpecDocument:
    """Validate spec data read with its positions (``source``, for located errors; ``data_files``:
    `validate_spec_data`)."""
    return SpecDocument(validate_spec_data(data, source, data_files), source, data)


def spec_from_data(data: Any, filename: str = "<dict>") -> SpecDocument:
    """Validate spec data built in Python (no line numbers in its errors); numpy's numbers in it
    are taken as Python's (`arrays.plain`)."""
    return document_of(plain(data), SpecSource(filename))


def json_schema() -> dict[str, Any]:
    """The spec's JSON Schema (draft 2020-12), from the pydantic models, for editors' completion
    and validation (`lstmgraph schema`)."""
    document = NetworkSpec.model_json_schema(by_alias=True)
    document["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    document["title"] = "lstmgraph network spec"
    return document
