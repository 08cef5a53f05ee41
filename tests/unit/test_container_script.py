"""The script a builder container runs (in_container.sh) is found where the Docker builder looks
for it, in the installed package as in the checkout, and speaks the exit codes the builder reads.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

from relforge.builders.backends.container import REQUIRES_EXIT, SKIP_EXIT, container_script
from relforge.tomlcompat import tomllib

REPO = Path(__file__).resolve().parents[2]


def test_the_docker_builder_finds_its_container_script() -> None:
    script = container_script()
    assert script.startswith("#!/bin/sh")
    exits = {int(code) for code in re.findall(r"^\s*exit (\d+)$", script, re.MULTILINE)}
    assert {SKIP_EXIT, REQUIRES_EXIT} <= exits


def test_the_package_data_ships_the_script_beside_the_module_that_reads_it() -> None:
    """pyproject's package data (what a built relforge wheel, and so a CI job, has) holds the
    script in the package of the module that reads it."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["relforge"]
    package = container_script.__module__.rpartition(".")[0]
    script = Path(*package.split(".")[1:], "in_container.sh")
    assert (REPO / "src" / "relforge" / script).is_file()
    assert any(fnmatch.fnmatch(script.as_posix(), pattern) for pattern in patterns), patterns
