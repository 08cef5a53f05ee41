"""Run one command of a build with its output appended to the cell's log, under a deadline."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from relforge.builders.control import cancel
from relforge.builders.control.cancel import cancellable
from relforge.builders.control.failures import BuildFailure


def run_logged(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    log: Path,
    deadline: float,
    what: str = "the build command",
) -> None:
    """Run `argv`; its stdout and stderr go to `log`.  Raise BuildFailure on a non-zero exit,
    a missing program, or when `deadline` (time.monotonic()) passes (the process group is
    killed, so compilers started by the command stop too)."""
    if cancel.requested():
        raise BuildFailure("interrupted")
    with log.open("ab") as fh:
        fh.write(f"\n$ {shlex.join(argv)}\n".encode())
        fh.flush()
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env),
                stdout=fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except FileNotFoundError:
            raise BuildFailure(f"{what}: program not found: {argv[0]}") from None
        except PermissionError:
            raise BuildFailure(f"{what}: not executable: {argv[0]}") from None

        def kill() -> None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

        with cancellable(kill):
            try:
                code = proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                kill()
                proc.wait()
                raise BuildFailure(f"{what} timed out") from None
            except BaseException:
                kill()
                proc.wait()
                raise
        fh.write(f"# exit {code} after {time.monotonic() - started:.1f} s\n".encode())
    if code != 0:
        raise BuildFailure(f"{what} exited with code {code}")
