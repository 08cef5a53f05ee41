"""JSON for machines is written by one helper, which versions it (relforge.output)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from relforge.output import print_json, versioned

CLI = Path(__file__).resolve().parents[2] / "src" / "relforge" / "cli"


def test_a_document_gets_schema_version_first_and_keeps_its_own() -> None:
    assert list(versioned({"b": 1, "a": 2})) == ["schema_version", "b", "a"]
    assert versioned({"a": 1}, schema_version=3)["schema_version"] == 3
    # a document that names its version (the manifest's shape) is not overridden
    assert versioned({"schema_version": 2, "a": 1}) == {"schema_version": 2, "a": 1}


def test_print_json_writes_the_versioned_document(capsys: pytest.CaptureFixture[str]) -> None:
    print_json({"cells": []})
    assert json.loads(capsys.readouterr().out) == {"schema_version": 1, "cells": []}


def test_the_cli_writes_json_only_through_the_helper() -> None:
    # a json.dumps in a command would print a document with no schema_version
    offenders = []
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and (node.value.id, node.attr) in {("json", "dumps"), ("json", "dump")}
            ):
                offenders.append(f"{path.name}:{node.lineno}")
    assert not offenders, offenders
