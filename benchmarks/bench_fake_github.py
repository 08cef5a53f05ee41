"""Benchmark: starting and stopping the fake GitHub REST server the tests use, with http.server's
default 0.5 s shutdown poll (the old double) and our 50 ms poll, side by side in one run.

Issue 17 measured the old poll at about 28 s per test run: every test that uses the
`fake_github` fixture waited up to half a second for `server.shutdown()`.  Writes
benchmarks/results/fake_github.json.
"""

from __future__ import annotations

import json
import platform
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakegithub import FakeGitHub  # noqa: E402
from tests.fakegithub_server import POLL_INTERVAL, Server  # noqa: E402

RUNS = 40
OLD_POLL = 0.5  # http.server's default


def cycle(poll: float) -> float:
    """Start the server, answer one request's worth of setup, stop it; seconds taken."""
    fake = FakeGitHub()
    start = time.perf_counter()
    server = Server(fake.answer)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": poll})
    thread.start()
    time.sleep(0.01)  # a test's work happens here
    server.shutdown()
    server.server_close()
    thread.join()
    return time.perf_counter() - start - 0.01


def main() -> None:
    old, new = [], []
    for _ in range(RUNS):  # interleaved: both see the same machine load
        old.append(cycle(OLD_POLL))
        new.append(cycle(POLL_INTERVAL))
    result = {
        "benchmark": "fake GitHub server start + shutdown, 0.5 s poll vs 50 ms poll",
        "runs": RUNS,
        "old_poll_seconds": {"median": statistics.median(old), "max": max(old)},
        "new_poll_seconds": {"median": statistics.median(new), "max": max(new)},
        "saved_per_test_seconds": statistics.median(old) - statistics.median(new),
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, shared 2-core (noisy)",
    }
    out = ROOT / "benchmarks" / "results" / "fake_github.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
