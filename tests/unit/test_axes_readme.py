"""The torchvision-style snippet of the matrix guide (docs/guide/matrix.md) loads and does what
the text says."""

from __future__ import annotations

from pathlib import Path

from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "matrix.md"
MARK = "<!-- relforge:torchvision-snippet"


def snippet() -> str:
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index("```yaml\n", text.index(MARK)) + len("```yaml\n")
    return text[start : text.index("```", start)]


def test_torchvision_snippet_builds_against_torch_of_its_own_channel(tmp_path: Path) -> None:
    path = tmp_path / "torchvision.yaml"
    path.write_text(snippet(), encoding="utf-8")
    matrix = load_matrix(path)
    test = expand_cells(matrix, "0.24", channel="test")
    assert [c.id for c in test] == [
        "wheel-linux-x86_64-py3.12-cpu-torch2.9",
        "wheel-linux-x86_64-py3.12-cu128-torch2.9",
        "wheel-linux-x86_64-py3.13-cpu-torch2.9",
        "wheel-linux-x86_64-py3.13-cu128-torch2.9",
    ]
    cu128 = test[1]
    assert cu128.axis_index == {"torch": "https://download.pytorch.org/whl/test/cu128"}
    assert cu128.index_url == "https://download.pytorch.org/whl/test/cu128"  # the same channel
    assert cu128.axis_requires == ("torch==2.9.*",)
    assert cu128.version == "0.24.0+cu128"
    nightly = expand_cells(matrix, "0.24", channel="nightly")[0]
    assert nightly.axis_index == {"torch": "https://download.pytorch.org/whl/nightly/cpu"}
