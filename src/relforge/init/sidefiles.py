"""The project files `relforge init` adds beside the matrix: the version file the matrix names
(when the project has none) and `.gitignore` entries for what relforge writes (`.relforge/`,
`dist/`).  Existing files are never replaced: a version file is only created, `.gitignore`
only gets the lines it lacks."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from relforge.atomic import replacing
from relforge.envfaults import environment_fault
from relforge.errors import Span, UsageError

# What relforge writes into a project: the local store, caches, logs; built wheels.
IGNORED = (".relforge/", "dist/")


@dataclass(frozen=True, kw_only=True)
class SideFile:
    path: Path
    text: str  # the whole new content
    note: str  # one line for the output: what and why


def version_file(root: Path, name: str, version: str, source: str) -> SideFile | None:
    """`root/name` holding `version`, when the project has no such file."""
    path = root / name
    if path.exists():
        return None
    return SideFile(
        path=path,
        text=f"{version}\n",
        note=f"wrote {path.as_posix()}: {version} ({source}); `relforge build` and "
        f"`relforge release` read X.Y.Z from it",
    )


def gitignore(root: Path) -> SideFile | None:
    """`root/.gitignore` with IGNORED added (None when it already ignores them)."""
    path = root / ".gitignore"
    try:
        old = path.read_text(encoding="utf-8") if path.is_file() else ""
    except (OSError, UnicodeDecodeError):
        return None  # not ours to repair; the matrix is written all the same
    have = {line.strip().strip("/") for line in old.splitlines()}
    missing = [entry for entry in IGNORED if entry.strip("/") not in have]
    if not missing:
        return None
    head = old if not old or old.endswith("\n") else old + "\n"
    text = head + "# written by relforge (local store, caches, logs; built wheels)\n"
    text += "".join(f"{entry}\n" for entry in missing)
    return SideFile(
        path=path,
        text=text,
        note=f"{'added to' if old else 'wrote'} {path.as_posix()}: {', '.join(missing)}",
    )


def write_side_file(side: SideFile) -> None:
    """Write one side file whole (a temporary file, then a rename)."""
    try:
        with replacing(side.path) as tmp:
            tmp.write_text(side.text, encoding="utf-8")
    except (NotADirectoryError, IsADirectoryError) as exc:
        raise UsageError(
            f"cannot write it: {exc.strerror or exc}", where=Span(str(side.path))
        ) from None
    except OSError as exc:
        raise environment_fault(exc, f"writing {side.path.as_posix()}") from None
