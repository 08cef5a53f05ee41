"""abi3 (limited-API) cells: a variant with a floor (`abi3: "3.9"`, or the release's) builds one
`cp39-abi3` wheel per platform for every Python of the release from the floor on (free-threaded
ones keep wheels of their own), built with the oldest of them; older Pythons keep theirs too.
"""

from __future__ import annotations

from collections.abc import Sequence

from relforge.errors import ConfigError
from relforge.matrix.cell import Cell
from relforge.matrix.schema import Release, Variant
from relforge.matrix.values import LimitedApi, PythonVersion


def abi3_floor(release: Release, variant: Variant) -> LimitedApi | None:
    """The variant's limited-API floor (its own `abi3`, else the release's)."""
    return variant.abi3 if variant.abi3 is not None else release.abi3


def abi3_pythons(
    release: Release, variant: Variant, python: PythonVersion
) -> tuple[PythonVersion, ...]:
    """The Pythons one abi3 wheel of the variant serves when `python` is one of them (from
    the floor on, not free-threaded), oldest first; empty when `python` gets its own wheel."""
    floor = abi3_floor(release, variant)
    if floor is None or python.free_threaded or python.version < floor.version:
        return ()
    served = (p for p in release.python if not p.free_threaded and p.version >= floor.version)
    return tuple(sorted(served))


def as_abi3(
    cell: Cell,
    platform: str,
    variant: str,
    floor: LimitedApi | None,
    served: Sequence[PythonVersion],
) -> Cell:
    """The cell of one `cpXY-abi3` wheel, built with the oldest Python it serves."""
    assert floor is not None
    cell_id = f"wheel-{platform}-{floor.python_tag}-abi3-{variant}"
    env = {**cell.env, "RELFORGE_CELL_ID": cell_id, "RELFORGE_LIMITED_API": str(floor)}
    return cell.replace(
        id=cell_id,
        python_tag=floor.python_tag,
        abi_tag="abi3",
        limited_api=str(floor),
        serves_python=tuple(str(p) for p in served),
        env=env,
    )


def check_abi3(release: Release) -> None:
    """A floor above every Python of the release would make no abi3 wheel at all."""
    wheels = [p for p in release.python if not p.free_threaded]
    owners: list[tuple[Release | Variant, LimitedApi | None]] = [(release, release.abi3)]
    owners += [(v, v.abi3) for v in release.accelerators.values()]
    for owner, floor in owners:
        if floor is not None and wheels and all(p.version < floor.version for p in wheels):
            raise ConfigError(
                f"abi3 floor {floor} is above every Python of the release "
                f"({', '.join(str(p) for p in wheels)})",
                where=owner.at("abi3"),
                key=f"releases.{release.name}",
                hint="lower the floor, or add the Pythons it should serve to `python`",
            )
