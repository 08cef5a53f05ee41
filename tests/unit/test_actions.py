"""What a command tells GitHub Actions: annotations at the file:line of an error or a finding,
escaped by GitHub's rules, the step summary; and nothing of it outside Actions."""

from __future__ import annotations

from pathlib import Path

import pytest

from relforge.actions import command, escape_data, escape_property
from tests.conftest import EXAMPLE, SMALL, Run, Write
from tests.unit.test_lint import CASES


@pytest.fixture
def summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(path))
    return path


def _commands(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("::")]


def test_escaping_follows_githubs_rules() -> None:
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    # a message keeps `:` and `,`; a property (here the title) does not
    assert command("warning", "x: y, z", {"file": "m.yaml", "line": 3, "title": "A: b"}) == (
        "::warning file=m.yaml,line=3,title=A%3A b::x: y, z"
    )
    # unknown places (line 0, no file) are left out rather than written as empty properties
    assert command("error", "m", {"file": None, "line": 0, "col": 0}) == "::error::m"


def test_a_config_error_is_annotated_at_its_file_and_line(
    run: Run, write: Write, summary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    path = write(SMALL.replace("kind: cuda", "kind: gpu"))
    line = SMALL.splitlines().index("        kind: cuda") + 1
    result = run("matrix", "list", str(path), "-r", "1.0", "--format", "json")
    assert result.code == 2 and result.out == ""
    # the paragraph is unchanged, the annotation comes after it
    assert result.err.startswith(f"config error: {path}:{line}:15: releases.1.0.accelerators")
    [annotation] = _commands(result.err)
    assert annotation.startswith(
        f"::error file={escape_property(str(path))},line={line},col=15,"
        "title=relforge%3A config error::releases.1.0.accelerators.cu128.kind: 'gpu' is not one of"
    )


def test_a_message_with_a_percent_sign_and_a_hint_stays_one_annotation(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = run("matrix", "list", str(EXAMPLE), "-r", "1.0", "--select", "pyton%>=3.12")
    assert result.code == 2
    assert "--select 'pyton%>=3.12': unknown cell field 'pyton%'" in result.err  # for people
    [annotation] = _commands(result.err)
    assert annotation.startswith(
        "::error title=relforge%3A usage error::--select 'pyton%25>=3.12': unknown cell field"
    )
    # the hint's line break is escaped: one line, which the runner shows as two
    assert "%0Ahint: e.g. --select 'os=linux" in annotation


def test_lint_warnings_are_warning_annotations_at_their_line(
    run: Run, write: Write, summary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    path = write(CASES["RF-L001"])
    line = CASES["RF-L001"].splitlines().index('    python: ["3.8", "3.11"]') + 1
    result = run("matrix", "lint", str(path))
    assert result.code == 0, result.err  # warnings do not fail the lint
    [annotation] = [c for c in _commands(result.err) if "RF-L001" in c]
    assert (
        annotation.startswith(f"::warning file={escape_property(str(path))},line={line},")
        and ",title=RF-L001 python-past-eol::1.0: " in annotation
    )
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("### Matrix lint\n\n- **RF-L001** (warning) 1.0:")


def test_outside_actions_nothing_is_added(
    run: Run, write: Write, summary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "false")
    bad = run("matrix", "list", str(write(SMALL.replace("kind: cuda", "kind: gpu"))), "-r", "1.0")
    assert bad.code == 2 and len(bad.err.strip().splitlines()) <= 2
    lint = run("matrix", "lint", str(write(CASES["RF-L001"], "lint.yaml")))
    listed = run("matrix", "list", str(EXAMPLE), "-r", "1.0")
    for result in (bad, lint, listed):
        assert "::" not in result.out + result.err
    # the step summary does not depend on Actions: only on $GITHUB_STEP_SUMMARY
    assert "### Matrix lint" in summary.read_text(encoding="utf-8")
