"""What `relforge upstream update` plans and did, in the shapes a command gives it: the lines
people read (each change with its reason, the diff, then what the run wrote or pushed), versioned
JSON for machines (one shape for the dry run and the run; the diff is in it as one string) and the
markdown of the job's step summary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from relforge.forges.github import PullRequest
from relforge.output import versioned
from relforge.upstream.pullrequest import PullRequestPlan
from relforge.upstream.update import UpdatePlan
from relforge.upstream.upstreamreport import update_lines

SCHEMA_VERSION = 1


@dataclass(frozen=True, kw_only=True)
class UpdateOutcome:
    """An update plan and, with `--pull-request`, what the pull request step does; once
    executed, the file written (`wrote`) or the pull request pushed (`pushed`, `opened`)."""

    plan: UpdatePlan
    pull: PullRequestPlan | None = None
    executed: bool = False
    wrote: str | None = None  # the matrix file written in place (without --pull-request)
    pushed: bool = False  # the branch was pushed (with --pull-request)
    opened: PullRequest | None = None  # the pull request opened or updated by the push

    @property
    def due(self) -> bool:
        """Something is to be written (or pushed): false when the matrix is current, or the
        open pull request already holds this update."""
        if self.pull is not None:
            return self.pull.due
        return self.plan.changed

    def diff(self) -> str:
        """The unified diff people are shown ("" when nothing is due: also when the open pull
        request holds it already); the JSON carries the plan's diff whatever the pull request
        step does."""
        return self.plan.diff() if self.due else ""

    def plan_lines(self) -> list[str]:
        """Each change with its reason, what the pull request step does, then the diff."""
        out = update_lines(self.plan)
        if self.pull is not None:
            out.append(f"pull request: {self.pull.describe()}")
            if self.due:
                out.append(f"title: {self.pull.title}")
        return out + self.diff().splitlines()

    def done(self) -> str | None:
        """One line: what the run wrote or pushed (None before it ran, or with nothing due)."""
        if not self.executed or not self.due:
            return None
        if self.pull is None:
            return f"wrote {self.wrote}: {len(self.plan.written)} change(s)"
        if self.opened is not None:
            return f"pull request #{self.opened.number}: {self.opened.html_url}"
        return "pushed"

    def done_lines(self) -> list[str]:
        done = self.done()
        return [done] if done is not None else []

    def lines(self) -> list[str]:
        return self.plan_lines() + self.done_lines()

    def summary_markdown(self) -> str:
        """The pull request's title and what the run did, then each change written and each
        left to a person."""
        head = [self.pull.title] if self.pull is not None and self.due else []
        items = [f"- {f.message}" for f in self.plan.written]
        items += [f"- by hand: {f.message}: {f.manual}" for f in self.plan.manual]
        parts = [*head, *self.done_lines(), *(["\n".join(items)] if items else [])]
        return "\n\n".join(parts)

    def to_json(self) -> dict[str, Any]:
        report = self.plan.report
        return versioned(
            {
                "file": report.file,
                "release": report.release,
                "index": report.index,
                "policy_date": report.policy_date.isoformat(),
                "changes": [f.to_json() for f in self.plan.written],
                "manual": [f.to_json() for f in self.plan.manual],
                "changed": self.plan.changed,
                "diff": self.plan.diff(),
                "executed": self.executed,
                "wrote": self.wrote,
                "pull_request": self._pull_json(),
            },
            SCHEMA_VERSION,
        )

    def _pull_json(self) -> dict[str, Any] | None:
        pr = self.pull
        if pr is None:
            return None
        pull = self.opened or pr.pull
        return {
            "action": pr.action,
            "repo": pr.repo,
            "branch": pr.branch,
            "base": pr.base,
            "title": pr.title,
            "pushed": self.pushed,
            "number": pull.number if pull is not None else None,
            "url": pull.html_url if pull is not None else None,
        }
