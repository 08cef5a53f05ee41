"""The outcomes of `relforge yank`, `pypi stage`, `pypi upload` and `upstream update` give the
command everything it prints: the lines people read, versioned JSON (one shape for the dry run and
the run) and the markdown of the step summary."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest

from relforge.errors import Span
from relforge.forges.github import PullRequest
from relforge.manifest import ManifestEntry
from relforge.matrix import expand_cells, load_matrix
from relforge.output import SCHEMA_VERSION_KEY
from relforge.promote.channel import Placed
from relforge.promote.plans.yank import YankChange, YankOutcome, YankPlan
from relforge.promote.pypi.refusals import Limits
from relforge.promote.pypi.stage import StagePlan, UploadItem
from relforge.promote.pypi.steps import StageResult, UploadPlan, UploadResult
from relforge.stores.local import LocalStore
from relforge.upstream.model import SetPythons, UpstreamFinding, UpstreamSource
from relforge.upstream.pullrequest import PullRequestPlan
from relforge.upstream.releasecheck import UpstreamReport
from relforge.upstream.update import UpdatePlan
from relforge.upstream.updateoutcome import UpdateOutcome
from relforge.wheelversion import Rewritten
from tests.conftest import EXAMPLE

KEY = "whl/test/cpu/demo-1.0.1+cpu-py3-none-manylinux_2_28_x86_64.whl"
RELEASED = "whl/cpu/demo-1.0.1+cpu-py3-none-manylinux_2_28_x86_64.whl"


def _versioned(data: dict[str, Any]) -> dict[str, Any]:
    """The document's first key is its schema version, 1 (what a reader checks first)."""
    assert next(iter(data)) == SCHEMA_VERSION_KEY and data[SCHEMA_VERSION_KEY] == 1, list(data)
    return data


# ---- yank -------------------------------------------------------------------------------


def _yank(tmp_path: Path, *, undo: bool = False) -> YankPlan:
    after = None if undo else "bad ABI"
    files = (
        YankChange(channel="test", key=KEY, cell="cpu", before=None, after=after),
        YankChange(channel="release", key=RELEASED, cell="cpu", before="bad ABI", after=after),
    )
    return YankPlan(
        version="1.0.1",
        undo=undo,
        store=LocalStore(tmp_path),
        mirrors=(LocalStore(tmp_path / "mirror"),),
        files=files,
        views={},
    )


def test_a_yank_plan_lists_each_file_and_the_folders_reindexed(tmp_path: Path) -> None:
    plan = _yank(tmp_path)
    assert plan.lines() == [
        f"yank 1.0.1 in file://{tmp_path}: 2 file(s)",
        f"  + test: {KEY} → yanked: 'bad ABI'",
        f"  = release: {RELEASED} (already yanked)",
        "  pages of test: whl/test/cpu",
        "  pages of release: whl/cpu",
    ]
    undo = _yank(tmp_path, undo=True).lines()
    assert undo[1] == f"  = test: {KEY} (not yanked)"
    assert undo[2] == f"  - release: {RELEASED} (yanked: 'bad ABI') → not yanked"


def test_a_yank_dry_run_and_run_have_one_json_shape(tmp_path: Path) -> None:
    plan = _yank(tmp_path)
    assert YankOutcome(plan=plan).lines() == []  # the plan's lines said it all
    dry = _versioned(YankOutcome(plan=plan).to_json())
    assert dry["command"] == "yank" and dry["version"] == "1.0.1"
    assert dry["store"] == f"file://{tmp_path}" and dry["mirrors"] == [f"file://{tmp_path}/mirror"]
    assert dry["executed"] is False and dry["done"] is None
    assert [(f["channel"], f["changed"], f["after"]) for f in dry["files"]] == [
        ("test", True, "bad ABI"),
        ("release", False, "bad ABI"),
    ]
    assert dry["folders"] == {"test": ["whl/test/cpu"], "release": ["whl/cpu"]}

    done = _versioned(YankOutcome(plan=plan, changed=1, written=4).to_json())
    assert {k: v for k, v in done.items() if k not in ("executed", "done")} == {
        k: v for k, v in dry.items() if k not in ("executed", "done")
    }  # one shape: the run adds what it did
    assert done["executed"] is True
    assert done["done"] == {"files_changed": 1, "folders_written": 4, "already_in_place": False}


def test_a_yank_outcome_says_what_changed_or_that_it_was_in_place(tmp_path: Path) -> None:
    plan = _yank(tmp_path)
    outcome = YankOutcome(plan=plan, changed=1, written=4)
    assert outcome.lines() == ["yank 1.0.1: 1 file(s) changed, 4 folder(s) re-indexed"]
    assert outcome.summary_markdown() == (
        "yank 1.0.1: 1 file(s) changed, 4 folder(s) re-indexed\n\n"
        f"- test: `{KEY}` → yanked: bad ABI"
    )
    rerun = YankOutcome(plan=_yank(tmp_path, undo=True), changed=0, written=0)
    assert rerun.lines() == [
        "unyank 1.0.1: 0 file(s) changed, 0 folder(s) re-indexed — everything was already in place"
    ]
    assert rerun.to_json()["done"]["already_in_place"] is True


# ---- pypi stage and upload --------------------------------------------------------------


def _stage_plan(tmp_path: Path) -> StagePlan:
    cell = next(c for c in expand_cells(load_matrix(EXAMPLE), "1.0") if c.package_type == "wheel")
    entry = ManifestEntry(
        cell_id=cell.id,
        file="demo.whl",
        size=10,
        sha256="a" * 64,
        version="1.0.0+cpu",
        package_type="wheel",
        variant="cpu",
        upload_subfolder="cpu",
    )
    source = "whl/cpu/demo-1.0.0+cpu-py3-none-any.whl"
    placed = Placed(entry=entry, cell=cell, key=source)
    return StagePlan(
        store=LocalStore(tmp_path),
        version="1.0.0",
        inputs=((placed, "pypi-staging/1.0.0/demo-1.0.0-py3-none-any.whl"),),
        limits=Limits(file_mb=100, project_mb=10240),
        index_url=None,
        where="relforge/manifests/release/demo/1.0.0/x.json",
        present=frozenset({"pypi-staging/1.0.0/demo-1.0.0-py3-none-any.whl"}),
    )


def _rewritten(tmp_path: Path) -> Rewritten:
    return Rewritten(
        path=tmp_path / "out" / "demo-1.0.0-py3-none-any.whl",
        source=tmp_path / "in" / "demo-1.0.0+cpu-py3-none-any.whl",
        sha256="b" * 64,
        size=9,
        changes=("version 1.0.0+cpu → 1.0.0",),
        written=True,
    )


def test_a_stage_plan_names_each_wheel_and_whether_its_staged_file_is_there(
    tmp_path: Path,
) -> None:
    plan = _stage_plan(tmp_path)
    cell = plan.inputs[0][0].entry.cell_id
    assert plan.lines() == [
        f"stage 1 wheel(s) of 1.0.0 for PyPI in file://{tmp_path}/pypi-staging/1.0.0/ "
        "(from relforge/manifests/release/demo/1.0.0/x.json)",
        f"  {cell}: whl/cpu/demo-1.0.0+cpu-py3-none-any.whl → demo-1.0.0-py3-none-any.whl  "
        "[present (checked when applied)]",
    ]


def test_a_stage_result_in_its_three_shapes(tmp_path: Path) -> None:
    plan = _stage_plan(tmp_path)
    dry = StageResult(plan=plan, rewritten=(_rewritten(tmp_path),), created=None)
    assert dry.lines() == []  # the plan was printed as it went; the CLI adds the dry-run note
    data = _versioned(dry.to_json())
    assert data["executed"] is False and data["created"] is None
    assert data["staging"] == "pypi-staging/1.0.0/" and data["version"] == "1.0.0"
    (file,) = data["files"]
    assert file == {
        "cell": plan.inputs[0][0].entry.cell_id,
        "source": "whl/cpu/demo-1.0.0+cpu-py3-none-any.whl",
        "staged": "pypi-staging/1.0.0/demo-1.0.0-py3-none-any.whl",
        "present": True,
        "filename": "demo-1.0.0-py3-none-any.whl",
        "sha256": "b" * 64,
        "size": 9,
        "changes": ["version 1.0.0+cpu → 1.0.0"],
    }

    done = StageResult(plan=plan, rewritten=(_rewritten(tmp_path),), created=0)
    summary = "staged 0 new file(s) of 1.0.0 (1 in all) — everything was already in place"
    assert done.lines() == [summary]
    assert (
        done.summary_markdown()
        == f"{summary}\n\n- `demo-1.0.0-py3-none-any.whl` sha256 `{'b' * 64}`"
    )
    assert _versioned(done.to_json())["executed"] is True


def _upload_plan(tmp_path: Path) -> UploadPlan:
    items = (
        UploadItem(
            key="pypi-staging/1.0.0/a.whl", filename="a.whl", sha256="c" * 64, state="upload"
        ),
        UploadItem(
            key="pypi-staging/1.0.0/b.whl",
            filename="b.whl",
            sha256="d" * 64,
            state="identical",
            found="d" * 64,
        ),
    )
    return UploadPlan(
        version="1.0.0",
        repository="https://user:s3cret@pypi.example/legacy/",
        index="https://pypi.example/simple/",
        store=LocalStore(tmp_path),
        items=items,
        limits=Limits(file_mb=100, project_mb=10240),
    )


def test_an_upload_plan_and_result_never_show_the_password(tmp_path: Path) -> None:
    plan = _upload_plan(tmp_path)
    assert plan.lines() == [
        "upload 2 staged file(s) of 1.0.0 to https://pypi.example/legacy/ "
        "(index https://pypi.example/simple/)",
        f"  upload  a.whl  sha256={'c' * 12}…",
        f"  skip    b.whl  sha256={'d' * 12}…",
    ]
    dry = UploadResult(plan=plan, uploaded=None)
    assert dry.lines() == []
    data = _versioned(dry.to_json())
    assert "s3cret" not in str(data)
    assert data["repository"] == "https://pypi.example/legacy/"
    assert data["executed"] is False and data["uploaded"] is None
    assert [(f["filename"], f["state"]) for f in data["files"]] == [
        ("a.whl", "upload"),
        ("b.whl", "identical"),
    ]

    done = UploadResult(plan=plan, uploaded=1)
    assert done.lines() == ["uploaded 1 file(s) of 1.0.0; 1 already on the index"]
    assert done.summary_markdown() == (
        "uploaded 1 file(s) of 1.0.0; 1 already on the index\n\n"
        "- `a.whl`: uploaded\n- `b.whl`: already on the index"
    )
    assert _versioned(done.to_json())["uploaded"] == 1


# ---- upstream update --------------------------------------------------------------------

OLD = 'python: ["3.10", "3.11"]\n'
NEW = 'python: ["3.11"]\n'
EOL = UpstreamFinding(
    kind="python-eol",
    subject="Python 3.10",
    message="Python 3.10 reached end of life on 2026-10-31",
    due=True,
    where=Span("ext.yaml", 1, 1),
    source=UpstreamSource(file="python_eol.yaml", line='"3.10": 2026-10-31'),
    change=SetPythons(drop=("3.10",)),
)
YANKED = UpstreamFinding(
    kind="axis-gone",
    subject="numpy",
    message="axis numpy=1.26: every numpy version it admits (1.26.4) is yanked",
    due=True,
    manual="choose another numpy",
)


def _update(new_text: str = NEW) -> UpdatePlan:
    report = UpstreamReport(
        file="ext.yaml",
        release="0.5",
        index="http://127.0.0.1:1/simple/",
        policy_date=datetime.date(2026, 11, 30),
        findings=(EOL, YANKED),
    )
    written = (EOL,) if new_text != OLD else ()
    return UpdatePlan(
        report=report, old_text=OLD, new_text=new_text, written=written, manual=(YANKED,)
    )


def _pull(action: str, number: int | None = None) -> PullRequestPlan:
    pull = None
    if number is not None:
        pull = PullRequest(
            number=number,
            title="t",
            state="open",
            merged=False,
            merge_commit_sha=None,
            html_url=f"https://github.com/acme/ext/pull/{number}",
            user=None,
            head_ref="relforge/upstream/ext/0.5",
            head_sha="0" * 40,
            base_ref="main",
            body="",
        )
    return PullRequestPlan(
        repo="acme/ext",
        remote="origin",
        base="main",
        base_commit="1" * 40,
        branch="relforge/upstream/ext/0.5",
        path="ext.yaml",
        title="Follow upstream in ext.yaml 0.5: Python -3.10",
        body="",
        action=action,  # type: ignore[arg-type]  # the Literal is checked by the plan's maker
        pull=pull,
        branch_commit=None,
    )


def test_an_update_lists_each_change_with_its_reason_then_the_diff() -> None:
    outcome = UpdateOutcome(plan=_update())
    lines = outcome.lines()
    assert lines[:4] == [
        "upstream update: ext.yaml release 0.5 from http://127.0.0.1:1/simple/",
        "  write    Python 3.10 reached end of life on 2026-10-31",
        '           source: python_eol.yaml: `"3.10": 2026-10-31`',
        f"  by hand  {YANKED.message}: choose another numpy",
    ]
    assert lines[4:] == outcome.plan.diff().splitlines()
    assert '-python: ["3.10", "3.11"]' in lines and outcome.done_lines() == []

    wrote = UpdateOutcome(plan=_update(), executed=True, wrote="ext.yaml")
    assert wrote.lines()[-1] == "wrote ext.yaml: 1 change(s)"
    assert wrote.summary_markdown() == (
        "wrote ext.yaml: 1 change(s)\n\n"
        f"- {EOL.message}\n- by hand: {YANKED.message}: choose another numpy"
    )


def test_a_current_matrix_has_no_diff_and_writes_nothing() -> None:
    current = UpdateOutcome(plan=_update(OLD), executed=True)
    assert not current.due and current.done_lines() == []
    assert current.lines()[-1] == "ext.yaml: nothing to write"
    data = _versioned(current.to_json())
    assert data["changed"] is False and data["diff"] == "" and data["wrote"] is None


def test_an_update_as_json_carries_the_changes_the_diff_and_the_file_written() -> None:
    data = _versioned(UpdateOutcome(plan=_update(), executed=True, wrote="ext.yaml").to_json())
    assert data["file"] == "ext.yaml" and data["release"] == "0.5"
    assert data["policy_date"] == "2026-11-30"
    assert [(c["kind"], c["message"], c["source"]["file"]) for c in data["changes"]] == [
        ("python-eol", EOL.message, "python_eol.yaml")
    ]
    assert [m["manual"] for m in data["manual"]] == ["choose another numpy"]
    assert data["diff"].startswith("--- a/ext.yaml\n+++ b/ext.yaml\n")
    assert data["executed"] is True and data["wrote"] == "ext.yaml"
    assert data["pull_request"] is None


@pytest.mark.parametrize(
    ("action", "number", "due"),
    [("open", None, True), ("update", 7, True), ("current", 7, False)],
)
def test_a_pull_request_update_says_what_it_pushes(
    action: str, number: int | None, due: bool
) -> None:
    pull = _pull(action, number)
    outcome = UpdateOutcome(plan=_update(), pull=pull)
    assert outcome.due is due
    lines = outcome.lines()
    assert lines[4] == f"pull request: {pull.describe()}"
    assert ("title: Follow upstream in ext.yaml 0.5: Python -3.10" in lines) is due
    assert any(line.startswith("--- a/ext.yaml") for line in lines) is due
    data = _versioned(outcome.to_json())["pull_request"]
    assert data["action"] == action and data["number"] == number and data["pushed"] is False


def test_an_opened_pull_request_is_named_with_its_number_and_url() -> None:
    plan = _pull("open")
    opened = _pull("update", 3).pull
    outcome = UpdateOutcome(plan=_update(), pull=plan, executed=True, pushed=True, opened=opened)
    assert outcome.done_lines() == ["pull request #3: https://github.com/acme/ext/pull/3"]
    assert outcome.summary_markdown().startswith(
        "Follow upstream in ext.yaml 0.5: Python -3.10\n\n"
        "pull request #3: https://github.com/acme/ext/pull/3\n\n- Python 3.10"
    )
    data = _versioned(outcome.to_json())["pull_request"]
    assert data == {
        "action": "open",
        "repo": "acme/ext",
        "branch": "relforge/upstream/ext/0.5",
        "base": "main",
        "title": "Follow upstream in ext.yaml 0.5: Python -3.10",
        "pushed": True,
        "number": 3,
        "url": "https://github.com/acme/ext/pull/3",
    }


# ---- every outcome is versioned -------------------------------------------------------------


def test_every_outcome_document_starts_with_its_schema_version(tmp_path: Path) -> None:
    """Fails when an outcome drops `schema_version` or moves it from the first key."""
    documents = [
        YankOutcome(plan=_yank(tmp_path)).to_json(),
        YankOutcome(plan=_yank(tmp_path), changed=0, written=0).to_json(),
        StageResult(
            plan=_stage_plan(tmp_path), rewritten=(_rewritten(tmp_path),), created=1
        ).to_json(),
        UploadResult(plan=_upload_plan(tmp_path), uploaded=None).to_json(),
        UpdateOutcome(plan=_update(), pull=_pull("open")).to_json(),
    ]
    for document in documents:
        _versioned(document)


def test_twines_prints_reach_the_commands_echo_line_by_line_as_they_are_written() -> None:
    from relforge.promote.pypi.upload import _LineEcho

    said: list[str] = []
    stream = _LineEcho(said.append)
    stream.write("Uploading distributions to http://x/\nUploading a.whl")
    assert said == ["Uploading distributions to http://x/"]  # a whole line goes at once
    stream.write(" 100%\n")
    assert said[-1] == "Uploading a.whl 100%"
    stream.write("View at:")
    stream.flush_rest()  # what is left when twine returns or raises
    assert said[-1] == "View at:"


def test_an_echo_that_prints_to_stdout_is_not_fed_back_into_the_redirect(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import contextlib

    from relforge.promote.pypi.upload import _LineEcho

    with contextlib.redirect_stdout(_LineEcho(print)):  # text mode: click.echo to stdout
        print("Uploading a.whl")
    assert capsys.readouterr().out == "Uploading a.whl\n"
