"""The release tracker: the open issue labelled `release tracker` whose title names the release
(`[v2.9.0] Release Tracker`), and the comment that records each cherry-pick on it.

The version is parsed out of the title with `packaging` and compared as numbers, so the tracker
of 2.1 is never mistaken for the one of 2.14.
"""

from __future__ import annotations

from collections.abc import Iterable

from packaging.version import InvalidVersion, Version

from relforge.bot.grammar import Category, IssueLink, ReleaseBranch
from relforge.forges.github import Comment, GitHubClient, Issue

TRACKER_LABEL = "release tracker"
_PUNCTUATION = str.maketrans(dict.fromkeys("[](){}<>,;:", " "))


def title_version(title: str) -> Version | None:
    """The first version X.Y or X.Y.Z named in a title (`[v2.9.0] Release Tracker` → 2.9.0)."""
    for word in title.translate(_PUNCTUATION).split():
        text = word.lower()
        for prefix in ("v.", "v"):
            if text.startswith(prefix):
                text = text[len(prefix) :]
                break
        if not text[:1].isdigit():
            continue
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if len(version.release) in (2, 3):
            return version
    return None


def pick_tracker(issues: Iterable[Issue], onto: ReleaseBranch, label: str) -> Issue | None:
    """The open tracker issue of release X.Y; with several (2.9.0 and 2.9.1), the newest."""
    found: list[tuple[Version, int, Issue]] = []
    for issue in issues:
        if issue.state != "open" or issue.is_pull_request or label not in issue.labels:
            continue
        version = title_version(issue.title)
        if version is not None and version.release[:2] == onto.version.release[:2]:
            found.append((version, -issue.number, issue))
    return max(found, key=lambda item: item[:2])[2] if found else None


def find_tracker(gh: GitHubClient, onto: ReleaseBranch, label: str = TRACKER_LABEL) -> Issue | None:
    return pick_tracker(gh.issues(state="open", labels=label), onto, label)


def tracker_comment(
    *, source_url: str, pick_url: str, category: Category, fixes: IssueLink | None
) -> str:
    """The tracker entry of one cherry-pick, in the release team's format."""
    criteria = category.label if fixes is None else f"{category.label} - {fixes.url}"
    return (
        "Link to landed trunk PR (if applicable):\n"
        f"* {source_url}\n"
        "\n"
        "Link to release branch PR:\n"
        f"* {pick_url}\n"
        "\n"
        "Criteria Category:\n"
        f"{criteria}"
    )


def recorded(gh: GitHubClient, tracker: Issue, pick_url: str) -> Comment | None:
    """The tracker comment that already records this cherry-pick PR, if any."""
    line = f"\n* {pick_url}\n"
    for comment in gh.comments(tracker.number):
        if line in comment.body:
            return comment
    return None
