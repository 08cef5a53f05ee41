"""The three shapes every stage's results come in, one word each (docs/explanation/glossary.md):

- a **plan** is what a mutating command will do, decided before anything changes: a dry run
  prints it, `--execute` carries it out (`StorePlan` of publish/promote/yank, `ReleasePlan` of
  the release commands, `PickPlan` of the cherry-pick bot, `BuildPlan` of a build);
- an **outcome** is what a command did (or, on a dry run, would do), in the shapes a command
  prints: lines for people, a step summary, versioned JSON (`IndexReport`, `YankOutcome`,
  `UpdateOutcome`, …); the CLI prints any `Outcome` the same way;
- a **finding** is one thing a check found, with a kind people can filter on and its JSON
  (`LintFinding`, `IntegrityFinding`, `AuditFinding`, `UpstreamFinding`).

The concrete kinds keep their own names; these protocols say what they share.
"""

from __future__ import annotations

from typing import Any, Protocol


class Plan(Protocol):
    """What a mutating command will do, decided before anything changes."""

    @property
    def command(self) -> object:
        """The command the plan is for (its line, or the parsed command)."""
        ...


class Outcome(Protocol):
    """What a stage returns for a command to print: the lines of what the run did, the markdown
    of its step summary and its versioned JSON (one shape for the dry run and the run)."""

    @property
    def executed(self) -> bool:
        """The run happened (False: the dry run's outcome, which has no lines of its own)."""
        ...

    def lines(self) -> list[str]: ...

    def summary_markdown(self) -> str: ...

    def to_json(self) -> dict[str, Any]: ...


class Finding(Protocol):
    """One thing a check found, as JSON for `--format json` and the step summary."""

    def to_json(self) -> dict[str, Any]: ...
