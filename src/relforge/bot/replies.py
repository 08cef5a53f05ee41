"""What the bot says: replies on the source PR (results, refusals, usage) and the lines the
local command prints.  Every text from a user or a repository is shown inside code spans or
blocks whose fences it cannot close, and every reply carries a marker so the bot never answers
itself and never posts the same reply twice."""

from __future__ import annotations

import string

from relforge.bot.flow import Action, Done, Plan, Target
from relforge.bot.grammar import usage
from relforge.errors import RelforgeError

MARKER = "<!-- relforge-bot"
_LOGIN = frozenset(string.ascii_letters + string.digits + "-")


def marker(key: str) -> str:
    return f"{MARKER} {key} -->"


def code(text: str) -> str:
    """An inline code span that `text` cannot break out of."""
    fence = "`" * (_longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def block(text: str) -> str:
    """A fenced code block that `text` cannot close."""
    fence = "`" * max(3, _longest_backtick_run(text) + 1)
    return f"{fence}text\n{text}\n{fence}"


def mention(user: str | None) -> str:
    return f"@{user} " if user and set(user) <= _LOGIN else ""


def usage_reply(bot: str, requester: str | None, key: str) -> str:
    return (
        f"{mention(requester)}usage of the cherry-pick bot:\n\n{block(usage(bot))}\n\n{marker(key)}"
    )


def error_reply(
    error: RelforgeError, bot: str, requester: str | None, key: str, *, with_usage: bool
) -> str:
    text = f"{mention(requester)}I could not run that command:\n\n{block(error.render())}"
    if with_usage:
        text += f"\n\n{block(usage(bot))}"
    return f"{text}\n\n{marker(key)}"


def permission_reply(requester: str, repo: str, permission: str, key: str) -> str:
    return (
        f"{mention(requester)}cherry-picks onto release branches need write permission on "
        f"{code(repo)}; you have {code(permission)}. Ask a maintainer to run the command.\n\n"
        f"{marker(key)}"
    )


def result_reply(plan: Plan, done: list[Done] | None, key: str) -> str:
    """The answer on the source PR; `done` is None for a dry run."""
    header = (
        f"{mention(plan.requester)}cherry-pick of #{plan.source.number} ({plan.command.summary()})"
    )
    if done is None:
        header += " — dry run, nothing was pushed or posted"
    return "\n".join([header + ":", "", *target_lines(plan, done), "", marker(key)])


def target_lines(plan: Plan, done: list[Done] | None) -> list[str]:
    """One line per release branch: what happened (or, in a dry run, what would happen)."""
    results = {d.target.onto: d for d in done or []}
    return [
        f"- {t.onto.name}: {_describe(plan, t, results.get(t.onto), dry=done is None)}"
        for t in plan.targets
    ]


def _describe(plan: Plan, t: Target, done: Done | None, *, dry: bool) -> str:
    match t.action:
        case Action.ALREADY:
            if t.found == plan.commit:
                where = f"{t.found[:12]} itself is on the branch"
            elif t.found:
                where = f"commit {t.found[:12]}, found by {t.how}"
            else:
                where = "picking it would change nothing"
            return f"already on {t.onto.name} ({where}); no pull request opened"
        case Action.CONFLICT if t.head is None:
            return (
                f"conflicts in {', '.join(code(f) for f in t.conflicts)}; the cherry-pick was "
                f"aborted and nothing was pushed. Pick it by hand on {t.onto.name}: "
                f"{code(f'git cherry-pick -x {plan.commit}')}, resolve, and open a pull request"
            )
        case Action.OPEN | Action.REUSE | Action.CONFLICT:
            return _publish_text(t, done, dry=dry)


def _publish_text(t: Target, done: Done | None, *, dry: bool) -> str:
    conflict = t.action is Action.CONFLICT
    kind = "draft pull request" if conflict else "pull request"
    if conflict:
        text = f"conflicts in {', '.join(code(f) for f in t.conflicts)}, committed with markers; "
    else:
        text = ""
    if dry or done is None or done.pull is None:
        verb = "would reuse" if t.action is Action.REUSE else "would push"
        text += f"{verb} {code(t.branch)} ({(t.head or '')[:12]}) and "
        text += f"reuse #{t.pull.number}" if t.pull else f"open a {kind}"
        if t.tracker is not None:
            text += f"; would record it on the release tracker #{t.tracker.number}"
        return text + _no_tracker(t)
    pull = done.pull
    verb = "opened" if done.pull_created else "reused"
    text += f"{verb} {kind} #{pull.number} ({pull.html_url}) from {code(t.branch)}"
    if done.tracker_comment is not None:
        verb = "recorded" if done.tracker_created else "already recorded"
        text += f"; {verb} on the release tracker ({done.tracker_comment.html_url})"
    return text + _no_tracker(t)


def _no_tracker(t: Target) -> str:
    if t.tracker is not None:
        return ""
    return (
        f"; no open issue labelled release tracker names {t.onto.version}, so nothing was "
        "recorded there"
    )


def _longest_backtick_run(text: str) -> int:
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return longest
