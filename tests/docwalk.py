"""The command blocks of a docs page, to be run as written (tests/integration/test_docs_walk.py).

A page's walk is every fenced block whose info string is exactly `sh` in the sections named,
in order; a block written as `console` (or anything else) is shown, never run — install steps
that depend on the reader's machine, output samples.  Each logical line of a block (a line
ending in `\\` continues on the next) is one command, run by bash in the folder the previous
`cd` left; bash itself strips `# comments`.  Nothing is substituted: a command that does not
work as written fails the walk, naming the page and its line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

FENCE = "```"


@dataclass(frozen=True)
class Command:
    page: str  # docs/guide/quick-start.md
    line: int  # the line the command starts on
    text: str  # as written, continuations joined

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def section_lines(text: str, heading: str) -> list[tuple[int, str]]:
    """(line number, line) of the section under `heading` (a Markdown heading line, exact) up
    to the next heading of the same or a higher level; every line when `heading` is empty."""
    lines = list(enumerate(text.splitlines(), start=1))
    if not heading:
        return lines
    level = len(heading) - len(heading.lstrip("#"))
    starts = [i for i, (_, line) in enumerate(lines) if line.strip() == heading]
    if len(starts) != 1:
        raise AssertionError(f"heading {heading!r} found {len(starts)} times")
    body: list[tuple[int, str]] = []
    in_fence = False
    for number, line in lines[starts[0] + 1 :]:
        if line.startswith(FENCE):
            in_fence = not in_fence
        elif not in_fence and line.startswith("#"):
            depth = len(line) - len(line.lstrip("#"))
            if depth <= level and line[depth : depth + 1] == " ":
                break
        body.append((number, line))
    return body


def commands(page: Path, root: Path, *headings: str) -> list[Command]:
    """The commands of the `sh` blocks under `headings` (in the page's order)."""
    text = page.read_text(encoding="utf-8")
    name = page.relative_to(root).as_posix()
    found: list[Command] = []
    for heading in headings or ("",):
        block: list[tuple[int, str]] | None = None
        for number, line in section_lines(text, heading):
            if block is None:
                if line.strip() == f"{FENCE}sh":
                    block = []
                continue
            if line.strip() == FENCE:
                found.extend(_logical(name, block))
                block = None
                continue
            block.append((number, line))
    return found


def _logical(page: str, block: list[tuple[int, str]]) -> list[Command]:
    out: list[Command] = []
    start, parts = 0, list[str]()
    for number, line in block:
        if not parts:
            start = number
        if line.rstrip().endswith("\\"):
            parts.append(line.rstrip()[:-1])
            continue
        parts.append(line)
        text = " ".join(p.strip() for p in parts).strip()
        parts = []
        if text and not text.startswith("#"):
            out.append(Command(page, start, text))
    return out


@dataclass
class Walk:
    """Runs commands in order like a reader's shell: the folder carries over from `cd`."""

    cwd: Path
    env: dict[str, str]
    transcript: list[str]

    @classmethod
    def start(cls, cwd: Path, **extra: str) -> Walk:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RELFORGE_"))}
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        env.update(extra)
        return cls(cwd, env, [])

    def run(self, command: Command, timeout: float = 900) -> str:
        script = f'set -eo pipefail\n{command.text}\nprintf "\\n@@cwd=%s\\n" "$PWD"\n'
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        out, _, tail = done.stdout.rpartition("\n@@cwd=")
        if done.returncode != 0 or not tail:
            raise AssertionError(
                f"{command.where}: `{command.text}` exited {done.returncode}\n"
                f"--- stdout\n{done.stdout[-6000:]}\n--- stderr\n{done.stderr[-6000:]}"
            )
        self.cwd = Path(tail.strip())
        self.transcript.append(f"$ {command.text}\n{out}{done.stderr}")
        return out + done.stderr
