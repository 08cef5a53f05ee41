"""The starter matrix comes from a packaged Jinja template (templates/init/starter.yaml.j2)."""

from __future__ import annotations

import datetime
import fnmatch
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from relforge.init.machine import HostPlatform
from relforge.init.startermatrix import (
    PACKAGE_TEMPLATES,
    STARTER_TEMPLATE,
    AxisChoice,
    CudaChoice,
    StarterLayout,
    render_starter,
)
from relforge.tomlcompat import tomllib

REPO = Path(__file__).resolve().parents[2]


def layout(**changes: Any) -> StarterLayout:
    base: dict[str, Any] = {
        "name": "demo",
        "release": "2.1",
        "version": None,
        "date": datetime.date(2026, 5, 1),
        "pythons": ("3.11", "3.12"),
        "source": "..",
        "matrix_file": "relforge.yaml",
        "platform": HostPlatform(arch="aarch64", glibc=(2, 28), from_host=False),
        "cpu_image": "img:cpu",
    }
    return StarterLayout(**{**base, **changes})


def test_the_template_is_in_the_wheel() -> None:
    """pyproject's package-data takes the template into the wheel."""
    globs = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["relforge"]
    path = PurePosixPath(PACKAGE_TEMPLATES, STARTER_TEMPLATE)
    assert (REPO / "src" / "relforge" / path).is_file()
    assert any(fnmatch.fnmatch(str(path), g) for g in globs), globs  # setuptools' globs


def test_every_value_lands_where_the_matrix_reads_it() -> None:
    cuda = CudaChoice(
        variant="cu130", version="13.0.88", arch_list=("9.0+PTX",), image="img:cu", why="w"
    )
    torch = AxisChoice(
        dependency="torch", value="2.13", install=("torch==2.13.*",), requires=("torch",), why="w"
    )
    text = render_starter(
        layout(cuda=cuda, axes=(torch,), requires_python='>=3.11,!="3.12"', version="2.1.3")
    )
    data = yaml.safe_load(text)
    release = data["releases"]["2.1"]
    assert data["project"]["name"] == "demo" and release["version"] == "2.1.3"
    assert release["requires_python"] == '>=3.11,!="3.12"'  # quoted through the json filter
    assert release["platforms"]["linux-aarch64"]["test_runners"] == {
        "cpu": "ubuntu-24.04-arm",
        "cuda": "linux-gpu",
    }
    assert release["accelerators"]["cu130"]["arch_list"] == ["9.0+PTX"]
    assert release["axes"]["torch"]["2.13"]["install"] == ["torch==2.13.*"]
    assert "<{" not in text and "<%" not in text and text.endswith("PyPI\n")


def test_a_plain_layout_writes_no_optional_key() -> None:
    data = yaml.safe_load(render_starter(layout()))
    release = data["releases"]["2.1"]
    assert set(release) == {"date", "python", "platforms", "accelerators", "pypi_default"}
    assert set(release["accelerators"]) == {"cpu"} and "download_url" not in data["project"]
