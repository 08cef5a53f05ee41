"""Attacks on `relforge variant check`: a tampered variants.json, variant.json or RECORD must be
reported as a failed check (exit 4, naming the file), never crash and never pass."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.variants import format as fmt
from tests.conftest import Result
from tests.unit.test_variants import built, publish

Run = Callable[..., Result]
CU130 = "hello_native-1.0.0-cp312-cp312-manylinux_2_34_x86_64-cu130.whl"


def published(tmp_path: Path) -> Path:
    manifest, dist = built(tmp_path)
    publish(tmp_path, manifest, dist)
    return tmp_path / "store" / "whl" / "test" / "variant"


def rewrite(wheel: Path, change: Callable[[str, bytes], bytes | None]) -> None:
    """Rewrite the members of `wheel` through `change` (None drops a member)."""
    with zipfile.ZipFile(wheel) as zf:
        members = [(info, zf.read(info)) for info in zf.infolist()]
    with zipfile.ZipFile(wheel, "w") as zf:
        for info, data in members:
            new = change(info.filename, data)
            if new is not None:
                zf.writestr(info, new)


@pytest.mark.parametrize(
    "variants",
    [
        {"cu130": {"nvidia": ["13.0"]}},  # features must be a mapping
        {"cu130": {"nvidia": {"cuda_version_lower_bound": 13}}},  # values must be a list
        {"cu130": {"nvidia": {"cuda_version_lower_bound": "13.0"}}},  # not a list of letters
        {"cu130": {"nvidia": {"cuda_version_lower_bound": [13.0]}}},  # values are strings
        {"cu130": ["nvidia"]},
        {"../cu130": {}},  # a label that is no label
    ],
)
def test_a_malformed_variants_json_fails_the_check_without_a_crash(
    tmp_path: Path, run: Run, variants: dict[str, object]
) -> None:
    folder = published(tmp_path)
    doc = folder / "hello_native-1.0.0-variants.json"
    doc.write_text(json.dumps({"$schema": fmt.SCHEMA_URL, "variants": variants}))
    result = run("variant", "check", str(folder))
    assert result.code == 4, result
    assert "internal error" not in result.err
    assert "FAIL  hello_native-1.0.0-variants.json" in result.out, result.out
