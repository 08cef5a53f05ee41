"""Every long-lived process the suite starts (moto, pypiserver, http servers, docker-registry,
dockerd, act and its jobs, `relforge bot serve`) is started here, so none outlives the run.

- `spawn()` starts it in a session (and process group) of its own and records it in a pid file
  under the run's folder, `<registry>/run-<pid of the top pytest>/`; `stop()` ends its group
  (SIGTERM, then SIGKILL) and removes the record.
- `pytest_configure` (here: this module is a pytest plugin, loaded by tests/conftest.py) puts
  a handler on SIGTERM and SIGHUP in every pytest process, the xdist controller and each
  worker: it stops every daemon of the run, then lets the signal end the process as it would
  have.  SIGINT raises KeyboardInterrupt, whose teardown stops the fixtures' daemons, and an
  `atexit` hook stops what is left.  The controller's handler also stops the daemons its
  workers recorded (a worker's channel closes when the controller dies, and it may exit
  without running a handler).
- A run killed by SIGKILL leaves its pid files: the next session sweeps every run folder whose
  pytest is gone — and only those, only the processes they name, and only when each is still
  the process recorded (its start time in /proc matches): never a process found by name.

The registry is `$RELFORGE_TEST_DAEMONS`, else `relforge-test-daemons` in the temporary folder.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

REGISTRY_ENV = "RELFORGE_TEST_DAEMONS"
RUN_ENV = "RELFORGE_TEST_RUN"  # the top pytest's "pid-starttime", inherited by xdist workers
SIGNALS = (signal.SIGTERM, signal.SIGHUP)
GRACE_S = 10.0  # how long a daemon may take to stop after SIGTERM before it is killed


def registry() -> Path:
    given = os.environ.get(REGISTRY_ENV)
    return Path(given) if given else Path(tempfile.gettempdir()) / "relforge-test-daemons"


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22), None when
    it is gone: with the pid, it names one process (a pid is reused, the pair is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # the name in parentheses may hold spaces
    if fields[0] == "Z":
        return None  # a zombie has ended; only its parent's wait is missing
    return int(fields[19])


def is_running(pid: int, started: int) -> bool:
    return start_time(pid) == started


def _this_run() -> str:
    """The run this process belongs to: set by the top pytest, inherited by its workers."""
    run = os.environ.get(RUN_ENV)
    if not run:
        pid = os.getpid()
        run = f"{pid}-{start_time(pid)}"
        os.environ[RUN_ENV] = run
    return run


def run_folder(run: str | None = None) -> Path:
    return registry() / f"run-{run or _this_run()}"


def spawn(
    argv: Sequence[str], *, cleanup: Path | None = None, **popen: Any
) -> subprocess.Popen[Any]:
    """Start `argv` (subprocess.Popen's keyword arguments) as a daemon of this run, in a new
    session; `cleanup`: a folder to unmount below and remove once it is stopped (dockerd's)."""
    popen.pop("start_new_session", None)
    folder = run_folder()
    proc: subprocess.Popen[Any] = subprocess.Popen(list(argv), start_new_session=True, **popen)
    started = start_time(proc.pid)
    record = {
        "pid": proc.pid,
        "started": started,
        "argv": [str(a) for a in argv],
        "recorded_by": os.getpid(),
        "cleanup": str(cleanup) if cleanup is not None else None,
    }
    for attempt in range(3):  # another process's stop() may remove the folder once it is empty
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{proc.pid}.json.tmp"
        try:
            tmp.write_text(json.dumps(record), encoding="utf-8")
            tmp.replace(folder / f"{proc.pid}.json")
            break
        except FileNotFoundError:
            if attempt == 2:
                stop(proc)
                raise
    return proc


def stop(proc: subprocess.Popen[Any], grace: float = GRACE_S) -> None:
    """End a daemon `spawn` started (its whole process group), reap it, and forget it."""
    path = run_folder() / f"{proc.pid}.json"
    record = _read(path)
    _end_group(proc.pid, grace, proc)
    if record is not None:
        _clean(record)
    path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # the run's last daemon: no folder left behind
        path.parent.rmdir()


def stop_run(run: str | None = None, grace: float = GRACE_S, *, mine: bool = False) -> list[int]:
    """Stop every daemon recorded for `run` (this one by default) that is still the process
    recorded (`mine`: only those this process started); returns their pids.  The run's folder
    is removed when nothing is left in it."""
    folder = run_folder(run)
    stopped = []
    for path in sorted(folder.glob("*.json")):
        record = _read(path)
        if record is None or (mine and record.get("recorded_by") != os.getpid()):
            continue
        if is_running(record["pid"], record["started"]):
            _end_group(record["pid"], grace, None)
            stopped.append(record["pid"])
        _clean(record)
        path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        for leftover in folder.glob(".*.tmp"):
            leftover.unlink()
        folder.rmdir()
    return stopped


def sweep() -> list[int]:
    """Stop the daemons of earlier runs whose pytest is gone (killed: nothing stopped them)."""
    root = registry()
    if not root.is_dir():
        return []
    stopped = []
    for folder in sorted(root.glob("run-*")):
        run = folder.name.removeprefix("run-")
        pid, _, started = run.partition("-")
        if not (pid.isdigit() and started.isdigit()):
            continue
        if is_running(int(pid), int(started)):
            continue  # a run still going (another `make test` on this machine)
        stopped += stop_run(run)
    return stopped


def _read(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(record, dict) and isinstance(record.get("pid"), int)
    return record if ok and isinstance(record.get("started"), int) else None


def _descendants(pid: int, depth: int = 1 << 30) -> list[tuple[int, int]]:
    """(pid, start time) of every process below `pid` (`depth` levels), by parentage in /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            stat = (entry / "stat").read_text(encoding="ascii", errors="replace")
            ppid = int(stat.rpartition(")")[2].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    found: list[tuple[int, int]] = []
    todo = [(child, 1) for child in children.get(pid, [])]
    while todo:
        child, level = todo.pop()
        started = start_time(child)
        if started is not None:
            found.append((child, started))
        if level < depth:
            todo += [(grandchild, level + 1) for grandchild in children.get(child, [])]
    return found


def _end_group(pid: int, grace: float, proc: subprocess.Popen[Any] | None) -> None:
    """SIGTERM the daemon's process group (a graceful stop: dockerd stops its containers),
    then SIGKILL the group and whatever ran below the daemon once `grace` has passed."""
    below = _descendants(pid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc is not None:
            if proc.poll() is not None:
                break
        elif start_time(pid) is None:
            break
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    for child, started in below + _descendants(pid):
        if is_running(child, started):  # left its group (a shim that made a session)
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
    if proc is not None:
        proc.wait()


def _clean(record: dict[str, Any]) -> None:
    cleanup = record.get("cleanup")
    if not cleanup:
        return
    root = Path(cleanup)
    unmount_below(root)
    shutil.rmtree(root, ignore_errors=True)


def unmount_below(root: Path) -> None:
    """dockerd leaves <exec-root>/netns/default (and, if killed, overlay mounts) mounted."""
    prefix = str(root) + "/"
    with open("/proc/mounts", encoding="utf-8") as fh:
        points = [line.split()[1] for line in fh if line.split()[1].startswith(prefix)]
    for point in sorted(points, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)


# --- the pytest side ------------------------------------------------------------------------------


_TOP = True  # this process is the xdist controller, or a pytest without xdist


def _on_signal(signum: int, frame: FrameType | None) -> None:
    """Stop the daemons (all of the run's in the top process, a worker's own in a worker) and
    pass the signal to this process's children (xdist workers, a browser's driver, a relforge
    a test started), then end the way the signal would have ended the process."""
    children = [(pid, started) for pid, started in _descendants(os.getpid(), depth=1)]
    stop_run(mine=not _TOP)
    for pid, started in children:
        if is_running(pid, started):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _at_exit() -> None:
    stop_run(mine=not _TOP)


def pytest_configure(config: pytest.Config) -> None:
    global _TOP
    _TOP = not hasattr(config, "workerinput")
    if _TOP:
        os.environ.pop(RUN_ENV, None)  # a pytest started from a test is a run of its own
    _this_run()  # set before xdist starts its workers: they inherit it
    if _TOP:
        sweep()
    for signum in SIGNALS:
        signal.signal(signum, _on_signal)
    atexit.register(_at_exit)


@contextlib.contextmanager
def daemon(argv: Sequence[str], **popen: Any) -> Iterator[subprocess.Popen[Any]]:
    """`spawn` for the length of a with block."""
    proc = spawn(argv, **popen)
    try:
        yield proc
    finally:
        stop(proc)


def run(argv: Sequence[str], *, timeout: float, **popen: Any) -> subprocess.CompletedProcess[str]:
    """subprocess.run(argv, capture_output=True, text=True) for a process that starts others
    (act and its jobs): a daemon of the run until it ends, then whatever it left in its
    process group is stopped.  subprocess.TimeoutExpired after `timeout`, as subprocess.run."""
    proc: subprocess.Popen[str] = spawn(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        stop(proc)
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)
