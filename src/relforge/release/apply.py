"""Execute a plan: create its objects, then push every ref in one atomic, leased push.

Until the push nothing is visible anywhere (new commits and tags are unreferenced objects); the
push either sets every ref or none, and each ref is leased on the value the plan was made from,
so a remote that moved in between is refused (exit 5) instead of overwritten.
"""

from __future__ import annotations

from typing_extensions import assert_never

from relforge.git import Git
from relforge.release.releaseplan import NewCommit, NewTag, ReleasePlan, SetRef


def apply_plan(git: Git, plan: ReleasePlan) -> dict[str, str]:
    """Apply `plan`; returns ref → the object id it now holds on the remote."""
    made: dict[NewCommit | NewTag, str] = {}
    for action in plan.actions:
        match action:
            case NewCommit():
                files = {c.path: c.new for c in action.changes}
                made[action] = git.commit_files(action.parent, files, action.message)
            case NewTag():
                made[action] = git.make_tag(action.name, action.commit, action.message)
            case SetRef():
                pass
            case _:
                assert_never(action)
    results = {ref.ref: ref.new if isinstance(ref.new, str) else made[ref.new] for ref in plan.refs}
    if not results:
        return results
    git.push(
        plan.remote,
        [f"{sha}:{ref}" for ref, sha in results.items()],
        leases={ref.ref: ref.old for ref in plan.refs},
    )
    _mirror_locally(git, plan, results)
    return results


def _mirror_locally(git: Git, plan: ReleasePlan, results: dict[str, str]) -> None:
    """Make the pushed refs visible in the clone: new tags, and remote-tracking branches."""
    for ref, sha in results.items():
        if ref.startswith("refs/tags/") and git.commit_of(ref) is None:
            git.run("update-ref", ref, sha, "")
    branches = [ref for ref in results if ref.startswith("refs/heads/")]
    if branches:
        git.fetch(plan.remote, *branches)
