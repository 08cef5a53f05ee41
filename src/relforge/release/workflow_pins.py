"""Point the project's own reusable workflows and actions at the release branch.

`uses: OWNER/REPO/.github/workflows/build.yml@main` becomes `…@release/X.Y` when OWNER is one of
the project's own GitHub owners.  Local references (`./…`) need no change, `docker://` images and
actions pinned to a commit or a tag are never touched, and a third-party action that follows a
branch is reported, not rewritten (its owner has no release/X.Y branch).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from relforge.errors import ConfigError, Span
from relforge.matrix.source import Map, Node, Scalar, Seq, parse_yaml
from relforge.release.yaml_edit import Edit, apply_edits, scalar_edit


@dataclass(frozen=True)
class Pinned:
    text: str
    edits: int
    third_party: tuple[str, ...]  # `uses:` values on the trunk ref that belong to others


def _uses(node: Node) -> Iterator[Scalar]:
    if isinstance(node, Map):
        for entry in node:
            if entry.key == "uses" and isinstance(entry.value, Scalar):
                yield entry.value
            else:
                yield from _uses(entry.value)
    elif isinstance(node, Seq):
        for item in node.items:
            yield from _uses(item)


def pin_uses(
    text: str, file: str, *, trunk: str, ref: str, owners: frozenset[str] | None
) -> Pinned:
    """Rewrite `uses: …@trunk` of `owners` to `…@ref`.  `owners` None means the project's GitHub
    owner is unknown: any candidate is then an error asking for --github-repo."""
    root = parse_yaml(text, file)
    edits: list[Edit] = []
    others: list[str] = []
    for node in _uses(root):
        value = str(node.value)
        target, at, used_ref = value.rpartition("@")
        if not at or used_ref != trunk or target.startswith(("./", "docker://")):
            continue
        if owners is None:
            raise ConfigError(
                f"`uses: {value}` follows {trunk}, but relforge does not know which GitHub "
                "owner is the project's own",
                where=Span(file, node.span.line, node.span.column),
                key="--github-repo",
                hint="pass --github-repo OWNER/NAME (the remote is not a GitHub URL)",
            )
        if target.split("/")[0].lower() in owners:
            edits.append(scalar_edit(node, f"{target}@{ref}"))
        else:
            others.append(value)
    new = apply_edits(text, edits, file) if edits else text
    return Pinned(new, len(edits), tuple(others))
