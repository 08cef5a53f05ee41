"""Point the project's own reusable workflows and actions at the release branch.

`uses: OWNER/REPO/.github/workflows/build.yml@main` becomes `…@release/X.Y` when OWNER/REPO is
the project's own repository (the release cut makes that branch there, nowhere else).  Local
references (`./…`) need no change, `docker://` images and actions pinned to a commit or a tag are
never touched, and any other repository's action that follows a branch — a third party's, or
another repository of the same owner — is reported, not rewritten (it has no release/X.Y branch).
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


def pin_uses(text: str, file: str, *, trunk: str, ref: str, repos: frozenset[str] | None) -> Pinned:
    """Rewrite `uses: …@trunk` of `repos` (lower-case OWNER/NAME) to `…@ref`.  `repos` None
    means the project's GitHub repository is unknown: any candidate is then an error asking for
    --github-repo."""
    root = parse_yaml(text, file)
    edits: list[Edit] = []
    others: list[str] = []
    for node in _uses(root):
        value = str(node.value)
        target, at, used_ref = value.rpartition("@")
        if not at or used_ref != trunk or target.startswith(("./", "docker://")):
            continue
        if repos is None:
            raise ConfigError(
                f"`uses: {value}` follows {trunk}, but relforge does not know which GitHub "
                "repository is the project's own",
                where=Span(file, node.span.line, node.span.column),
                key="--github-repo",
                hint="pass --github-repo OWNER/NAME (the remote is not a GitHub URL)",
            )
        if "/".join(target.split("/")[:2]).lower() in repos:
            edits.append(scalar_edit(node, f"{target}@{ref}"))
        else:
            others.append(value)
    new = apply_edits(text, edits, file) if edits else text
    return Pinned(new, len(edits), tuple(others))
