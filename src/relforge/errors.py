"""The RelforgeError hierarchy: each class owns the exit code the CLI returns for it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """A place in a source file (1-based line and column), for error messages."""

    file: str
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return self.file
        return f"{self.file}:{self.line}:{self.column}"


NOWHERE = Span("<unknown>")


class RelforgeError(Exception):
    """Base of every error relforge reports to a user; exit code 1 (unexpected)."""

    exit_code = 1
    label = "error"

    def __init__(
        self,
        message: str,
        *,
        where: Span | None = None,
        key: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.where = where
        self.key = key
        self.hint = hint

    def render(self) -> str:
        """One paragraph: `file:line:col: key: message`, then the hint on its own line."""
        prefix = ""
        if self.where is not None and self.where is not NOWHERE:
            prefix += f"{self.where}: "
        if self.key:
            prefix += f"{self.key}: "
        text = f"{self.label}: {prefix}{self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text

    def __str__(self) -> str:
        return self.render()


class ConfigError(RelforgeError):
    """Bad configuration or bad command-line usage (exit 2)."""

    exit_code = 2
    label = "config error"


class UsageError(ConfigError):
    """A flag or argument the command cannot accept (exit 2)."""

    label = "usage error"


class NothingToDoError(RelforgeError):
    """The request selects nothing to act on (exit 3)."""

    exit_code = 3
    label = "nothing to do"


class ValidationFailed(RelforgeError):
    """A check of the matrix or of an artifact failed (exit 4)."""

    exit_code = 4
    label = "validation failed"


class BuildFailed(ValidationFailed):
    """A cell's build failed (exit 4, like a failed check: the artifact is not there)."""

    label = "build failed"


class RefusedError(RelforgeError):
    """relforge refused an action that could lose or corrupt data (exit 5)."""

    exit_code = 5
    label = "refused"


class EnvironmentFault(RelforgeError):
    """The environment failed the command, not the input: permission denied, disk full, an
    endpoint that cannot be reached or resolved, credentials refused (exit 6).  Rerunning after
    the fault is fixed finishes the work."""

    exit_code = 6
    label = "environment fault"


EXIT_CODES: dict[int, str] = {
    0: "success",
    1: "unexpected error (a bug: rerun with --debug and report it)",
    2: "configuration or usage error",
    3: "nothing to do",
    4: "validation failed",
    5: "refused for safety",
    6: "environment fault (permission, disk full, network, a damaged store, git or GitHub "
    "failing); fix it and rerun",
}
