"""`relforge bot serve`: real HTTP requests to the served port; signatures are checked first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests

from relforge.bot.webhook import signature, verify
from tests import daemons
from tests.botworld import REPO, World, comment_event, pull_event
from tests.conftest import Result

SECRET = "It's a Secret to Everybody"


@pytest.fixture
def served(world: World) -> Iterator[str]:
    """`relforge bot serve --execute` on a free port, as its own process; its URL."""
    env = {**os.environ, "RELFORGE_WEBHOOK_SECRET": SECRET}
    proc = daemons.spawn(  # stopped with the test run, even a killed one
        [
            sys.executable,
            "-m",
            "relforge",
            "bot",
            "serve",
            "--port",
            "0",
            "--execute",
            "--repo",
            str(world.bot_clone),
            "--github-repo",
            REPO,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening on http://127.0.0.1:"), line
        yield line.split()[2]
    finally:
        daemons.stop(proc)


def post(
    url: str, payload: object, *, event: str = "issue_comment", sig: str | None = "good"
) -> requests.Response:
    body = json.dumps(payload).encode()
    headers = {"X-GitHub-Event": event, "Content-Type": "application/json"}
    if sig == "good":
        headers["X-Hub-Signature-256"] = signature(SECRET.encode(), body)
    elif sig is not None:
        headers["X-Hub-Signature-256"] = sig
    return requests.post(url, data=body, headers=headers, timeout=10)


def test_signatures_are_checked_before_anything_else(world: World, served: str) -> None:
    pr, _ = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    payload = comment_event("@relforge-bot cherry-pick --onto release/2.9 -c docs", number=pr)
    forged = signature(b"another secret", json.dumps(payload).encode())
    for sig in (None, "", "sha256=", forged, forged.replace("sha256=", "sha1="), "garbage"):
        response = post(served, payload, sig=sig)
        assert response.status_code == 401, sig
    assert requests.get(served, timeout=10).status_code == 405
    assert post(served, {}, event="ping").status_code == 200
    time.sleep(0.5)  # nothing was queued: nothing may happen
    assert world.fake.requests == []

    assert post(served, payload).status_code == 202
    deadline = time.monotonic() + 60
    while not world.fake.comments_on(REPO, pr) and time.monotonic() < deadline:
        time.sleep(0.1)
    [reply] = world.fake.comments_on(REPO, pr)
    assert "opened pull request" in reply and len(world.new_pulls()) == 1


def test_the_signature_is_hmac_sha256_of_the_raw_body() -> None:
    # The example in GitHub's documentation on validating webhook deliveries.
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert signature(SECRET.encode(), b"Hello, World!") == expected
    assert verify(SECRET.encode(), b"Hello, World!", expected)
    assert not verify(SECRET.encode(), b"Hello, World?", expected)
    assert not verify(b"", b"Hello, World!", signature(b"", b"Hello, World!"))


def test_serve_needs_its_secret(
    run: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RELFORGE_WEBHOOK_SECRET", raising=False)
    result = run("bot", "serve", "--repo", str(tmp_path))
    assert result.code == 2 and "$RELFORGE_WEBHOOK_SECRET is empty" in result.err


def test_a_signed_label_event_is_picked(world: World, served: str) -> None:
    pr, _ = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    world.fake.add_label(REPO, pr, "cherry-pick/release-2.9", actor="alice")
    payload = pull_event("labeled", number=pr, label="cherry-pick/release-2.9")
    assert post(served, payload, event="pull_request", sig=None).status_code == 401
    assert post(served, payload, event="pull_request").status_code == 202
    deadline = time.monotonic() + 60
    while not world.fake.comments_on(REPO, pr) and time.monotonic() < deadline:
        time.sleep(0.1)
    [reply] = world.fake.comments_on(REPO, pr)
    assert "requested by the label `cherry-pick/release-2.9`" in reply
    assert [p["base"]["ref"] for p in world.new_pulls()] == ["release/2.9"]


def test_a_client_that_stops_sending_is_cut_off() -> None:
    """A connection that sends part of a request and then nothing (slowloris) must not hold a
    server thread for ever: each request has a time limit."""
    import socket
    import threading

    from relforge.bot.webhook import WebhookServer

    server = WebhookServer(
        ("127.0.0.1", 0), secret=b"s", handle=lambda *_: None, log=lambda _: None, timeout=0.5
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    address = ("127.0.0.1", server.server_port)
    try:
        with socket.create_connection(address, timeout=10) as sock:
            sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
            started = time.monotonic()
            assert sock.recv(1024) == b""  # closed by the server, nothing answered
            assert time.monotonic() - started < 5
        with socket.create_connection(address, timeout=10) as sock:
            sock.sendall(b"POST / HTTP/1.1\r\n")  # headers never finished
            assert sock.recv(1024) == b""
    finally:
        server.shutdown()
        server.server_close()
