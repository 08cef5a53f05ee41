"""`channels.default`: what a branch targets when a command is given no --channel."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.errors import ConfigError
from relforge.matrix.load import load_matrix
from tests.conftest import SMALL, Result

ON_RELEASE_BRANCH = SMALL.replace(
    "  release: {version_scheme: final, prefix: whl}\n",
    "  release: {version_scheme: final, prefix: whl}\n  default: test\n",
)


def test_pick(write: Callable[[str], Path]) -> None:
    channels = load_matrix(write(ON_RELEASE_BRANCH)).channels
    assert channels.pick(None) == "test" and channels.pick("nightly") == "nightly"
    assert load_matrix(write(SMALL)).channels.pick(None) == "nightly"


def test_release_is_never_a_default(write: Callable[[str], Path]) -> None:
    with pytest.raises(ConfigError, match="filled only by promotion"):
        load_matrix(write(ON_RELEASE_BRANCH.replace("default: test", "default: release")))


def test_commands_fall_back_to_it(
    write: Callable[[str], Path],
    run: Callable[..., Result],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(ON_RELEASE_BRANCH)
    result = run("index", str(path))
    assert result.code == 0, result.err
    assert "index of the test channel" in result.out
    assert not (tmp_path / ".relforge").exists()  # a dry run writes nothing
    explicit = run("index", str(path), "--channel", "nightly")
    assert "index of the nightly channel" in explicit.out
