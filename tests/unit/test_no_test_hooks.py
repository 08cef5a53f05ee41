"""No production module reads a test hook: a variable named RELFORGE_TEST_* belongs to the tests
(tests/pacedcli.py slows a run down through the store registry instead)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "relforge"
PREFIX = "RELFORGE_TEST_"


def hooks_in(source: str) -> list[int]:
    """The lines of `source` that name a RELFORGE_TEST_* variable (in any string)."""
    return sorted(
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and PREFIX in node.value
    )


def test_no_module_under_src_names_a_test_variable() -> None:
    found = [
        f"{path.relative_to(SRC.parent)}:{line}"
        for path in sorted(SRC.rglob("*.py"))
        for line in hooks_in(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "production code reads test hooks:\n" + "\n".join(found)


def test_the_scan_finds_a_hook_however_it_is_read() -> None:
    source = "\n".join(
        [
            "import os",
            'DELAY = "RELFORGE_TEST_TRANSFER_DELAY"',
            'x = os.environ.get("RELFORGE_TEST_PAGE_DELAY", "0")',
            'y = os.getenv(f"RELFORGE_TEST_{name}")',
            'z = os.environ["RELFORGE_DEBUG"]',
        ]
    )
    assert hooks_in(source) == [2, 3, 4]
