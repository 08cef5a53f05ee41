"""The release tracker: the open issue labelled `release tracker` whose title names the release
(`[v2.9.0] Release Tracker`), and the comment that records each cherry-pick on it.

The version is parsed out of the title with `packaging` and compared as numbers, so the tracker
of 2.1 is never mistaken for the one of 2.14.
"""

from __future__ import annotations

from collections.abc import Iterable

from packaging.version import InvalidVersion, Version

from relforge.bot.grammar import Category, IssueLink, ReleaseBranch
from relforge.forges.github import Comment, GitHubClient, Issue, Milestone

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


def tracker_comment(
    *,
    source_url: str,
    pick_url: str,
    category: Category,
    fixes: IssueLink | None,
    criteria: str | None = None,
) -> str:
    """The tracker entry of one cherry-pick, in the release team's format."""
    if criteria is None:
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
    """The tracker comment that already records this cherry-pick PR, if any: written by an
    app (the bot itself) or by someone with write permission.  Anyone may comment on a public
    tracker, and an entry naming pull requests before they exist must not keep a pick off it."""
    line = _entry_line(pick_url)
    vouched: dict[str, bool] = {}
    for comment in gh.comments(tracker.number):
        if line not in comment.body:
            continue
        if comment.by_bot:
            return comment
        if comment.user is None:
            continue
        if comment.user not in vouched:
            vouched[comment.user] = gh.permission(comment.user).can_write
        if vouched[comment.user]:
            return comment
    return None


def record_on_tracker(
    gh: GitHubClient, tracker: Issue, pick_url: str, text: str
) -> tuple[Comment, bool]:
    """The tracker entry of a pick PR, posted unless one is there (also when a retried POST
    had been saved); the comment and whether it was posted now."""
    found = recorded(gh, tracker, pick_url)
    if found is not None:
        return found, False
    return gh.comment(tracker.number, text, marker=_entry_line(pick_url)), True


def _entry_line(pick_url: str) -> str:
    return f"\n* {pick_url}\n"


def pick_milestone(milestones: Iterable[Milestone], onto: ReleaseBranch) -> Milestone | None:
    """The open milestone of release X.Y (`2.9.1`, `v2.9.0`, `2.9`); with several, the
    lowest version (the next release to ship)."""
    found: list[tuple[Version, int, Milestone]] = []
    for milestone in milestones:
        version = title_version(milestone.title)
        if (
            milestone.state in ("", "open")
            and version is not None
            and version.release[:2] == onto.version.release[:2]
        ):
            found.append((version, milestone.number, milestone))
    return min(found, key=lambda item: item[:2])[2] if found else None
