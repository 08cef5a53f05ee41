"""The one line of a failed cell's log that says why it failed, shown above the log's path.

The rule, first match wins (pip's framing — `│`, `╰─>`, `×` and the indentation it puts before
a backend's output — is taken off each line first):

1. the last compiler diagnostic `FILE:LINE[:COL]: [fatal ]error: …` (gcc, clang) or
   `FILE(LINE): error …` (nvcc, MSVC);
2. the last line of the last Python traceback (`ValueError: …`: what the exception said);
3. the last line saying `error:`/`ERROR:`/`Error:`/`fatal:` that is not pip's or
   setuptools' framing around a backend's failure (`error: subprocess-exited-with-error`,
   `ERROR: Failed building wheel for …`, `error: command '…gcc' failed …`);
4. the last non-empty line that is not relforge's own (`# …` notes, `$ command` echoes).
"""

from __future__ import annotations

import re
from pathlib import Path

MAX_CHARS = 300  # a line is cut (…) beyond this: a one-line reason, not a log
_READ = 256 * 1024  # the tail of a long log is where the failure is

_COMPILER = re.compile(
    r"^\S.*?(?::\d+(?::\d+)?:|\(\d+(?:,\d+)?\)\s*:)\s+(?:fatal\s+)?error\b", re.IGNORECASE
)
_SAYS_ERROR = re.compile(r"(?:^|\s|:)(?:error|ERROR|Error|fatal|FATAL|Fatal)(?:\[\w+\])?:")
_FRAMING = (
    "error: subprocess-exited-with-error",
    "error: metadata-generation-failed",
    "error: failed-wheel-build-for-install",
    "ERROR: Failed building wheel",
    "ERROR: Failed to build",
    "ERROR: failed to build",
    "ERROR: Could not build wheels",
    "error: command ",
    "collect2: error: ld returned",
)
_BOX = "│╰─>×┃╭╮╯ "
_TRACEBACK = "Traceback (most recent call last):"


def _clean(line: str) -> str:
    """The line without pip's box drawing and indentation."""
    return line.lstrip(_BOX + "\t").rstrip()


def _ours(line: str) -> bool:
    return line.startswith(("# ", "$ ")) or line == "#"


def _traceback_end(lines: list[str]) -> str | None:
    """The exception line of the last traceback: the first line after it as little indented."""
    start = max((i for i, line in enumerate(lines) if line.strip() == _TRACEBACK), default=None)
    if start is None:
        return None
    indent = len(lines[start]) - len(lines[start].lstrip(_BOX + "\t"))
    for line in lines[start + 1 :]:
        body = line.lstrip(_BOX + "\t")
        if body and len(line) - len(body) <= indent and not body.startswith("File "):
            return body.rstrip()
    return None


def error_line_of(text: str) -> str:
    """The line of a build log that says why the build failed ("" for an empty log)."""
    lines = text.splitlines()
    cleaned = [_clean(line) for line in lines]
    chosen = next((c for c in reversed(cleaned) if _COMPILER.match(c)), None)
    if chosen is None:
        chosen = _traceback_end(lines)
    if chosen is None:
        chosen = next(
            (
                c
                for c in reversed(cleaned)
                if _SAYS_ERROR.search(c) and not c.startswith(_FRAMING) and not _ours(c)
            ),
            None,
        )
    if chosen is None:
        chosen = next((c for c in reversed(cleaned) if c and not _ours(c)), "")
    return chosen if len(chosen) <= MAX_CHARS else chosen[: MAX_CHARS - 1] + "…"


def error_line(log: Path | None) -> str:
    """`error_line_of` the log's tail; "" when there is no log or it cannot be read."""
    if log is None:
        return ""
    try:
        with log.open("rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(size - _READ, 0))
            data = fh.read()
    except OSError:
        return ""
    return error_line_of(data.decode("utf-8", errors="replace"))
