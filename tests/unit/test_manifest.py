from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from relforge.errors import ConfigError
from relforge.manifest import (
    ArtifactManifest,
    ManifestEntry,
    Verdict,
    load_manifest,
    sha256_file,
)


def entry(cell_id: str = "wheel-linux-x86_64-py3.12-cpu", **kw: object) -> ManifestEntry:
    base: dict[str, object] = {
        "cell_id": cell_id,
        "file": f"dist/{cell_id}.whl",
        "size": 10,
        "sha256": "ab" * 32,
        "version": "1.0.0+cpu",
        "package_type": "wheel",
        "variant": "cpu",
        "upload_subfolder": "cpu",
        "build": {"builder": "host", "seconds": 1.5},
    }
    return ManifestEntry(**{**base, **kw})  # type: ignore[arg-type]


def test_round_trip_and_atomic_save(tmp_path: Path) -> None:
    manifest = ArtifactManifest(project="demo", release="1.0", channel="test").with_entries(
        [entry(), entry("wheel-linux-x86_64-py3.13-cpu")]
    )
    path = tmp_path / "out" / "relforge-manifest.json"
    manifest.save(path)
    assert load_manifest(path) == manifest
    assert [p.name for p in path.parent.iterdir()] == ["relforge-manifest.json"]


def test_verdicts_decide_validated() -> None:
    manifest = ArtifactManifest(project="d", release="1.0", channel="test").with_entries([entry()])
    cell = "wheel-linux-x86_64-py3.12-cpu"
    assert not manifest.entries[cell].validated  # never checked
    skipped = manifest.with_verdicts(
        cell, [Verdict(check="RF-R001", status="skip", message="not installable here")]
    )
    assert not skipped.entries[cell].validated  # every check skipped: nothing was checked
    manifest = manifest.with_verdicts(cell, [Verdict(check="RF-W001", status="pass")])
    assert manifest.entries[cell].validated
    manifest = manifest.with_verdicts(
        cell, [Verdict(check="RF-W002", status="fail", message="bad")]
    )
    assert not manifest.entries[cell].validated
    manifest = manifest.with_verdicts(cell, [Verdict(check="RF-W002", status="pass")])
    assert manifest.entries[cell].validated
    assert len(manifest.entries[cell].verdicts) == 2


def test_merge_refuses_other_release() -> None:
    a = ArtifactManifest(project="d", release="1.0", channel="test")
    b = ArtifactManifest(project="d", release="1.1", channel="test")
    with pytest.raises(ConfigError, match="different releases"):
        a.merge(b)
    merged = a.merge(a.with_entries([entry()]))
    assert list(merged.entries) == ["wheel-linux-x86_64-py3.12-cpu"]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("{", "not JSON"),
        ("[]", "not a relforge manifest"),
        ('{"schema_version": 9}', "schema_version 9"),
        (
            '{"schema_version": 1, "project": "d", "release": "1", "channel": "t", '
            '"entries": {"a": {"cell_id": "a", "bogus": 1}}}',
            "unknown keys ['bogus']",
        ),
    ],
)
def test_bad_manifests(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "m.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match=words.replace("[", r"\[").replace("]", r"\]")):
        load_manifest(path)
    with pytest.raises(ConfigError, match="no such manifest"):
        load_manifest(tmp_path / "missing.json")


def test_sha256_file(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abc")
    assert sha256_file(path) == ("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    assert json.loads(json.dumps(entry().to_json()))["build"]["builder"] == "host"


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"size": "big"}, "entries.a.size is not an integer"),
        ({"size": True}, "entries.a.size is not an integer"),
        ({"size": -1}, "entries.a.size is not an integer"),
        ({"sha256": 5}, "entries.a.sha256 is not a string"),
        ({"file": None}, "entries.a.file is not a string"),
        ({"platform_tag": 3}, "entries.a.platform_tag is not a string"),
        ({"build": []}, "entries.a.build is not an object"),
        ({"verdicts": [{"check": "RF-W001", "status": "maybe"}]}, "status 'maybe'"),
        ({"verdicts": {"check": "RF-W001"}}, "entries.a.verdicts is not a list"),
        ({"verdicts": [{"check": 1, "status": "pass"}]}, "entries.a.verdicts.0.check"),
    ],
)
def test_entries_of_the_wrong_type_are_config_errors(
    tmp_path: Path, change: dict[str, object], words: str
) -> None:
    good = entry("a").to_json()
    path = tmp_path / "m.json"
    top = {"schema_version": 1, "project": "d", "release": "1", "channel": "test"}
    path.write_text(json.dumps({**top, "entries": {"a": good}}))
    assert load_manifest(path).entries["a"].size == 10
    path.write_text(json.dumps({**top, "entries": {"a": {**good, **change}}}))
    with pytest.raises(ConfigError, match=re.escape(words)):
        load_manifest(path)
    path.write_text(json.dumps({**top, "entries": [good]}))
    with pytest.raises(ConfigError, match="entries is not an object"):
        load_manifest(path)
