"""`relforge build --pull`: when an image is pulled, and what a failed pull says (the pulls
themselves run against a real registry in tests/integration/test_generated_ci.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from relforge.builders.images.pull import _pull_error, wants_pull
from relforge.errors import ConfigError, EnvironmentFault
from tests.conftest import EXAMPLE, Result

Run = Callable[..., Result]
REGISTRY = "ghcr.io/acme/builder:cuda13.0"


@pytest.mark.parametrize(
    ("policy", "present", "name", "pulled"),
    [
        ("missing", False, REGISTRY, True),
        ("missing", True, REGISTRY, False),
        ("always", True, REGISTRY, True),
        ("never", False, REGISTRY, False),
        # what `relforge builder-image` makes exists nowhere else: made, never pulled
        ("missing", False, "relforge/builder:bookworm", False),
        ("always", True, "relforge/builder-base:bookworm", False),
    ],
)
def test_the_pull_policy(policy: str, present: bool, name: str, pulled: bool) -> None:
    assert wants_pull(policy, present, name) is pulled  # type: ignore[arg-type]  # parametrized literals


def test_a_registry_without_the_image_is_the_matrixs_fault_one_out_of_reach_the_machines() -> None:
    absent = _pull_error(REGISTRY, RuntimeError("manifest unknown: manifest unknown"))
    assert isinstance(absent, ConfigError) and absent.exit_code == 2
    assert "the registry has no such image" in absent.message
    refused = _pull_error(REGISTRY, RuntimeError("pull access denied for acme/builder"))
    assert isinstance(refused, ConfigError)
    down = _pull_error(REGISTRY, RuntimeError('Get "https://ghcr.io/v2/": dial tcp: refused'))
    assert isinstance(down, EnvironmentFault) and down.exit_code == 6
    assert "docker login" in (down.hint or "")


@pytest.mark.parametrize("builder", ["auto", "host"])
def test_pull_is_only_for_the_docker_builder(run: Run, builder: str) -> None:
    result = run("build", str(EXAMPLE), "-r", "1.0", "--builder", builder, "--pull", "always")
    assert result.code == 2, result.err
    assert "--pull always needs --builder docker" in result.err and "Traceback" not in result.err
