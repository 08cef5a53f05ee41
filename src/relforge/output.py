"""Printing for the CLI and the stages: rich tables, JSON for machines, the GitHub step summary."""

from __future__ import annotations

import json
import os
import shutil
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


def console(stderr: bool = False) -> Console:
    """A console that does not wrap tables when output goes to a pipe or a CI log."""
    from rich.console import Console  # imported when a table is printed: ~50 ms

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else max(shutil.get_terminal_size((200, 24)).columns, 200)
    return Console(file=stream, width=width, soft_wrap=False, highlight=False)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


def append_step_summary(markdown: str) -> None:
    """Append to $GITHUB_STEP_SUMMARY when running in GitHub Actions."""
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
