"""The site's selector offers dependency-axis values (numpy 1.26 / 2.x) when the matrix has
them, and every such combination's command is the one `matrix docs` prints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from relforge.errors import UsageError
from relforge.matrix.docs import render_docs, with_download_url
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from relforge.site import SiteRequest, build_site
from relforge.site.publishedversions import folder_label
from tests.conftest import Write
from tests.site_oracle import docs_rows, expected_command

ROOT = Path(__file__).resolve().parents[2]
NUMPY = ROOT / "matrix" / "numpy-abi.yaml"
URL = "https://dl.example.org"
LABEL = 'local_label: "+{variant}.numpy{numpy_major}"'


def numpy_matrix(write: Write, label: str) -> Path:
    text = NUMPY.read_text().replace("../examples/numpy-abi", str(ROOT / "examples/numpy-abi"))
    assert LABEL in text
    return write(text.replace(LABEL, label))


def site_entry(path: Path, out: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    build_site(SiteRequest(matrix=load_matrix(str(path)), out=out, download_url=URL))
    data: dict[str, Any] = json.loads((out / "published_versions.json").read_text())
    return data, data["releases"][0]


@pytest.mark.parametrize("label", [LABEL, 'local_label: ""'])
def test_every_axis_combination_matches_matrix_docs(
    tmp_path: Path, write: Write, label: str
) -> None:
    path = numpy_matrix(write, label)
    data, entry = site_entry(path, tmp_path / "site")
    assert data["axes"][-1] == {"key": "numpy", "label": "numpy"}
    assert [c["value"] for c in entry["choices"]["numpy"]] == ["1.26", "2.x"]
    # one accelerator choice either way: without a label the axis picks the folder
    assert [c["value"] for c in entry["choices"]["accelerator"]] == ["cpu"]
    # 3 channels × 1 platform × 2 installers × 1 accelerator × 2 numpy
    assert len(entry["combinations"]) == 12
    matrix = with_download_url(load_matrix(str(path)), URL)
    release = matrix.release("1.0")
    rows = docs_rows(render_docs(matrix, ["1.0"]), matrix.project.title, "1.0")
    cells = [c for c in expand_cells(matrix, "1.0") if c.package_type == "wheel"]
    sources = set()
    for combo in entry["combinations"]:
        sel = combo["selection"]
        assert combo["available"], combo
        want = expected_command(
            rows,
            folder_label(release, combo["folder"], cells),
            sel["platform"],
            sel["channel"],
            sel["installer"],
            f"numpy {sel['numpy']}",
        )
        assert combo["command"] == want, sel
        assert combo["requires"] == list(release.axes["numpy"][sel["numpy"]].requires)
        sources.add((sel["channel"], sel["numpy"], combo["source"]))
    # PyPI holds the numpy 2.x wheel only: numpy 1.26 on the release channel is the index's
    assert ("release", "2.x", "pypi") in sources and ("release", "1.26", "index") in sources
    folders = {c["folder"] for c in entry["combinations"]}
    assert folders == ({"cpu"} if label == LABEL else {"cpu-numpy1.26", "cpu-numpy2.x"})


def test_the_page_offers_the_axis_and_says_what_each_wheel_is_built_for(
    tmp_path: Path, write: Write
) -> None:
    out = tmp_path / "site"
    site_entry(numpy_matrix(write, LABEL), out)
    index = (out / "index.html").read_text()
    assert "built for " in index and "combo.requires" in index


def test_an_axis_named_like_a_selector_choice_is_a_usage_error(
    tmp_path: Path, write: Write
) -> None:
    text = numpy_matrix(write, LABEL).read_text()
    text = text.replace("    axes:\n      numpy:", "    axes:\n      installer:")
    text = text.replace("{numpy_major}", "{installer_major}")
    with pytest.raises(UsageError) as info:
        build_site(
            SiteRequest(
                matrix=load_matrix(str(write(text, "m2.yaml"))),
                out=tmp_path / "site",
                download_url=URL,
            )
        )
    assert "releases.1.0.axes.installer" in info.value.render()
