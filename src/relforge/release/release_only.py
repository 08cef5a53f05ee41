"""The release-only changes of a branch cut, computed in memory from the cut point's files.

One seam, `release_only_changes`: given the files of the tree (workflows, actions, the matrix)
it returns the files to change on release/X.Y —
  (a) reusable workflow and action refs of the project's own repository pinned from the trunk
      to release/X.Y: generated workflows are re-rendered by the workflows renderer with that
      ref (relforge.release.rerender), hand-written ones are edited in place;
  (b) the matrix's `channels.default` switched to `test` (skipped, with a note, when the tree
      holds no relforge matrix).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from relforge.release.channel_switch import switch_default_channel
from relforge.release.rerender import is_generated, rerender
from relforge.release.versions import Line
from relforge.release.workflow_pins import pin_uses

WORKFLOW_DIRS = (".github/workflows", ".github/actions")


def is_workflow_path(path: str) -> bool:
    return path.startswith(tuple(f"{d}/" for d in WORKFLOW_DIRS)) and path.endswith(
        (".yml", ".yaml")
    )


@dataclass(frozen=True, kw_only=True)
class ReleaseOnlyInputs:
    line: Line
    trunk: str  # the branch reusable refs follow before the cut (main)
    matrix_path: str | None  # None: no relforge matrix in the tree, no channel to switch
    repos: frozenset[str] | None  # OWNER/NAME (lower case) whose `uses: …@trunk` are ours
    source: str  # where the files come from, for messages (e.g. "origin/main")
    # other files of the cut point's tree under a prefix (custom workflow templates)
    read_tree: Callable[[str], Mapping[str, str]] = field(default=lambda prefix: {})


@dataclass(frozen=True, kw_only=True)
class ReleaseOnlyResult:
    files: dict[str, str]  # path → new text, changed files only
    notes: tuple[str, ...]


def release_only_changes(
    tree_files: Mapping[str, str], inputs: ReleaseOnlyInputs
) -> ReleaseOnlyResult:
    """The files release/X.Y gets in its "[RELEASE-ONLY CHANGES]" commit."""
    ref = inputs.line.branch
    changed: dict[str, str] = {}
    notes: list[str] = []
    files = dict(tree_files)

    matrix = inputs.matrix_path
    if matrix is None:
        notes.append(
            f"channel switch skipped: {inputs.source} has no relforge matrix "
            "(looked for matrix.yaml and matrix/*.yaml; pass --matrix PATH to name one)"
        )
    else:
        switched = switch_default_channel(files[matrix], f"{inputs.source}:{matrix}", "test")
        if switched != files[matrix]:
            changed[matrix] = files[matrix] = switched
        else:
            notes.append(f"{matrix} already sets channels.default: test")

    workflows = sorted(p for p in files if is_workflow_path(p))
    generated = tuple(p for p in workflows if is_generated(files[p]))
    rendered = rerender(files, generated, ref, inputs.read_tree) if generated else {}
    changed.update({p: t for p, t in rendered.items() if files.get(p) != t})
    for path in workflows:
        if path in generated:
            continue
        pinned = pin_uses(
            files[path],
            f"{inputs.source}:{path}",
            trunk=inputs.trunk,
            ref=ref,
            repos=inputs.repos,
        )
        if pinned.edits:
            changed[path] = pinned.text
        notes += [
            f"{path}: `uses: {u}` follows {inputs.trunk} but is not the project's own "
            f"repository (no {ref} there); left alone"
            for u in pinned.third_party
        ]
    return ReleaseOnlyResult(files=changed, notes=tuple(notes))
