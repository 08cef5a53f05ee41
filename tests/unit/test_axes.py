"""Dependency axes and local-label templates: cells, ids, env, selection, names, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from relforge.errors import ConfigError
from relforge.matrix.axes import env_name
from relforge.matrix.cell import AXIS_FIELDS, CELL_FIELDS
from relforge.matrix.diff import diff_releases, render_markdown
from relforge.matrix.docs import render_docs
from relforge.matrix.expand import candidates, expand_cells
from relforge.matrix.explain import explain_cell
from relforge.matrix.lint import lint_matrix
from relforge.matrix.load import load_matrix
from relforge.matrix.schema import Matrix
from relforge.matrix.selector import parse_selector
from tests.conftest import Run, Write

ROOT = Path(__file__).resolve().parents[2]

# flash-attn's scheme: python × torch × CUDA, one flat name per wheel.
FLASH = """\
schema_version: 1
project:
  name: flash-attn
  download_url: https://example.org
releases:
  "2.8":
    version: 2.8.3
    python: ["3.11", "3.12"]
    local_label: "+cu{cuda_major}torch{torch_minor}cxx11abi{cxx11_abi}"
    platforms:
      linux-x86_64: {os: linux, arch: x86_64, platform_tag: manylinux_2_28_x86_64}
    accelerators:
      cu128:
        kind: cuda
        version: 12.8.1
        platforms: {linux-x86_64: {}}
    axes:
      torch:
        "2.8":
          install: ["torch==2.8.*"]
          index: https://download.pytorch.org/whl/{variant}
          requires: ["torch==2.8.*"]
        "2.9":
          install: ["torch==2.9.*"]
          index: same-channel
          requires: ["torch==2.9.*"]
    exclude:
      - match: {torch: "2.8", python: "3.11"}
        reason: nobody asked for it
"""


def flash(write: Write, text: str = FLASH) -> Matrix:
    return load_matrix(write(text))


def test_axes_multiply_cells_with_readable_ids(write: Write) -> None:
    matrix = load_matrix(write(FLASH))
    ids = [c.id for c in expand_cells(matrix, "2.8")]
    assert ids == [
        "wheel-linux-x86_64-py3.11-cu128-torch2.9",
        "wheel-linux-x86_64-py3.12-cu128-torch2.8",
        "wheel-linux-x86_64-py3.12-cu128-torch2.9",
    ]
    excluded = [c for c in candidates(matrix, matrix.release("2.8")) if not c.built]
    assert [c.cell.id for c in excluded] == ["wheel-linux-x86_64-py3.11-cu128-torch2.8"]


def test_axis_cell_carries_its_dependency(write: Write) -> None:
    matrix = load_matrix(write(FLASH))
    cell = expand_cells(matrix, "2.8", channel="test")[-1]
    assert cell.axes == {"torch": "2.9"}
    assert cell.axis_install == {"torch": ("torch==2.9.*",)}
    assert cell.axis_requires == ("torch==2.9.*",)
    # same-channel: torch of this cell's own channel and accelerator folder
    assert cell.axis_index == {"torch": "https://example.org/whl/test/cu128"}
    assert cell.env[env_name("torch")] == "2.9" == cell.env["RELFORGE_AXIS_TORCH"]
    assert cell.env["RELFORGE_AXIS_REQUIRES"] == "torch==2.9.*"
    assert cell.env["RELFORGE_CELL_ID"] == cell.id
    other = expand_cells(matrix, "2.8", channel="nightly")[1]
    assert other.axis_index == {"torch": "https://download.pytorch.org/whl/cu128"}
    data = cell.to_json()
    assert list(data) == [*CELL_FIELDS, *AXIS_FIELDS]
    assert data["axis_install"] == {"torch": ["torch==2.9.*"]}
    json.dumps(data)


def test_flash_attn_label_names_every_wheel_apart(write: Write) -> None:
    matrix = load_matrix(write(FLASH))
    cells = expand_cells(matrix, "2.8", channel="release")
    assert [c.version for c in cells] == [
        "2.8.3+cu12torch2.9cxx11abitrue",  # PEP 440 local labels are lowercase
        "2.8.3+cu12torch2.8cxx11abitrue",
        "2.8.3+cu12torch2.9cxx11abitrue",
    ]
    assert {c.upload_subfolder for c in cells} == {"cu128"}  # one folder: the label tells apart
    for cell in cells:
        assert Version(cell.version or "").local == cell.local_version


def test_matrices_without_axes_keep_their_json(write: Write) -> None:
    golden = json.loads((ROOT / "tests/golden/example-1.0.json").read_text())
    matrix = load_matrix(ROOT / "matrix/example.yaml")
    assert [c.to_json() for c in expand_cells(matrix, "1.0")] == golden
    assert all(not set(AXIS_FIELDS) & set(cell) for cell in golden)


def test_selectors_and_rules_see_axes(write: Write) -> None:
    matrix = load_matrix(write(FLASH))
    axes = tuple(matrix.release("2.8").axes)
    picked = expand_cells(matrix, "2.8", selectors=[parse_selector("torch=2.9", axes)])
    assert [c.id for c in picked] == [
        "wheel-linux-x86_64-py3.11-cu128-torch2.9",
        "wheel-linux-x86_64-py3.12-cu128-torch2.9",
    ]
    newer = expand_cells(matrix, "2.8", selectors=[parse_selector("torch>2.8,python=3.12", axes)])
    assert [c.id for c in newer] == ["wheel-linux-x86_64-py3.12-cu128-torch2.9"]
    with pytest.raises(ValueError, match=r"unknown cell field 'troch' \(did you mean 'torch'"):
        parse_selector("troch=2.9", axes)
    with pytest.raises(ValueError, match="unknown cell field 'torch'"):
        parse_selector("torch=2.9")  # a release without that axis


def test_cli_selects_by_axis(write: Write, run: Run) -> None:
    path = write(FLASH)
    result = run("matrix", "list", str(path), "--release", "2.8", "--select", "torch=2.8")
    assert result.code == 0, result.err
    assert "py3.12-cu128-torch2.8" in result.out
    assert "torch2.9" not in result.out


def test_empty_label_gives_one_folder_per_axis_value(write: Write) -> None:
    text = FLASH.replace(
        'local_label: "+cu{cuda_major}torch{torch_minor}cxx11abi{cxx11_abi}"', 'local_label: ""'
    )
    matrix = load_matrix(write(text))
    cells = expand_cells(matrix, "2.8", channel="test")
    assert [c.version for c in cells] == ["2.8.3"] * 3
    assert [c.upload_subfolder for c in cells] == [
        "cu128-torch2.9",
        "cu128-torch2.8",
        "cu128-torch2.9",
    ]
    assert cells[1].index_url == "https://example.org/whl/test/cu128-torch2.8"
    names = {(c.upload_subfolder, c.python) for c in cells}
    assert len(names) == 3


def test_nightly_without_label_has_no_plus(write: Write) -> None:
    text = FLASH.replace(
        'local_label: "+cu{cuda_major}torch{torch_minor}cxx11abi{cxx11_abi}"', 'local_label: ""'
    )
    matrix = load_matrix(write(text))
    import datetime

    cell = expand_cells(matrix, "2.8", channel="nightly", date=datetime.date(2026, 1, 2))[0]
    assert cell.version == "2.8.3.dev20260102"
    parse_wheel_filename(f"flash_attn-{cell.version}-cp311-cp311-manylinux_2_28_x86_64.whl")


def line_of(text: str, snippet: str) -> int:
    return text[: text.index(snippet)].count("\n") + 1


@pytest.mark.parametrize(
    ("old", "new", "words", "snippet"),
    [
        (  # the default label `+{variant}` cannot tell torch 2.8 from 2.9 wheels apart
            '    local_label: "+cu{cuda_major}torch{torch_minor}cxx11abi{cxx11_abi}"\n',
            "",
            ["same wheel file name", "index folder cu128/", "{torch}"],
            None,
        ),
        (
            "cxx11abi{cxx11_abi}",
            "cxx11abi{cxx11abi}",
            ["unknown placeholder {cxx11abi}", "local_label", "{cxx11_abi}"],
            "local_label",
        ),
        (
            '"+cu{cuda_major}',
            '"cu{cuda_major}',
            ["must start with '+'", "local_label"],
            "local_label",
        ),
        (
            '"+cu{cuda_major}',
            '"+cu{cuda_major!r}',
            ["is not a plain placeholder"],
            "local_label",
        ),
        (
            '"+cu{cuda_major}',
            '"+cu/{cuda_major}',
            ["not a PEP 440 local label"],
            "local_label",
        ),
        (
            '      torch:\n        "2.8":',
            '      python:\n        "2.8":',
            ["axis name 'python'", "not a cell field"],
            "axes:",
        ),
        (
            '          install: ["torch==2.8.*"]\n',
            '          install: ["torch==2.8.*"]\n          extra: 1\n',
            ["unknown key 'extra'", "releases.2.8.axes.torch.2.8.extra"],
            "extra: 1",
        ),
        (
            'install: ["torch==2.9.*"]',
            'install: ["torch=2.9"]',
            ["not a PEP 508 requirement", "axes.torch.2.9.install[0]"],
            '["torch=2.9"]',
        ),
        (
            'install: ["torch==2.9.*"]',
            "install: []",
            ["at least one requirement"],
            "install: []",
        ),
        (
            "index: https://download.pytorch.org/whl/{variant}",
            "index: https://download.pytorch.org/whl/{flavour}",
            ["not an http(s) or file URL", "axes.torch.2.8.index"],
            "{flavour}",
        ),
        (
            "  download_url: https://example.org\n",
            "",
            ["same-channel needs project.download_url"],
            "same-channel",
        ),
        (
            '{torch: "2.8", python: "3.11"}',
            '{torhc: "2.8", python: "3.11"}',
            ["unknown cell field 'torhc'", "did you mean 'torch'"],
            "torhc",
        ),
    ],
)
def test_bad_axes_are_load_errors(
    write: Write, old: str, new: str, words: list[str], snippet: str | None
) -> None:
    assert old in FLASH
    text = FLASH.replace(old, new, 1)
    path = write(text)
    with pytest.raises(ConfigError) as info:
        load_matrix(path)
    message = info.value.render()
    for word in words:
        assert word in message, message
    assert str(path) in message
    if snippet is not None:
        assert f"{path}:{line_of(text, snippet)}:" in message, message


def test_explain_diff_docs_lint_show_axes(write: Write) -> None:
    matrix = load_matrix(write(FLASH))
    why = explain_cell(matrix, "2.8", "wheel-linux-x86_64-py3.12-cu128-torch2.8")
    texts = [r.text for r in why.reasons]
    assert any("axis torch=2.8: builds with torch==2.8.*, needs torch==2.8.*" in t for t in texts)
    assert any("+cu12torch2.8cxx11abitrue" in t for t in texts)
    gone = explain_cell(matrix, "2.8", "wheel-linux-x86_64-py3.11-cu128-torch2.8")
    assert gone.status == "excluded"
    assert "torch=2.8" in gone.reasons[0].text
    newer = load_matrix(
        write(
            FLASH.replace('requires: ["torch==2.9.*"]', 'requires: ["torch>=2.9,<2.10"]'), "b.yaml"
        )
    )
    diff = diff_releases(matrix, "2.8", newer, "2.8")
    assert not diff.empty
    assert (
        "- torch 2.9: installs torch==2.9.*, requires torch==2.9.* → installs torch==2.9.*, "
        "requires torch>=2.9,<2.10." in render_markdown(diff)
    )
    assert diff_releases(matrix, "2.8", matrix, "2.8").empty
    docs = render_docs(matrix)
    assert "built against each torch: 2.8: built with torch==2.8.*, requires torch==2.8.*" in docs
    bad = load_matrix(
        write(FLASH.replace('requires: ["torch==2.8.*"]', 'requires: ["torch>=2.9"]'), "c.yaml")
    )
    found = {f.rule.id for f in lint_matrix(bad)}
    assert "RF-L021" in found
    assert "RF-L021" not in {f.rule.id for f in lint_matrix(matrix)}
    bare = load_matrix(write(FLASH.replace('\n          requires: ["torch==2.8.*"]', ""), "d.yaml"))
    assert "RF-L020" in {f.rule.id for f in lint_matrix(bare)}


def test_validation_refuses_a_wheel_declaring_another_axis_value(tmp_path: Path) -> None:
    """A numpy-1.26 cell whose wheel says numpy>=2 (or nothing) fails RF-V020."""
    from concurrent.futures import ThreadPoolExecutor

    from relforge.validate.checklist import Expectation, check_artifact
    from relforge.validate.facts import gather
    from tests.wheelfactory import WheelSpec, write_wheel

    matrix = load_matrix(ROOT / "matrix/numpy-abi.yaml")
    cell = next(
        c for c in expand_cells(matrix, "1.0", channel="test") if c.axes == {"numpy": "1.26"}
    )

    def verdict(requires: tuple[str, ...]) -> tuple[str, str]:
        spec = WheelSpec(
            name="numpy-abi",
            version=cell.version or "",
            python_tag=cell.python_tag or "",
            abi_tag=cell.abi_tag or "",
            requires_dist=requires,
        )
        wheel = write_wheel(
            spec, tmp_path / str(len(requires)) / requires[0][:8] if requires else tmp_path / "none"
        )
        with ThreadPoolExecutor(1) as pool:
            facts = gather(wheel, pool, verify_digests=True)
        found = next(
            v
            for v in check_artifact(facts, Expectation(cell=cell, project="numpy-abi"))
            if v.check == "RF-V020"
        )
        return found.status, found.message

    assert verdict(("numpy>=1.26,<2",))[0] == "pass"
    status, message = verdict(("numpy>=2,<3",))
    assert status == "fail" and "wrong pin" in message and "numpy<2,>=1.26" in message
    status, message = verdict(())
    assert status == "fail" and "missing: numpy<2,>=1.26" in message


def test_generated_workflows_build_every_axis_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    from tests.workflows_support import load_workflows, scratch_repo

    root = tmp_path / "repo"
    scratch_repo(root, (ROOT / "matrix/numpy-abi.yaml").read_text(), "matrix/numpy-abi.yaml")
    monkeypatch.chdir(root)
    result = run(
        "workflows", "generate", "matrix/numpy-abi.yaml", "-r", "1.0", "--out", "wf", "--no-upload"
    )
    assert result.code == 0, result.err
    flows = load_workflows(root / "wf")
    built = sorted(
        entry["id"]
        for job_id, job in flows["relforge-linux-wheel.yml"]["jobs"].items()
        if job_id.startswith("build-")
        for entry in job["strategy"]["matrix"]["include"]
    )
    matrix = load_matrix(ROOT / "matrix/numpy-abi.yaml")
    assert built == sorted(c.id for c in expand_cells(matrix, "1.0"))
    assert "wheel-linux-x86_64-py3.12-cpu-numpy2.x" in built


def test_pypi_gets_the_last_value_of_each_axis() -> None:
    """PyPI holds one wheel per platform and Python: the newest axis value's (listed last)."""
    matrix = load_matrix(ROOT / "matrix/numpy-abi.yaml")
    chosen = {c.id for c in expand_cells(matrix, "1.0") if c.pypi_default}
    assert chosen == {
        "wheel-linux-x86_64-py3.11-cpu-numpy2.x",
        "wheel-linux-x86_64-py3.12-cpu-numpy2.x",
    }
