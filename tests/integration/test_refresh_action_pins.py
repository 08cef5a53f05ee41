"""scripts/refresh_action_pins.py against real git repositories on disk."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from relforge.workflows.actionpins import parse_pins
from tests.conftest import REPO

SCRIPT = REPO / "scripts" / "refresh_action_pins.py"


def _git(*args: str, cwd: Path) -> str:
    env_args = ["-c", "user.name=t", "-c", "user.email=t@example.org"]
    done = subprocess.run(["git", *env_args, *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _action_repo(base: Path, name: str, tags: list[str]) -> dict[str, str]:
    """A repository `base/name` with one commit per tag (annotated); tag → commit SHA."""
    work = base / name
    work.mkdir(parents=True)
    _git("init", "-q", cwd=work)
    shas = {}
    for tag in tags:
        (work / "action.yml").write_text(f"name: {tag}\n")
        _git("add", "-A", cwd=work)
        _git("commit", "-qm", tag, cwd=work)
        _git("tag", "-a", tag, "-m", tag, cwd=work)  # annotated: ls-remote must peel it
        shas[tag] = _git("rev-parse", "HEAD", cwd=work)
    return shas


def test_refresh_resolves_and_bumps_tags(tmp_path: Path) -> None:
    checkout = _action_repo(tmp_path / "github", "actions/checkout", ["v4.2.2", "v4.2.3"])
    python = _action_repo(tmp_path / "github", "actions/setup-python", ["v5.6.0"])
    pins = tmp_path / "pins.yaml"
    pins.write_text(
        "# pins\nactions/checkout:\n  tag: v4.2.2\n  sha: " + "0" * 40 + "\n"
        "actions/setup-python:\n  tag: v5.6.0\n  sha: " + python["v5.6.0"] + "\n"
    )
    base = f"file://{tmp_path / 'github'}"
    argv = [sys.executable, str(SCRIPT), "--pins", str(pins), "--base-url", base]
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"actions/checkout: v4.2.2 → {checkout['v4.2.2']}" in done.stdout
    assert "setup-python" not in done.stdout  # already right
    got = parse_pins(pins.read_text(), str(pins))
    assert got["actions/checkout"].sha == checkout["v4.2.2"]
    assert pins.read_text().startswith("# pins\n")

    done = subprocess.run([*argv, "actions/checkout=v4.2.3"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    got = parse_pins(pins.read_text(), str(pins))
    assert (got["actions/checkout"].tag, got["actions/checkout"].sha) == (
        "v4.2.3",
        checkout["v4.2.3"],
    )
    done = subprocess.run(argv, capture_output=True, text=True)
    assert "every pin is current" in done.stdout

    done = subprocess.run([*argv, "actions/checkout=v9"], capture_output=True, text=True)
    assert done.returncode != 0 and "no tag v9" in done.stderr
