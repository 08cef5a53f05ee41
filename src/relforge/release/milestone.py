"""A release milestone: the issues and PRs that must be on the release branch.

From a file (`--milestone-file`, YAML or JSON) or from GitHub (`--milestone N`).  The file is a
list of items, or a mapping with an optional `title` and the list under `items`; an item is an
issue/PR number (`1234` or `"#1234"`) or its GitHub URL (`…/issues/1234`, `…/pull/1234`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from relforge.errors import ConfigError, Span
from relforge.forges.github import GitHubClient, GitHubError
from relforge.matrix.source import Map, Node, Scalar, Seq, parse_yaml

ItemKind = Literal["issue", "pull", "unknown"]


@dataclass(frozen=True, kw_only=True)
class MilestoneItem:
    number: int
    kind: ItemKind = "unknown"
    url: str = ""
    title: str = ""


@dataclass(frozen=True, kw_only=True)
class ReleaseMilestone:
    title: str
    source: str  # the file, or the milestone's GitHub URL
    items: tuple[MilestoneItem, ...]

    @property
    def numbers(self) -> frozenset[int]:
        return frozenset(i.number for i in self.items)

    def item(self, number: int) -> MilestoneItem:
        return next(i for i in self.items if i.number == number)


# `#123` (not part of a word such as `C#1`) and GitHub issue/PR URLs in commit messages.
_HASH_REF = re.compile(r"(?<![\w/#])#(\d+)\b")
_URL_REF = re.compile(r"https?://[^/\s]+/([\w.-]+/[\w.-]+)/(?:issues|pull)/(\d+)")


def references(message: str, repo: str | None) -> frozenset[int]:
    """Issue and PR numbers a commit message mentions (`#N`, or URLs of `repo` when known)."""
    found = {int(n) for n in _HASH_REF.findall(message)}
    for owner_name, number in _URL_REF.findall(message):
        if repo is None or owner_name.lower() == repo.lower():
            found.add(int(number))
    return frozenset(found)


def load_milestone_file(path: str, repo: str | None) -> ReleaseMilestone:
    """Read a milestone file; every problem names the file and line (exit 2)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read: {exc}", where=Span(path), key="--milestone-file") from None
    root = parse_yaml(text, path)
    title = Path(path).stem
    items_node: Node = root
    if isinstance(root, Map):
        unknown = set(root.entries) - {"title", "items"}
        if unknown:
            key = sorted(unknown)[0]
            raise ConfigError(
                f"unknown key {key!r}",
                where=root.entries[key].key_span,
                hint="a milestone file has `title` and `items`",
            )
        title_node = root.get("title")
        if isinstance(title_node, Scalar) and not title_node.is_null:
            title = title_node.text
        found = root.get("items")
        if found is None:
            raise ConfigError("missing key 'items'", where=root.span)
        items_node = found
    if not isinstance(items_node, Seq):
        raise ConfigError(
            "expected a list of issue/PR numbers or URLs",
            where=items_node.span,
            hint="e.g. items: [1234, '#1240', https://github.com/org/proj/pull/1250]",
        )
    items: dict[int, MilestoneItem] = {}
    for node in items_node.items:
        item = _item(node, repo)
        items.setdefault(item.number, item)
    return ReleaseMilestone(title=title, source=path, items=tuple(items.values()))


def _item(node: Node, repo: str | None) -> MilestoneItem:
    bad = ConfigError(
        f"{_text(node)!r} is not an issue/PR number or URL",
        where=node.span,
        hint="write 1234, '#1234' or https://github.com/OWNER/NAME/issues/1234",
    )
    if not isinstance(node, Scalar) or node.is_null or isinstance(node.value, bool | float):
        raise bad
    if isinstance(node.value, int):
        if node.value < 1:
            raise bad
        return MilestoneItem(number=node.value)
    text = node.text.strip()
    if text.startswith("#"):
        if not _is_number(text[1:]):
            raise bad
        return MilestoneItem(number=int(text[1:]))
    try:
        parts = urlsplit(text)
    except ValueError:  # e.g. a bracketed host that is not an IPv6 address
        raise bad from None
    pieces = parts.path.strip("/").split("/")
    if parts.scheme not in ("http", "https") or len(pieces) != 4 or not _is_number(pieces[3]):
        raise bad
    owner_name, kind = "/".join(pieces[:2]), pieces[2]
    if kind not in ("issues", "pull"):
        raise bad
    if repo is not None and owner_name.lower() != repo.lower():
        raise ConfigError(
            f"{text} belongs to {owner_name}, not to {repo}",
            where=node.span,
            hint="list items of the project's own repository",
        )
    return MilestoneItem(
        number=int(pieces[3]), kind="issue" if kind == "issues" else "pull", url=text
    )


def _is_number(text: str) -> bool:
    """An issue/PR number: ASCII digits, not zero (`isdigit` alone takes `²`)."""
    return text.isascii() and text.isdigit() and int(text) > 0


def _text(node: Node) -> str:
    return node.text if isinstance(node, Scalar) else type(node).__name__.lower()


def fetch_milestone(client: GitHubClient, number: int) -> ReleaseMilestone:
    """A GitHub milestone's issues and PRs, open and closed."""
    try:
        info = client.milestone(number)
    except GitHubError as exc:
        if exc.status == 404:
            raise ConfigError(
                f"{client.repo} has no milestone {number}",
                key="--milestone",
                hint="the number is in the milestone's URL (…/milestone/N)",
            ) from None
        raise
    items = tuple(
        MilestoneItem(
            number=i.number,
            kind="pull" if i.is_pull_request else "issue",
            url=i.html_url,
            title=i.title,
        )
        for i in client.issues(state="all", milestone=number)
    )
    return ReleaseMilestone(
        title=info.title, source=info.html_url or f"milestone {number}", items=items
    )
