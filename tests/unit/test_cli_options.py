"""Options shared by the commands (relforge.cli.options) and the stage entry points the CLI
calls: one declaration per flag, one date parser, one dry-run line, and the same answers from
every command that takes them."""

from __future__ import annotations

import ast
import dataclasses
import datetime
import importlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from relforge.cli.options import dry_run_note, parse_date, print_outcome, stop_for_dry_run
from relforge.errors import UsageError
from relforge.manifest import ArtifactManifest, ManifestEntry
from relforge.validate.releaserun import ArtifactSource, build_date
from tests.conftest import EXAMPLE, REPO, Result

Run = Callable[..., Result]

CLI = REPO / "src" / "relforge" / "cli"
SHARED = {
    "--format",
    "--release",
    "--select",
    "--date",
    "--execute",
    "--workers",
    "--jobs",
    "--lease-wait",
    "--no-wait",
    "--lease-ttl",
}


def _declared_flags(source: str) -> list[tuple[int, str]]:
    """(line, flag) of every `click.option("--flag", …)` call in a module's source."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "option"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "click"
        ):
            for arg in node.args:
                if isinstance(arg, ast.Constant) and str(arg.value).startswith("-"):
                    found.append((node.lineno, str(arg.value)))
    return found


def test_shared_flags_are_declared_only_in_options() -> None:
    modules = sorted(CLI.glob("*.py"))
    assert len(modules) > 10  # the scan reads the real CLI package
    stray = [
        f"{p.name}:{line}: {flag}"
        for p in modules
        if p.name != "options.py"
        for line, flag in _declared_flags(p.read_text(encoding="utf-8"))
        if flag in SHARED
    ]
    assert stray == []
    # The scan sees a re-declaration when there is one (it would not pass vacuously).
    again = '@click.option("--workers", type=int)\n@click.option(\n    "--format", "fmt")\n'
    again += "def f() -> None: ..."
    assert _declared_flags(again) == [(1, "--workers"), (2, "--format")]


@pytest.mark.parametrize("text", ["2025-13-01", "15.10.2025", "", "2025-10-15T00:00", "today"])
def test_parse_date_refuses_what_is_not_a_day(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_date(text)
    assert caught.value.exit_code == 2
    assert caught.value.key == "--date"
    assert repr(text) in str(caught.value)


def test_parse_date_reads_a_day_and_nothing() -> None:
    assert parse_date("2025-10-15") == datetime.date(2025, 10, 15)
    assert parse_date(None) is None


def test_one_date_parser_answers_for_every_command(run: Run, tmp_path: Path) -> None:
    listed = run("matrix", "list", str(EXAMPLE), "--release", "1.0", "--date", "2025-02-30")
    dist = ("--dist", str(tmp_path))
    validated = run("validate", str(EXAMPLE), "--release", "1.0", *dist, "--date", "2025-02-30")
    assert listed.code == validated.code == 2
    assert "'2025-02-30' is not a date like 2025-10-15" in listed.err
    assert listed.err == validated.err
    assert "Traceback" not in listed.err + validated.err


def test_dry_run_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert stop_for_dry_run(True) is False
    assert capsys.readouterr().out == ""
    assert stop_for_dry_run(False) is True
    assert capsys.readouterr().out == "dry run: nothing was written; add --execute to apply\n"
    assert stop_for_dry_run(False, nothing="uploaded", to="upload") is True
    assert capsys.readouterr().out == dry_run_note("uploaded", "upload") + "\n"
    assert dry_run_note("uploaded", "upload") == (
        "dry run: nothing was uploaded; add --execute to upload"
    )


@dataclasses.dataclass(frozen=True)
class Done:
    """An outcome as a stage returns it."""

    executed: bool

    def lines(self) -> list[str]:
        return ["wrote 2 file(s)"]

    def summary_markdown(self) -> str:
        return "wrote 2 file(s)\n\n- `a`\n- `b`"

    def to_json(self) -> dict[str, Any]:
        return {"written": 2}  # print_outcome versions it


@pytest.mark.parametrize("executed", [False, True])
def test_an_outcome_in_json_keeps_stdout_to_the_document(
    executed: bool,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    print_outcome(Done(executed=executed), fmt="json", title="relforge demo")
    out, err = capsys.readouterr()
    assert json.loads(out) == {"schema_version": 1, "written": 2}
    assert err == ("wrote 2 file(s)\n" if executed else dry_run_note() + "\n")
    # the step summary says what a run did; a dry run changes nothing and writes none
    written = "### relforge demo\n\nwrote 2 file(s)\n\n- `a`\n- `b`\n\n"
    assert (summary.read_text() if summary.exists() else "") == (written if executed else "")


def test_an_outcome_in_text_is_its_lines_or_the_dry_run_note(
    capsys: pytest.CaptureFixture[str],
) -> None:
    print_outcome(Done(executed=True), fmt="text", title="relforge demo")
    assert capsys.readouterr() == ("wrote 2 file(s)\n", "")
    note = dry_run_note("uploaded", "upload")
    print_outcome(Done(executed=False), fmt="text", title="relforge demo", note=note)
    assert capsys.readouterr() == (note + "\n", "")


@pytest.mark.parametrize(
    "command",
    [
        ("validate", str(EXAMPLE), "--dist", "dist"),  # --manifest: the manifest's release
        ("build", str(EXAMPLE)),
        ("workflows", "generate", str(EXAMPLE), "--out", "wf"),
    ],
)
def test_release_is_required_everywhere(run: Run, command: tuple[str, ...]) -> None:
    result = run(*command)
    assert result.code == 2
    assert "--release" in result.err


def test_help_keeps_each_commands_own_words(run: Run) -> None:
    """Shared declarations, but each command still says what its option means to it."""
    helps = {
        ("build",): "Release X.Y to build.",
        ("validate",): "Release X.Y whose cells are expected (default: the --manifest's;",
        ("matrix", "list"): "Release X.Y to expand (default: the newest; it says which).",
        ("deps", "mirror"): "Apply the plan (default: a dry run).",
        ("verify",): "Apply the repair (the default is a dry run).",
        ("publish",): "Apply the plan (the default is a dry run that writes nothing).",
    }
    for command, words in helps.items():
        result = run(*command, "--help")
        assert result.code == 0, command
        assert words in " ".join(result.out.split()), command


# ---- the validate stage's own entry points ------------------------------------------------


@pytest.mark.parametrize("package", ["relforge.validate", "relforge.promote"])
def test_stage_packages_name_their_entry_points(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__
    for name in module.__all__:
        entry = getattr(module, name)
        # functions and classes are the names they are exported as; constants (CHECKS) have none
        assert getattr(entry, "__name__", name) == name
        assert name in (module.__doc__ or "")
    with pytest.raises(AttributeError):
        _ = module.not_an_entry_point


def test_artifact_source_is_exactly_one(tmp_path: Path) -> None:
    for given in (
        {"dist": None, "manifest_path": None, "index_url": None},
        {"dist": tmp_path, "manifest_path": tmp_path / "m.json", "index_url": None},
        {"dist": tmp_path, "manifest_path": None, "index_url": "http://127.0.0.1:1/simple"},
    ):
        with pytest.raises(UsageError, match="exactly one of"):
            ArtifactSource.choose(**given)
    chosen = ArtifactSource.choose(dist=tmp_path, manifest_path=None, index_url=None)
    assert chosen.dist == tmp_path and chosen.manifest_path is None


def _manifest(*versions: str) -> ArtifactManifest:
    entries = [
        ManifestEntry(
            cell_id=f"cell-{i}",
            file=f"demo-{v}-py3-none-any.whl",
            size=1,
            sha256="0" * 64,
            version=v,
            package_type="wheel",
            variant="cpu",
            upload_subfolder="cpu",
        )
        for i, v in enumerate(versions)
    ]
    return ArtifactManifest(project="demo", release="1.0", channel="nightly").with_entries(entries)


def test_build_date_is_the_one_day_all_nightlies_share() -> None:
    same = _manifest("1.0.0.dev20251014+cpu", "1.0.0.dev20251014+cu128")
    assert build_date(same) == datetime.date(2025, 10, 14)
    # Two days, a final version, a dev number that is no date: no single build day.
    assert build_date(_manifest("1.0.0.dev20251014+cpu", "1.0.0.dev20251015+cu128")) is None
    assert build_date(_manifest("1.0.0.dev20251014+cpu", "1.0.0+cu128")) is None
    assert build_date(_manifest("1.0.0.dev20251340+cpu")) is None
    assert build_date(_manifest("not a version")) is None
