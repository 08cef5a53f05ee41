"""What the bot says: replies on the source PR (results, refusals, usage) and the lines the
local command prints.  Every text from a user or a repository is shown inside code spans or
blocks whose fences it cannot close, and every reply carries a marker so the bot never answers
itself and never posts the same reply twice.  The marker also says what the reply was (an
error, a result, help): a re-run that succeeds after an error is told, never swallowed as
"already posted"."""

from __future__ import annotations

import string

from relforge.bot.flow import (
    Action,
    Done,
    PickPlan,
    PickTarget,
    PlanKind,
    listed,
    picked_with,
    revert_command,
)
from relforge.bot.grammar import usage
from relforge.errors import RelforgeError

MARKER = "<!-- relforge-bot"
_LOGIN = frozenset(string.ascii_letters + string.digits + "-")
_LISTED = 5  # ignored command lines named in a reply; the rest are counted


ERROR, DONE, HELP = "error", "done", "help"


def key_prefix(key: str) -> str:
    """What every reply to request `key` carries, whatever its state."""
    return f"{MARKER} {key} state="


def marker(key: str, state: str = DONE) -> str:
    return f"{key_prefix(key)}{state} -->"


def state_of(body: str, key: str) -> str | None:
    """The state of a reply to request `key` (None: `body` is no such reply)."""
    start = body.find(key_prefix(key))
    if start < 0:
        return None
    rest = body[start + len(key_prefix(key)) :]
    return rest.split(" ", 1)[0]


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
        f"{mention(requester)}usage of the cherry-pick bot:\n\n{block(usage(bot))}\n\n"
        f"{marker(key, HELP)}"
    )


def error_reply(
    error: RelforgeError, bot: str, requester: str | None, key: str, *, with_usage: bool
) -> str:
    text = f"{mention(requester)}I could not run that command:\n\n{block(error.render())}"
    if with_usage:
        text += f"\n\n{block(usage(bot))}"
    return f"{text}\n\n{marker(key, ERROR)}"


def permission_reply(
    requester: str, repo: str, permission: str, key: str, *, label: str | None = None
) -> str:
    what = f"the label {code(label)} asks for a cherry-pick; " if label else ""
    return (
        f"{mention(requester)}{what}cherry-picks onto release branches need write permission on "
        f"{code(repo)}; you have {code(permission)}. Ask a maintainer to run the command.\n\n"
        f"{marker(key, ERROR)}"
    )


def ignored_note(ignored: list[tuple[int, str]]) -> str:
    """A note on the command lines of a comment after the first, which were not run."""
    if not ignored:
        return ""
    lines = ", ".join(f"line {n} ({code(text[:80])})" for n, text in ignored[:_LISTED])
    if len(ignored) > _LISTED:  # a reply GitHub accepts (65536 characters), whatever was sent
        lines += f" and {len(ignored) - _LISTED} more"
    return (
        f"\n\nNote: only the first command of a comment is run; ignored {lines}. "
        "Post each command in a comment of its own."
    )


def rerun_update(reply_url: str) -> str:
    """What an earlier error reply gets appended when a re-run succeeded."""
    return f"\n\n**Update:** a re-run succeeded, see {reply_url}"


def result_reply(plan: PickPlan, done: list[Done] | None, key: str) -> str:
    """The answer on the source PR; `done` is None for a dry run."""
    if plan.kind is PlanKind.REVERT:
        header = f"{mention(plan.requester)}revert on the release branches of what "
        header += f"#{plan.source.number} reverted"
    else:
        header = f"{mention(plan.requester)}cherry-pick of #{plan.source.number}"
        if plan.trigger:
            header += f" requested by the label {code(plan.trigger)}"
        header += f" ({plan.command.summary()}; landed as {plan.picks.describe()})"
    if done is None:
        header += " — dry run, nothing was pushed or posted"
    return "\n".join([header + ":", "", *target_lines(plan, done), "", marker(key, DONE)])


def target_lines(plan: PickPlan, done: list[Done] | None) -> list[str]:
    """One line per release branch: what happened (or, in a dry run, what would happen)."""
    results = {d.target.onto: d for d in done or []}
    return [
        f"- {t.onto.name}: {_describe(plan, t, results.get(t.onto), dry=done is None)}"
        for t in plan.targets
    ]


def _describe(plan: PickPlan, t: PickTarget, done: Done | None, *, dry: bool) -> str:
    match t.action:
        case Action.ALREADY if t.how == "no pick":
            return f"holds no pick of what #{plan.source.number} reverts; nothing to revert"
        case Action.ALREADY if plan.kind is PlanKind.REVERT:
            where = f"commit {t.found[:12]}" if t.found else "reverting would change nothing"
            return f"already reverted on {t.onto.name} ({where}); no pull request opened"
        case Action.ALREADY:
            if t.found == plan.commit:
                where = f"{t.found[:12]} itself is on the branch"
            elif t.found:
                where = f"commit {t.found[:12]}, found by {t.how}"
            else:
                where = "picking it would change nothing"
            return f"already on {t.onto.name} ({where}); no pull request opened"
        case Action.CONFLICT if t.head is None:
            where = ", ".join(c[:12] for c in t.conflicted)
            command = f"git fetch origin && git switch -c {t.branch} origin/{t.onto.name} && "
            run = (
                revert_command(t)
                if plan.kind is PlanKind.REVERT
                else picked_with(plan, t).command()
            )
            command += run
            verb = "reverting" if plan.kind is PlanKind.REVERT else "picking"
            return (
                f"conflicts in {_files(t.conflicts)} ({verb} {where}); the "
                f"{plan.kind.value} was aborted and nothing was pushed. Do it by hand: "
                f"{code(command)}, resolve, and open a pull request"
            )
        case Action.OPEN | Action.REUSE | Action.CONFLICT:
            return _publish_text(t, done, dry=dry)


def _publish_text(t: PickTarget, done: Done | None, *, dry: bool) -> str:
    conflict = t.action is Action.CONFLICT
    kind = "draft pull request" if conflict else "pull request"
    if conflict:
        text = f"conflicts in {_files(t.conflicts)}, committed with markers; "
    else:
        text = ""
    if dry or done is None or done.pull is None:
        verb = "would reuse" if t.action is Action.REUSE else "would push"
        text += f"{verb} {code(t.branch)} ({(t.head or '')[:12]}) and "
        text += f"reuse #{t.pull.number}" if t.pull else f"open a {kind}"
        if t.milestone is not None:
            text += f" on milestone {code(t.milestone.title)}"
        if t.tracker is not None:
            text += f"; would record it on the release tracker #{t.tracker.number}"
        return text + _no_tracker(t)
    pull = done.pull
    verb = "opened" if done.pull_created else "reused"
    text += f"{verb} {kind} #{pull.number} ({pull.html_url}) from {code(t.branch)}"
    if done.milestone is not None:
        text += f" on milestone {code(done.milestone.title)}"
    if done.tracker_comment is not None:
        verb = "recorded" if done.tracker_created else "already recorded"
        text += f"; {verb} on the release tracker ({done.tracker_comment.html_url})"
    return text + _no_tracker(t)


def _files(names: tuple[str, ...]) -> str:
    shown, more = listed(names)
    text = ", ".join(code(name) for name in shown)
    return text + (f" and {more} more files" if more else "")


def _no_tracker(t: PickTarget) -> str:
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
