"""The Cell: one artifact to build, the unit every later stage (workflows, builds, validation,
promotion) works on.  `Cell.to_json()` is the contract shape of each of the `cells` that
`matrix list --format json` prints.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from relforge.matrix.schema import AcceleratorKind, ChannelName, OperatingSystem, Status

# "archive": a native archive (libtorch-style zip); matrix selectors may still say `libtorch`,
# PyTorch's word for it (relforge.matrix.selector reads it as "archive")
PackageType = Literal["wheel", "archive"]


@dataclass(frozen=True, kw_only=True)
class Cell:
    id: str
    release: str
    package_type: PackageType
    platform: str
    os: OperatingSystem
    arch: str
    python: str | None
    python_tag: str | None
    abi_tag: str | None
    free_threaded: bool
    accelerator: AcceleratorKind
    accelerator_version: str | None
    accelerator_full_version: str | None
    variant: str
    local_version: str
    status: Status
    platform_tag: str | None
    cxx11_abi: bool
    image: str | None
    extra_install_requires: tuple[str, ...]
    bundles_libraries: bool
    upload_subfolder: str
    pypi_default: bool
    cudnn_version: str | None
    nccl_version: str | None
    cuda_arch_list: tuple[str, ...]
    nvcc_flags: tuple[str, ...]
    libtorch_variant: str | None
    libtorch_config: str | None
    build_runner: str | None
    test_runner: str | None
    extra_of: str | None = field(
        default=None, metadata={"doc": "id of the cell an include rule copied"}
    )
    off_root_index: bool = field(
        default=False,
        metadata={"omit_empty": True, "doc": "its folder is left off the channel-root pages"},
    )
    env: Mapping[str, str] = field(default_factory=dict)
    channel: ChannelName | None = None
    version: str | None = None
    upload_prefix: str | None = None
    index_url: str | None = None
    # Dependency axes (relforge.matrix.axes); left out of to_json() when the release has none,
    # so the JSON of matrices without axes stays as it was.
    axes: Mapping[str, str] = field(
        default_factory=dict,
        metadata={"omit_empty": True, "axis": True, "doc": "axis name → value"},
    )
    axis_install: Mapping[str, tuple[str, ...]] = field(
        default_factory=dict,
        metadata={
            "omit_empty": True,
            "axis": True,
            "doc": "axis → requirements the build installs",
        },
    )
    axis_index: Mapping[str, str] = field(
        default_factory=dict,
        metadata={
            "omit_empty": True,
            "axis": True,
            "doc": "axis → index they come from ('' = pip's own)",
        },
    )
    axis_requires: tuple[str, ...] = field(
        default=(), metadata={"omit_empty": True, "axis": True, "doc": "Requires-Dist the axes add"}
    )
    # abi3 (limited API); left out of to_json() for cells of one Python.
    limited_api: str = field(
        default="",
        metadata={"omit_empty": True, "doc": "abi3 floor X.Y: the wheel is cpXY-abi3"},
    )
    serves_python: tuple[str, ...] = field(
        default=(),
        metadata={
            "omit_empty": True,
            "doc": "the Pythons an abi3 wheel serves (`python` is the one it is built with)",
        },
    )

    @property
    def pythons(self) -> tuple[str, ...]:
        """Every Python the cell's wheel installs on: its own, or all an abi3 wheel serves."""
        if self.serves_python:
            return self.serves_python
        return (self.python,) if self.python else ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("omit_empty") and not value:
                continue
            if isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, Mapping):
                value = {k: list(v) if isinstance(v, tuple) else v for k, v in value.items()}
            out[f.name] = value
        return out

    def replace(self, **changes: Any) -> Cell:
        return dataclasses.replace(self, **changes)


CELL_FIELDS: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(Cell) if not f.metadata.get("omit_empty")
)
"""The keys of every cell's JSON; a release with dependency axes adds AXIS_FIELDS."""
AXIS_FIELDS: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(Cell) if f.metadata.get("axis")
)
ALL_FIELDS: frozenset[str] = frozenset(f.name for f in dataclasses.fields(Cell))
"""Every key a cell's JSON can have (the optional ones only when set)."""
