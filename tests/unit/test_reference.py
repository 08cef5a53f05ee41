"""The generated reference (docs/reference/) is current, and the matrix's JSON Schema accepts
every matrix relforge ships and refuses what the loader refuses for its shape."""

from __future__ import annotations

import copy
import datetime
import difflib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from relforge.cli import cli
from relforge.errors import ConfigError
from relforge.init import StarterRequest, plan_starter, read_project
from relforge.matrix.lint import RULES
from relforge.matrix.load import load_matrix
from relforge.reference import reference_pages, write_reference
from relforge.reference.links import check_link
from relforge.validate.checklist import CHECKS
from tests.conftest import SMALL, Run, Write

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "docs" / "reference"
SCHEMA = REFERENCE / "matrix.schema.json"


class _TextDates(yaml.SafeLoader):
    """YAML as an editor's language server reads it: dates stay strings (YAML 1.2 has no
    timestamp type), so they can be checked as JSON."""


_TextDates.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _yaml(text: str) -> Any:
    return yaml.load(text, Loader=_TextDates)


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _errors(validator: jsonschema.Draft202012Validator, document: Any) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(document)
    ]


# --- the pages are current ---------------------------------------------------------------------


def test_every_generated_page_is_current(tmp_path: Path) -> None:
    write_reference(tmp_path, cli)
    fresh = {p.name: p.read_text(encoding="utf-8") for p in tmp_path.iterdir()}
    committed = {p.name: p.read_text(encoding="utf-8") for p in REFERENCE.iterdir()}
    stale = sorted(n for n in fresh if committed.get(n) != fresh[n])
    diff = "".join(
        difflib.unified_diff(
            committed.get(stale[0], "").splitlines(keepends=True),
            fresh[stale[0]].splitlines(keepends=True),
            n=1,
        )
        if stale
        else []
    )
    assert not stale, f"docs/reference/{', '.join(stale)} out of date: run `make docs`\n{diff}"
    assert set(committed) == set(fresh), "docs/reference/ holds files no generator writes"


def test_a_stale_page_is_noticed_and_rewritten(tmp_path: Path) -> None:
    write_reference(tmp_path, cli)
    page = tmp_path / "checks.md"
    page.write_text(page.read_text().replace("RF-V043", "RF-V999"))
    assert write_reference(tmp_path, cli) == [page]
    assert "RF-V043" in page.read_text() and write_reference(tmp_path, cli) == []


def test_the_pages_name_every_check_rule_command_and_exit_code() -> None:
    pages = reference_pages(cli)
    assert len(CHECKS) > 30 and len(RULES) >= 10
    for check_id in CHECKS:
        assert (
            f"### {check_id} {CHECKS[check_id].name} {{#{check_id.lower()}}}" in pages["checks.md"]
        )
    for rule_id in RULES:
        assert f"{{#{rule_id.lower()}}}" in pages["lint.md"]
    for name in ("relforge matrix lint", "relforge promote", "relforge verify", "relforge site"):
        assert f"## {name} {{#{name.replace(' ', '-')}}}" in pages["commands.md"]
    assert "Usage: relforge matrix list [OPTIONS] FILE" in pages["commands.md"]
    # as `relforge … --help` prints it, whatever ran before (click caches the help option)
    assert "\n  --help " not in pages["commands.md"] and "  -h, --help  " in pages["commands.md"]
    for code in range(7):
        assert f"\n| {code} | " in pages["exit-codes.md"]
    assert "| `EnvironmentFault` | 6 | environment fault |" in pages["exit-codes.md"]
    # every key the loader accepts has a row, with its doc
    assert "| `s3_part_size_mb` | integer | `8` | size (MiB, at least 5)" in pages["matrix.md"]
    assert "At: `releases.<X.Y>.accelerators.<name>`." in pages["matrix.md"]


def test_a_check_link_points_at_an_anchor_that_exists() -> None:
    pages = reference_pages(cli)
    for check_id in [*CHECKS, *RULES]:
        page, _, anchor = check_link(check_id).partition("#")
        assert f"{{#{anchor}}}" in pages[Path(page).name], check_id


def test_a_failing_lint_links_its_rule_entry(run: Run, write: Write) -> None:
    broken = write(
        SMALL.replace(
            "    include: []\n", "    include: []\n    pypi_default: {windows-x86_64: cu130}\n"
        )
    )
    result = run("matrix", "lint", str(broken))
    assert result.code == 4
    link = "docs/reference/lint.md#rf-l004"
    assert f"hint: RF-L004 is explained at {link}; warnings do not fail" in result.err
    page, _, anchor = link.partition("#")
    assert f"{{#{anchor}}}" in (REPO / page).read_text(encoding="utf-8")


# --- the JSON Schema ---------------------------------------------------------------------------


def _shipped_matrices() -> list[Path]:
    found = sorted((REPO / "matrix").glob("*.yaml")) + sorted((REPO / "examples").rglob("*.yaml"))
    return [p for p in found if "releases" in _yaml(p.read_text(encoding="utf-8"))]


@pytest.mark.parametrize("path", _shipped_matrices(), ids=lambda p: p.name)
def test_every_shipped_matrix_fits_the_schema(
    validator: jsonschema.Draft202012Validator, path: Path
) -> None:
    load_matrix(path)  # the loader takes it too
    assert _errors(validator, _yaml(path.read_text(encoding="utf-8"))) == []


def test_check_jsonschema_reads_the_yaml_the_same_way(tmp_path: Path) -> None:
    # another YAML reader (check-jsonschema's) agrees: dates, quoted versions and all
    bad = tmp_path / "bad.yaml"
    bad.write_text(SMALL.replace("  name: demo\n", "  name: demo\n  nmae: typo\n"))
    argv = [str(Path(sys.executable).with_name("check-jsonschema")), "--schemafile", str(SCHEMA)]
    good = subprocess.run(
        [*argv, *map(str, _shipped_matrices())], capture_output=True, text=True, check=False
    )
    assert good.returncode == 0, good.stdout + good.stderr
    refused = subprocess.run([*argv, str(bad)], capture_output=True, text=True, check=False)
    assert refused.returncode == 1 and "'nmae' was unexpected" in refused.stdout


def test_the_shipped_matrices_are_found() -> None:
    assert {p.name for p in _shipped_matrices()} >= {"example.yaml", "pytorch.yaml"}


@pytest.mark.parametrize("with_cuda", [False, True])
def test_the_init_starter_fits_the_schema(
    validator: jsonschema.Draft202012Validator, tmp_path: Path, with_cuda: bool
) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "hello"\n', encoding="utf-8")
    if with_cuda:
        (tmp_path / "kernel.cu").write_text("__global__ void k() {}\n", encoding="utf-8")
    request = StarterRequest(
        facts=read_project(tmp_path),
        path=tmp_path / "matrix" / "hello.yaml",
        root=tmp_path,
        download_url="https://download.example.org" if with_cuda else "",
        today=datetime.date(2026, 11, 23),
        available=lambda python: True,
    )
    starter = plan_starter(request)
    assert _errors(validator, _yaml(starter.text)) == []


def test_the_small_test_matrix_fits_the_schema(validator: jsonschema.Draft202012Validator) -> None:
    assert _errors(validator, _yaml(SMALL)) == []


def _change(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of `document` with the key at dotted `path` set to `value`."""
    out = copy.deepcopy(document)
    *parents, last = path.split("/")
    node = out
    for key in parents:
        node = node[key]
    node[last] = value
    return out


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("project/nmae", "x", "Additional properties are not allowed ('nmae' was unexpected)"),
        ("releases/1.0/platforms/linux-x86_64/cxx11abi", True, "'cxx11abi' was unexpected"),
        ("releases/1.0/accelerators/cu128/kind", "cudaa", "is not one of"),
        ("releases/1.0/platforms/linux-x86_64/cxx11_abi", "yes", "is not of type 'boolean'"),
        ("project/size_limit_mb", "100", "is not of type 'integer'"),
        ("releases/1.0/python", "3.12", "is not of type 'array'"),
        ("publishing", {"mirrors": [{"name": "m"}]}, "'url' is a required property"),
        ("releases/1.0/exclude", [{"match": {}, "reason": "r"}], "should be non-empty"),
        ("releases/10", {"python": ["3.12"]}, "does not match"),
    ],
)
def test_the_schema_refuses_what_the_loader_refuses(
    validator: jsonschema.Draft202012Validator,
    tmp_path: Path,
    path: str,
    value: Any,
    message: str,
) -> None:
    bad = _change(_yaml(SMALL), path, value)
    found = _errors(validator, bad)
    assert any(message in e for e in found), found
    file = tmp_path / "m.yaml"
    file.write_text(yaml.safe_dump(bad), encoding="utf-8")
    with pytest.raises(ConfigError):
        load_matrix(file)


def test_a_release_that_extends_another_may_leave_out_and_delete_keys(
    validator: jsonschema.Draft202012Validator, tmp_path: Path
) -> None:
    document = _yaml(SMALL)
    document["releases"]["1.2"] = {
        "extends": "1.0",
        "python": ["3.12"],
        "libtorch": None,
        "platforms": {"windows-x86_64": {"cxx11_abi": None}},
    }
    assert _errors(validator, document) == []
    file = tmp_path / "m.yaml"
    file.write_text(yaml.safe_dump(document), encoding="utf-8")
    release = load_matrix(file).release("1.2")
    assert release.libtorch is None and release.platforms["windows-x86_64"].cxx11_abi
    # without `extends` the same release is incomplete, for the schema as for the loader
    del document["releases"]["1.2"]["extends"]
    assert any("'accelerators' is a required property" in e for e in _errors(validator, document))
    file.write_text(yaml.safe_dump(document), encoding="utf-8")
    with pytest.raises(ConfigError):
        load_matrix(file)


def test_the_schema_documents_each_key_for_editors() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    build = schema["$defs"]["Build"]["properties"]
    assert build["timeout_minutes"] == {
        "description": "a cell's build is stopped after",
        "type": "integer",
        "default": 120,
    }
    assert re.search(r"yaml-language-server: \$schema=", (REFERENCE / "matrix.md").read_text())
