"""Attacks on dependency axes: an ordering term (`numpy>=2`) on an axis whose values are not all
versions (`2.x`) could never match those cells; it is an error, never a silent no-match."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.axiswheels import platforms
from relforge.errors import ConfigError
from relforge.matrix.load import load_matrix
from tests.conftest import Result

ROOT = Path(__file__).resolve().parents[2]
NUMPY = ROOT / "matrix" / "numpy-abi.yaml"


@pytest.mark.parametrize("select", ["numpy>=2", "numpy<2"])
def test_comparing_an_axis_that_is_no_version_is_a_usage_error(
    run: Callable[..., Result], select: str
) -> None:
    result = run("matrix", "list", str(NUMPY), "--release", "1.0", "--select", select)
    assert result.code == 2, result
    assert "'2.x' is not a version" in result.err and "numpy=2.x" in result.err


def test_an_exclude_rule_comparing_such_an_axis_is_a_load_error(
    write: Callable[[str], Path],
) -> None:
    text = NUMPY.read_text().replace("../examples/numpy-abi", str(ROOT / "examples/numpy-abi"))
    rule = '    exclude:\n      - match: {numpy: ">=2", python: "3.11"}\n        reason: unwanted\n'
    path = write(text.replace("    pypi_default:\n", rule + "    pypi_default:\n"))
    with pytest.raises(ConfigError) as info:
        load_matrix(path)
    message = info.value.render()
    assert "'2.x' is not a version" in message and "exclude[0]" in message, message


def test_comparing_an_axis_of_versions_still_works(run: Callable[..., Result]) -> None:
    ok = run("matrix", "list", str(NUMPY), "--release", "1.0", "--select", "numpy=2.x")
    assert ok.code == 0 and "numpy2.x" in ok.out and "numpy1.26" not in ok.out


@pytest.mark.parametrize("axis", ["requires", "wheels", "install"])
def test_an_axis_whose_variable_relforge_sets_itself_is_a_load_error(
    write: Callable[[str], Path], axis: str
) -> None:
    """RELFORGE_AXIS_REQUIRES, _WHEELS and _INSTALL carry relforge's own values: an axis of
    that name would lose its value to them in the build's environment."""
    text = NUMPY.read_text().replace("../examples/numpy-abi", str(ROOT / "examples/numpy-abi"))
    text = text.replace("      numpy:\n", f"      {axis}:\n").replace("{numpy_", f"{{{axis}_")
    with pytest.raises(ConfigError) as info:
        load_matrix(write(text))
    message = info.value.render()
    assert f"axes.{axis}" in message and f"RELFORGE_AXIS_{axis.upper()}" in message, message


def test_explaining_an_id_without_its_axis_value_names_the_real_ids(
    run: Callable[..., Result],
) -> None:
    """`…-py3.12-cpu` of a release with a numpy axis is no cell: the answer must say so and
    name the ids, not claim cpu is not built on the platform it is built on."""
    cell = "wheel-linux-x86_64-py3.12-cpu"
    result = run("matrix", "explain", str(NUMPY), "--release", "1.0", cell)
    text = result.out + result.err
    assert "(it is built on linux-x86_64)" not in text, text
    assert result.code == 2, result
    assert "numpy" in result.err
    assert f"{cell}-numpy1.26" in result.err and f"{cell}-numpy2.x" in result.err


def test_a_macos_cell_accepts_the_dependency_wheels_of_older_macos() -> None:
    """pip download takes each --platform literally: a macOS 14 cell must also ask for the
    macOS 11 (and universal2) wheels it can use, as numpy publishes them, or the fetch fails."""
    tags = platforms("macosx_14_0_arm64")
    assert tags[0] == "macosx_14_0_arm64"
    assert "macosx_11_0_arm64" in tags and "macosx_11_0_universal2" in tags
    assert "macosx_15_0_arm64" not in tags and not any("x86_64" in t for t in tags)
    assert "macosx_10_9_x86_64" in platforms("macosx_10_13_x86_64")


def test_a_musllinux_cell_accepts_the_dependency_wheels_of_older_musl() -> None:
    tags = platforms("musllinux_1_2_x86_64")
    assert tags == ["musllinux_1_2_x86_64", "musllinux_1_1_x86_64", "musllinux_1_0_x86_64"]
