"""explain, diff and docs on the shipped PyTorch matrix."""

from __future__ import annotations

import pytest

from relforge.errors import Span
from relforge.matrix.diff import diff_releases, render_markdown
from relforge.matrix.docs import render_docs
from relforge.matrix.explain import explain_cell
from relforge.matrix.load import load_matrix
from relforge.matrix.schema import Matrix
from tests.conftest import PYTORCH


@pytest.fixture(scope="module")
def pytorch() -> Matrix:
    return load_matrix(PYTORCH)


def test_explain_built_cell_points_at_its_definitions(pytorch: Matrix) -> None:
    found = explain_cell(pytorch, "2.9", "wheel-linux-aarch64-py3.13t-cu130")
    assert found.status == "built"
    assert found.cell is not None and found.cell.accelerator_version == "13.0"
    texts = [r.text for r in found.reasons]
    assert "release 2.9 (extends 2.8)" in texts
    assert "variant cu130: CUDA 13.0, experimental" in texts
    lines = PYTORCH.read_text().splitlines()
    cu130 = next(r for r in found.reasons if r.text.startswith("variant cu130"))
    assert cu130.where is not None and lines[cu130.where.line - 1].strip() == "kind: cuda"
    tag = next(r for r in found.reasons if r.text.startswith("platform tag"))
    assert tag.where is not None
    assert "platform_tag: manylinux_2_28_aarch64" in lines[tag.where.line - 1]


def test_explain_excluded_cell_names_the_rule(pytorch: Matrix) -> None:
    found = explain_cell(pytorch, "2.9", "libtorch-linux-x86_64-cu128-static-with-deps-release")
    assert found.status == "excluded"
    assert "release workflows build only shared-with-deps" in found.summary
    rule = found.reasons[0]
    assert rule.where is not None
    assert "match:" in PYTORCH.read_text().splitlines()[rule.where.line - 1]


@pytest.mark.parametrize(
    ("release", "cell_id", "words"),
    [
        (
            "2.9",
            "wheel-linux-x86_64-py3.9-cpu",
            "Python 3.9 is not in the release's python list (built in 2.6, 2.7, 2.8)",
        ),
        (
            "2.9",
            "wheel-linux-x86_64-py3.12-cu129",
            "variant cu129 is not defined in this release (built in 2.8)",
        ),
        ("2.8", "wheel-linux-aarch64-py3.12-cu128", "variant cu128 is not built on linux-aarch64"),
        ("2.8", "wheel-windows-arm64-py3.12-cpu", "platform windows-arm64 is not defined"),
    ],
)
def test_explain_cells_that_are_not_offered(
    pytorch: Matrix, release: str, cell_id: str, words: str
) -> None:
    found = explain_cell(pytorch, release, cell_id)
    assert found.status == "not-offered"
    assert words in found.summary


def test_explain_unknown_id_suggests(pytorch: Matrix) -> None:
    found = explain_cell(pytorch, "2.9", "wheel-linux-x86_64-py3.12-cu12")
    assert found.status == "unknown"
    assert "wheel-linux-x86_64-py3.12-cu128" in found.suggestions


def test_diff_28_to_29_names_the_releng_changes(pytorch: Matrix) -> None:
    result = diff_releases(pytorch, "2.8", pytorch, "2.9")
    assert result.python_removed == ["3.9"]
    assert result.python_added == ["3.14", "3.14t"]
    assert [v["name"] for v in result.variants_removed] == ["cu129"]
    added = {v["name"]: v for v in result.variants_added}
    assert added["cu130"]["cuDNN"] == "9.13.0.50"
    arm = next(a for a in result.availability if a.platform == "linux-aarch64")
    assert arm.added == ["CUDA 12.6", "CUDA 12.8", "CUDA 13.0"]
    assert arm.removed == ["CUDA 12.9"]
    text = render_markdown(result)
    for line in (
        "- Removed Python 3.9.",
        "- Added Python 3.14 and 3.14t (free-threaded).",
        "- Added CUDA 13.0 (13.0.0, experimental) with cuDNN 9.13.0.50 and NCCL 2.27.7",
        "- Removed CUDA 12.9 (12.9.1, experimental)",
        "- linux-aarch64: added CUDA 12.6, CUDA 12.8 and CUDA 13.0; removed CUDA 12.9.",
        "| wheel | linux-aarch64 | 12 | 28 | +16 |",
    ):
        assert line in text, line


def test_diff_of_a_release_with_itself_is_empty(pytorch: Matrix) -> None:
    result = diff_releases(pytorch, "2.9", pytorch, "2.9")
    assert result.empty
    assert "0 cells added, 0 removed." in render_markdown(result)


def test_docs_compatibility_table(pytorch: Matrix) -> None:
    text = render_docs(pytorch)
    assert (
        "| 2.9 | >=3.10, <=3.14, (3.13t, 3.14t) | C++17 | CUDA 12.6, CUDA 12.8 "
        "(cuDNN 9.10.2.21) | CUDA 13.0 (cuDNN 9.13.0.50) | ROCm 6.3, ROCm 6.4 | XPU |"
    ) in text
    assert (
        "| 2.6 | >=3.9, <=3.13, (3.13t) | C++17 | CUDA 11.8, CUDA 12.4 (cuDNN 9.1.0.70) | "
        "CUDA 12.6 (cuDNN 9.5.1.17) | ROCm 6.2.4 | ROCm 6.1, XPU |"
    ) in text


def test_docs_install_commands(pytorch: Matrix) -> None:
    text = render_docs(pytorch, ["2.9"])
    row = next(line for line in text.splitlines() if line.startswith("| CUDA 12.8 |"))
    assert (
        "`pip3 install --pre torch --index-url https://download.pytorch.org/whl/nightly/cu128`"
        in row
    )
    assert "`pip3 install torch --index-url https://download.pytorch.org/whl/test/cu128`" in row
    assert "`pip3 install torch` (linux-x86_64, linux-aarch64)" in row
    cpu = next(line for line in text.splitlines() if line.startswith("| CPU |"))
    assert "`pip3 install torch` (windows-x86_64, macos-arm64, windows-arm64)" in cpu
    text27 = render_docs(pytorch, ["2.7"])
    assert "https://download.pytorch.org/whl/cu126_full" in text27


def _line(where: Span | None) -> str:
    assert where is not None
    return PYTORCH.read_text().splitlines()[where.line - 1]


def test_explain_points_each_reason_at_the_line_that_sets_it(pytorch: Matrix) -> None:
    found = explain_cell(pytorch, "2.9", "wheel-linux-x86_64-py3.13t-cu128")
    platform = next(r for r in found.reasons if r.text.startswith("platform linux-x86_64"))
    assert _line(platform.where).strip() == "os: linux"  # not 2.7's override of the tag
    pypi = next(r for r in found.reasons if r.text.startswith("the PyPI default"))
    assert _line(pypi.where).strip() == "pypi_default:"
    lines = PYTORCH.read_text().splitlines()
    assert pypi.where is not None
    assert lines[pypi.where.line].strip() == "linux-x86_64: cu128"  # 2.8 sets it, not 2.9


def test_explain_an_include_copy_points_at_the_rule_that_bundles(pytorch: Matrix) -> None:
    found = explain_cell(pytorch, "2.7", "wheel-linux-x86_64-py3.11-cu126-full")
    bundles = next(r for r in found.reasons if r.text.startswith("bundles its libraries"))
    assert "bundle_libraries: true" in _line(bundles.where)
    assert "upload_subfolder" in _line(bundles.where)


@pytest.mark.parametrize(
    ("release", "cell_id", "words"),
    [
        (
            "2.9",
            "wheel-linux-x86_64-py3.11-cu126-full",
            "no include rule makes -full copies in this release (made in 2.7)",
        ),
        (
            "2.7",
            "wheel-linux-x86_64-py3.12-cu126-full",
            "the include rule for -full copies does not match wheel-linux-x86_64-py3.12-cu126",
        ),
        (
            "2.7",
            "wheel-linux-aarch64-py3.11-cu126-full",
            "it would copy wheel-linux-aarch64-py3.11-cu126, which is not built",
        ),
    ],
)
def test_explain_ids_of_include_copies_that_are_not_made(
    pytorch: Matrix, release: str, cell_id: str, words: str
) -> None:
    found = explain_cell(pytorch, release, cell_id)
    assert found.status == "not-offered", found.summary
    assert words in found.summary
    assert found.reasons and found.reasons[0].where is not None


def test_explain_an_unknown_id_that_ends_like_a_copy_is_unknown(pytorch: Matrix) -> None:
    found = explain_cell(pytorch, "2.7", "wheel-linux-x86_64-py3.11-cu999-full")
    assert found.status == "unknown"
    assert "wheel-linux-x86_64-py3.11-cu126-full" in found.suggestions
