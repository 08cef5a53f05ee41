"""Every module under validate/ that defines a check is in checklist.CHECK_MODULES (a check
module nobody imports would never run), and the list names no module without checks."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from pathlib import Path

from relforge.validate.checklist import CHECK_MODULES, CHECKS

VALIDATE = Path(__file__).resolve().parents[2] / "src" / "relforge" / "validate"
# the registry's own functions: `X = register(ID, …)` and `@artifact(ID, …)` define a check
DEFINERS = {"register", "artifact"}


def defines_checks(source: str) -> bool:
    """Whether the module calls register(…) or artifact(…) where it defines things (at module
    level or as a decorator), not inside a function (the registry's own plumbing)."""

    def calls(nodes: Sequence[ast.stmt | ast.expr]) -> Iterator[ast.Call]:
        for node in nodes:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield from calls(node.decorator_list)
                continue
            if isinstance(node, ast.Call):
                yield node
            yield from calls(
                [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt | ast.expr)]
            )

    for call in calls(ast.parse(source).body):
        func = call.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if name in DEFINERS:
            return True
    return False


def test_every_module_that_defines_checks_is_listed() -> None:
    defining = {
        f"relforge.validate.{path.stem}"
        for path in sorted(VALIDATE.glob("*.py"))
        if path.stem != "checkregistry" and defines_checks(path.read_text(encoding="utf-8"))
    }
    listed = {module.__name__ for module in CHECK_MODULES}
    assert defining - listed == set(), "define checks but are not in CHECK_MODULES"
    assert listed - defining == set(), "listed in CHECK_MODULES but define no check"
    assert len(listed) == len(CHECK_MODULES)


def test_the_scan_sees_both_ways_of_defining_a_check() -> None:
    assert defines_checks('X = register("RF-V999", "x", "cell", "doc")')
    assert defines_checks('@artifact("RF-V998", "y", "doc")\ndef f(facts, expect): ...')
    assert defines_checks('import r\n@r.artifact("RF-V997", "z", "doc")\ndef f(a, b): ...')
    assert not defines_checks("from relforge.validate.checkregistry import register, artifact")
    assert defines_checks('@artifact(DEVICE_CODE, "w", "doc")\ndef f(a, b): ...')
    assert not defines_checks("def artifact(i):\n    spec = register(i, 'n', 'cell', 'doc')")


def test_the_listed_modules_register_every_check_id_once() -> None:
    assert len(CHECKS) == len(set(CHECKS)) and "RF-V060" in CHECKS and "RF-R005" in CHECKS
