"""The suite's servers do not outlive it (tests.daemons): a pytest ended by SIGTERM — alone or
as the controller of xdist workers — stops every server its tests started, and the next session
sweeps the leftovers of a run that was killed outright, touching nothing else."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests import daemons
from tests.conftest import REPO

pytestmark = pytest.mark.slow

HOLD = textwrap.dedent("""\
    import json, os, time
    from pathlib import Path

    from tests import daemons
    from tests.integration.conftest import moto_endpoint, pypiserver, static_server


    def _hold(name):
        # the pids of the servers this process started, then wait to be killed
        records = [json.loads(p.read_text()) for p in daemons.run_folder().glob("*.json")]
        mine = [r["pid"] for r in records if r["recorded_by"] == os.getpid()]
        out = Path(os.environ["CHILD_OUT"]) / f"{name}.json"
        out.with_suffix(".tmp").write_text(json.dumps(mine))
        out.with_suffix(".tmp").replace(out)
        time.sleep(600)
    """)
TESTS = {
    "all": "def test_all(moto_endpoint, static_server, pypiserver, tmp_path):\n"
    "    static_server(tmp_path)\n"
    "    _hold('all')\n",
    "s3_and_http": "def test_s3_and_http(moto_endpoint, static_server, tmp_path):\n"
    "    static_server(tmp_path)\n"
    "    _hold('s3_and_http')\n",
    "index": "def test_index(pypiserver):\n    _hold('index')\n",
}


def _wait_for(paths: list[Path], proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while not all(p.exists() for p in paths):
        if proc.poll() is not None:
            out = proc.stdout.read().decode() if proc.stdout else ""
            pytest.fail(f"the child pytest ended early ({proc.returncode}):\n{out}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the child pytest's servers did not start within 120 s")
        time.sleep(0.1)


def _child_pytest(tmp_path: Path, *args: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        daemons.REGISTRY_ENV: str(tmp_path / "registry"),
        "CHILD_OUT": str(tmp_path / "out"),
    }
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "tests.daemons"]
    argv += ["-q", "--rootdir", str(tmp_path), *args]
    return subprocess.Popen(
        argv,
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _gone(pids: list[int]) -> list[int]:
    """Those of `pids` still running after a while (a stop is SIGTERM, then SIGKILL)."""
    deadline = time.monotonic() + 30
    left = pids
    while left and time.monotonic() < deadline:
        left = [pid for pid in left if daemons.start_time(pid) is not None]
        time.sleep(0.1)
    return left


@pytest.mark.parametrize(
    ("workers", "files"),
    [([], ["all"]), (["-n", "2", "--dist", "loadfile"], ["s3_and_http", "index"])],
    ids=["alone", "xdist"],
)
def test_a_pytest_ended_by_sigterm_leaves_no_server(
    tmp_path: Path, workers: list[str], files: list[str]
) -> None:
    """Alone, one test holds moto, pypiserver and an http server; under xdist the controller
    is signalled while each of two workers holds servers of its own."""
    (tmp_path / "out").mkdir()
    for name in files:
        (tmp_path / f"test_{name}.py").write_text(HOLD + "\n\n" + TESTS[name], encoding="utf-8")
    child = _child_pytest(tmp_path, *workers, *(str(tmp_path / f"test_{n}.py") for n in files))
    outs = [tmp_path / "out" / f"{name}.json" for name in files]
    _wait_for(outs, child)
    pids = [pid for out in outs for pid in json.loads(out.read_text())]
    assert len(pids) == 3, pids  # moto, the http server, pypiserver
    assert all(daemons.start_time(pid) is not None for pid in pids)
    child.send_signal(signal.SIGTERM)
    child.communicate(timeout=120)
    assert child.returncode == -signal.SIGTERM  # ended by the signal, as it would have been
    assert _gone(pids) == []
    assert list((tmp_path / "registry").glob("run-*/*.json")) == []


def test_the_next_session_sweeps_a_killed_runs_servers_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(daemons.REGISTRY_ENV, str(tmp_path / "registry"))
    ended = subprocess.Popen(["sleep", "600"])  # a run's pytest, since killed
    dead_run = f"{ended.pid}-{daemons.start_time(ended.pid)}"
    ended.kill()
    ended.wait()
    assert dead_run.replace("-", "").isdigit()
    monkeypatch.setenv(daemons.RUN_ENV, dead_run)
    orphan = daemons.spawn(["sleep", "600"])
    live_run = f"{os.getpid()}-{daemons.start_time(os.getpid())}"  # this run: still going
    monkeypatch.setenv(daemons.RUN_ENV, live_run)
    kept = daemons.spawn(["sleep", "600"])
    try:
        # a record whose pid now names another process (a reused pid): never signalled
        reused = {"pid": kept.pid, "started": (daemons.start_time(kept.pid) or 0) + 1}
        (daemons.run_folder(dead_run) / "1.json").write_text(json.dumps(reused))

        test_file = tmp_path / "test_nothing.py"
        test_file.write_text("def test_nothing():\n    pass\n", encoding="utf-8")
        child = _child_pytest(tmp_path, str(test_file))
        out, _ = child.communicate(timeout=120)
        assert child.returncode == 0, out.decode()

        assert orphan.wait(timeout=30) == -signal.SIGTERM  # swept: its pytest is gone
        assert not daemons.run_folder(dead_run).exists()
        assert kept.poll() is None  # a live run's server, and the reused pid, left alone
        assert (daemons.run_folder(live_run) / f"{kept.pid}.json").exists()
    finally:
        daemons.stop(kept)
    assert kept.returncode == -signal.SIGTERM
    assert not daemons.run_folder(live_run).exists()
