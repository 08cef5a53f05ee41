"""What a command tells GitHub Actions: its markdown step summary and, when it runs in Actions
(GITHUB_ACTIONS=true), workflow commands — `::error`/`::warning` annotations and `::group::`
folds around long logs (their own commands switched off with `::stop-commands::`).

Every step summary and workflow command relforge writes goes through here.  Outside Actions
the workflow commands are not written at all, so local output is unchanged.  They go to stderr
(the runner reads commands from both streams) so that `--format json` keeps stdout to one JSON
document.  Escaping follows GitHub's rules for workflow commands: in the message `%`, CR and LF
become `%25`, `%0D`, `%0A`; in a property value `:` and `,` also become `%3A` and `%2C`.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from relforge.errors import NOWHERE, RelforgeError

Level = Literal["error", "warning", "notice"]


def in_actions() -> bool:
    """True when the command runs as a step of a GitHub Actions job."""
    return os.environ.get("GITHUB_ACTIONS") == "true"


def escape_data(text: str) -> str:
    """A workflow command's message, escaped: one line, `%` kept literal."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value (file, title), escaped."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(
    name: str, message: str = "", properties: dict[str, str | int | None] | None = None
) -> str:
    """The text of one workflow command: `::name key=value,…::message`."""
    given = {k: v for k, v in (properties or {}).items() if v not in (None, "", 0)}
    props = ",".join(f"{k}={escape_property(str(v))}" for k, v in given.items())
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


def _emit(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def annotate(
    level: Level,
    message: str,
    *,
    file: str | None = None,
    line: int | None = None,
    column: int | None = None,
    title: str | None = None,
) -> None:
    """An annotation on the run (and on `file:line` when given); nothing outside Actions."""
    if not in_actions():
        return
    properties: dict[str, str | int | None] = {
        "file": file,
        "line": line,
        "col": column,
        "title": title,
    }
    _emit(command(level, message, properties))


def annotate_error(error: RelforgeError) -> None:
    """The error the CLI is about to print, as an `::error` annotation at its file:line."""
    where = error.where if error.where is not None and error.where is not NOWHERE else None
    message = f"{error.key}: {error.message}" if error.key else error.message
    if error.hint:
        message += f"\nhint: {error.hint}"
    annotate(
        "error",
        message,
        file=where.file if where else None,
        line=where.line if where else None,
        column=where.column if where else None,
        title=f"relforge: {error.label}",
    )


@contextmanager
def group(title: str) -> Iterator[None]:
    """Fold what is written inside into one collapsed group of the Actions log."""
    if not in_actions():
        yield
        return
    _emit(command("group", title))
    try:
        yield
    finally:
        _emit("::endgroup::")


def fold(title: str, text: str) -> None:
    """Under Actions, `text` (a log written by other programs) in a fold, read verbatim: a line
    of it that looks like a workflow command is not run (`::stop-commands::` around it)."""
    if not in_actions():
        return
    token = secrets.token_hex(16)
    with group(title):
        _emit(f"::stop-commands::{token}")
        sys.stderr.write(text if text.endswith("\n") or not text else text + "\n")
        _emit(f"::{token}::")


def step_summary(title: str, body: str = "") -> None:
    """Append a `### title` section to $GITHUB_STEP_SUMMARY when the variable is set."""
    text = f"### {title}" + (f"\n\n{body.strip(chr(10))}" if body.strip() else "")
    append_markdown(text)


def append_markdown(markdown: str) -> None:
    """Append markdown that carries its own heading to $GITHUB_STEP_SUMMARY when it is set."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(markdown.rstrip("\n") + "\n\n")
    except OSError as exc:  # the command's work is done; a missing summary must not undo that
        sys.stderr.write(
            f"warning: cannot append to $GITHUB_STEP_SUMMARY ({path}): {exc.strerror or exc}\n"
        )
