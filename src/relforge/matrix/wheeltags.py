"""The tags a cell's wheel carries, and — when a wheel carries others — what differs and how to
fix it.  One rule for both stages: `relforge build` fails the cell (status failed) and
validation's RF-V012 fails the file with the same words."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from packaging.tags import Tag, parse_tag

from relforge.matrix.cell import Cell

ABI3_DOCS = "docs/guide/matrix.md#abi3-limited-api-wheels"


def cell_tags(cell: Cell) -> frozenset[str]:
    """`{python}-{abi}-{platform}` for each of the cell's platform tags."""
    platforms = (cell.platform_tag or "").split(".")
    return frozenset(f"{cell.python_tag}-{cell.abi_tag}-{p}" for p in platforms)


@dataclass(frozen=True, kw_only=True)
class TagMismatch:
    """A wheel whose tags are not its cell's: the wheel's tags, the cell's, and the fix."""

    got: str  # cp312-abi3-manylinux_2_28_x86_64
    want: str  # cp312-cp312-manylinux_2_28_x86_64
    fix: str

    @property
    def reason(self) -> str:
        """One sentence for a failed build: `the wheel is …; the cell builds …: <fix>`."""
        return f"the wheel is {self.got}; the cell builds {self.want}: {self.fix}"


def tag_mismatch(cell: Cell, tags: Iterable[str]) -> TagMismatch | None:
    """None when the wheel's tags (file-name tags, compressed sets allowed) are exactly the
    cell's; else what differs, with the fix for the first difference that explains it."""
    got = {t for text in tags for t in parse_tag(text)}
    want = {t for text in cell_tags(cell) for t in parse_tag(text)}
    if got == want:
        return None
    return TagMismatch(got=_shown(got), want=_shown(want), fix=_fix(cell, got, want))


def _shown(tags: set[Tag]) -> str:
    return ", ".join(sorted(str(t) for t in tags)) or "untagged"


def _dotted(interpreter: str) -> str:
    """`cp312` → `3.12`."""
    digits = interpreter[2:]
    return f"{digits[0]}.{digits[1:]}" if len(digits) > 1 else digits


def _fix(cell: Cell, got: set[Tag], want: set[Tag]) -> str:
    pairs = {(t.interpreter, t.abi) for t in got}
    fixes = []
    if pairs != {(t.interpreter, t.abi) for t in want}:
        fixes.append(_python_fix(cell, pairs))
    platforms = {t.platform for t in got}
    wanted = {t.platform for t in want}
    if platforms != wanted:
        fixes.append(_platform_fix(cell, platforms, wanted))
    return "; ".join(fixes)


def _python_fix(cell: Cell, pairs: set[tuple[str, str]]) -> str:
    rel = f"releases.{cell.release}"
    abi3 = sorted(i for i, a in pairs if a == "abi3")
    if abi3 and cell.abi_tag != "abi3":
        floor = _dotted(abi3[0])
        return (
            f'it is an abi3 wheel: declare `abi3: "{floor}"` on the variant {cell.variant} (or '
            f"on release {cell.release}) so that one cell builds it for every Python from {floor} "
            f"on ({ABI3_DOCS})"
        )
    if cell.abi_tag == "abi3":
        floor = cell.limited_api or _dotted(cell.python_tag or "")
        if abi3:
            return (
                f"the build's limited-API floor is {_dotted(abi3[0])}, the matrix's {floor}: make "
                f'them agree (`abi3: "{_dotted(abi3[0])}"` in {rel}, or the build\'s floor from '
                f"$RELFORGE_LIMITED_API) ({ABI3_DOCS})"
            )
        return (
            f"the cell builds a limited-API wheel (abi3, floor {floor}) and the build made a "
            "version-specific one: build with the limited API (setuptools py_limited_api, "
            'scikit-build-core wheel.py-api = "cp39", PyO3 abi3-py39; $RELFORGE_LIMITED_API holds '
            f"the floor), or drop `abi3:` from the matrix ({ABI3_DOCS})"
        )
    if any(a == "none" for _, a in pairs):
        return (
            "the build made a pure-Python wheel: the cell expects a compiled extension for "
            f"{cell.python_tag}; check that the build compiles it (the log shows what ran), or "
            "build a pure-Python project once, outside the matrix's cells"
        )
    threaded = any(a.endswith("t") for _, a in pairs)
    if threaded and not cell.free_threaded:
        return (
            f"the build ran on the free-threaded interpreter; the cell is Python {cell.python} "
            f"with the GIL: build it with python{cell.python}, not python{cell.python}t"
        )
    if cell.free_threaded and not threaded:
        return (
            f"the cell is free-threaded (Python {cell.python}): build it with the free-threaded "
            f"interpreter (python{cell.python})"
        )
    other = sorted(_dotted(i) for i, _ in pairs if i.startswith("cp"))
    ran = f"Python {', '.join(other)}" if other else "another interpreter"
    return (
        f"the build ran with {ran}; the cell is Python {cell.python}: build it with the cell's "
        "interpreter ($DESIRED_PYTHON; the builder image's /opt/python, or the host's)"
    )


def _platform_fix(cell: Cell, got: set[str], want: set[str]) -> str:
    wanted = ", ".join(sorted(want))
    key = f"releases.{cell.release}.platforms.{cell.platform}.platform_tag"
    if any(p.startswith("linux_") for p in got):
        return (
            f"the wheel was not repaired to {wanted} (auditwheel repair; see the log): build on "
            f"the cell's image (its glibc not newer than the tag's), or set {key} to a tag the "
            "build's libraries reach"
        )
    return (
        f"the build reached {', '.join(sorted(got))}, not {wanted}: build on the cell's image or "
        f"deployment target, or set {key} to the tag the build reaches"
    )
