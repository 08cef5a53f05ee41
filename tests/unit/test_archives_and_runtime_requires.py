"""Archive configs per platform (`libtorch.per_platform`) and per-release runtime requirements
(`runtime_requires`): what they expand to, and every bad input stopping with file:line:column."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.errors import ConfigError
from relforge.matrix.expand import expand_cells
from relforge.matrix.explain import explain_cell
from relforge.matrix.load import load_matrix
from tests.conftest import PYTORCH, SMALL, Result

Run = Callable[..., Result]

LIBTORCH = """\
    libtorch:
      platforms: [linux-x86_64]
      accelerators: [cpu, cu128]
      variants: [shared-with-deps, static-with-deps]
"""
TRITON = "triton==3.5.0; platform_system == 'Linux' and platform_machine == 'x86_64'"
RULE = f"""\
    runtime_requires:
      - match: {{package_type: wheel, accelerator: cuda}}
        add: ["{TRITON}"]
        reason: CUDA wheels use Triton
"""
ARCHIVES = """\
    libtorch:
      platforms: [linux-x86_64, windows-x86_64]
      accelerators: [cpu, cu128]
      variants: [shared-with-deps]
      per_platform:
        windows-x86_64: {configs: [release, debug], accelerators: [cpu]}
"""


def with_section(old: str, new: str) -> str:
    assert old in SMALL
    return SMALL.replace(old, new, 1)


def line_of(text: str, snippet: str) -> int:
    return text.count("\n", 0, text.index(snippet)) + 1


def test_windows_archives_get_release_and_debug(write: Callable[[str], Path]) -> None:
    matrix = load_matrix(write(with_section(LIBTORCH, ARCHIVES)))
    archives = [c for c in expand_cells(matrix, "1.0") if c.package_type == "archive"]
    assert [c.id for c in archives] == [
        "libtorch-linux-x86_64-cpu-shared-with-deps-release",
        "libtorch-linux-x86_64-cu128-shared-with-deps-release",
        "libtorch-windows-x86_64-cpu-shared-with-deps-release",
        "libtorch-windows-x86_64-cpu-shared-with-deps-debug",
    ]
    debug = archives[-1]
    assert (debug.libtorch_config, debug.env["LIBTORCH_CONFIG"]) == ("debug", "debug")
    assert debug.cxx11_abi is False  # the Windows platform's own
    explained = explain_cell(
        matrix, "1.0", "libtorch-windows-x86_64-cu128-shared-with-deps-release"
    )
    assert "not built for cu128 on windows-x86_64" in explained.summary
    where = explained.reasons[0].where
    assert where is not None and where.line == line_of(
        with_section(LIBTORCH, ARCHIVES), "windows-x86_64: {configs"
    )


def test_runtime_requires_are_written_once_and_reach_every_matching_wheel(
    write: Callable[[str], Path],
) -> None:
    text = with_section("    exclude:\n", RULE + "    exclude:\n")
    matrix = load_matrix(write(text))
    cells = {c.id: c for c in expand_cells(matrix, "1.0")}
    cuda = cells["wheel-linux-x86_64-py3.11-cu128"]
    assert cuda.extra_install_requires == (
        "nvidia-cudnn-cu12==9.10.2.21; platform_system == 'Linux'",
        TRITON,
    )
    assert cuda.env["RELFORGE_EXTRA_INSTALL_REQUIRES"].splitlines()[-1] == TRITON
    # Bundling libraries drops the nvidia pins, not the Python packages a rule adds.
    assert cells["wheel-windows-x86_64-py3.12-cu128"].extra_install_requires == (TRITON,)
    assert cells["wheel-linux-x86_64-py3.12-cu128-full"].extra_install_requires == (TRITON,)
    assert cells["wheel-linux-x86_64-py3.11-cpu"].extra_install_requires == ()
    assert all(c.extra_install_requires == () for c in cells.values() if c.package_type != "wheel")
    explained = explain_cell(matrix, "1.0", cuda.id)
    assert any(TRITON in r.text and "CUDA wheels use Triton" in r.text for r in explained.reasons)
    # A later release inherits the rule; its own list replaces it.
    newer = {c.id: c for c in expand_cells(matrix, "1.1")}
    assert newer["wheel-linux-x86_64-py3.13-cu130"].extra_install_requires == (TRITON,)


def test_a_rule_that_contradicts_a_variants_pin_is_refused(write: Callable[[str], Path]) -> None:
    rule = RULE.replace(TRITON, "nvidia-cudnn-cu12==9.1.0.70")
    text = with_section("    exclude:\n", rule + "    exclude:\n")
    matrix = load_matrix(write(text))
    with pytest.raises(ConfigError) as info:
        expand_cells(matrix, "1.0")
    message = info.value.render()
    assert "wheel-linux-x86_64-py3.11-cu128 would require both" in message
    assert "nvidia-cudnn-cu12==9.10.2.21" in message and "nvidia-cudnn-cu12==9.1.0.70" in message
    assert f"matrix.yaml:{line_of(text, 'add: [')}:" in message


CASES = [
    (
        "unknown-config",
        LIBTORCH,
        LIBTORCH + "      configs: [release, debg]\n",
        ["'debg' is not one of: release, debug", "did you mean 'debug'", "libtorch.configs[1]"],
        "debg",
    ),
    (
        "per-platform-of-a-platform-without-archives",
        LIBTORCH,
        LIBTORCH + "      per_platform: {windows-x86_64: {configs: [debug]}}\n",
        ["platform 'windows-x86_64' is not one of the archive platforms", "per_platform"],
        "per_platform",
    ),
    (
        "per-platform-unknown-key",
        LIBTORCH,
        LIBTORCH + "      per_platform: {linux-x86_64: {config: [debug]}}\n",
        ["unknown key 'config'", "did you mean 'configs'"],
        "per_platform",
    ),
    (
        "per-platform-undefined-variant",
        LIBTORCH,
        LIBTORCH + "      per_platform:\n        linux-x86_64: {accelerators: [cu999]}\n",
        ["accelerator variant 'cu999' is not defined", "per_platform.linux-x86_64"],
        "linux-x86_64: {accelerators",
    ),
    (
        "per-platform-empty-list",
        LIBTORCH,
        LIBTORCH + "      per_platform:\n        linux-x86_64: {configs: []}\n",
        ["must list at least one name", "per_platform.linux-x86_64.configs"],
        "linux-x86_64: {configs",
    ),
    (
        "requirement-not-pep508",
        "    exclude:\n",
        RULE.replace(TRITON, "triton=3.5") + "    exclude:\n",
        ["'triton=3.5' is not a PEP 508 requirement", "runtime_requires[0].add[0]"],
        "triton=3.5",
    ),
    (
        "requirement-with-a-control-character",  # YAML's \x1f: U+001F, which str.strip() drops
        "    exclude:\n",
        RULE.replace(TRITON, "triton==3.5.0\\x1f") + "    exclude:\n",
        ["is not a PEP 508 requirement", "runtime_requires[0].add[0]"],
        "triton==3.5.0",
    ),
    (
        "rule-without-reason",
        "    exclude:\n",
        RULE.replace("        reason: CUDA wheels use Triton\n", "") + "    exclude:\n",
        ["missing required key 'reason'", "runtime_requires[0]"],
        "- match: {package_type: wheel",
    ),
    (
        "rule-with-empty-reason",
        "    exclude:\n",
        RULE.replace("reason: CUDA wheels use Triton", "reason: ' '") + "    exclude:\n",
        ["every rule needs a reason", "runtime_requires[0]"],
        "reason: ' '",
    ),
    (
        "rule-adding-nothing",
        "    exclude:\n",
        RULE.replace(f'["{TRITON}"]', "[]") + "    exclude:\n",
        ["lists no requirement", "runtime_requires[0]"],
        "add: []",
    ),
    (
        "rule-naming-a-package-twice",
        "    exclude:\n",
        RULE.replace(f'["{TRITON}"]', '["triton==3.5.0", "Triton>=3"]') + "    exclude:\n",
        ["names a distribution twice"],
        "add: [",
    ),
    (
        "rule-with-unknown-match-field",
        "    exclude:\n",
        RULE.replace("accelerator: cuda", "acclerator: cuda") + "    exclude:\n",
        ["acclerator", "runtime_requires[0]"],
        "- match: {package_type: wheel",
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "words", "at"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_new_keys_name_place_and_key(
    write: Callable[[str], Path], old: str, new: str, words: list[str], at: str
) -> None:
    text = with_section(old, new)
    with pytest.raises(ConfigError) as info:
        load_matrix(write(text))
    message = info.value.render()
    for word in words:
        assert word in message, message
    assert f"matrix.yaml:{line_of(text, at)}:" in message, message
    assert info.value.exit_code == 2


def test_release_notes_name_a_changed_runtime_requirement(run: Run) -> None:
    result = run("matrix", "diff", str(PYTORCH), "--from", "2.8", "--to", "2.9")
    assert result.code == 0, result.err
    assert "- Runtime requirements: changed `triton==3.4.0` → `triton==3.5.0`." in result.out
    assert "| archive | windows-x86_64 | 0 | 8 | +8 |" in result.out
    assert "| wheel | linux-s390x | 0 | 7 | +7 |" in result.out
