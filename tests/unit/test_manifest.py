from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from relforge.errors import ConfigError, UsageError
from relforge.manifest import (
    ArtifactManifest,
    ManifestEntry,
    Verdict,
    load_manifest,
    manifest_target,
    sha256_file,
)


def entry(cell_id: str = "wheel-linux-x86_64-py3.12-cpu", **kw: Any) -> ManifestEntry:
    base = ManifestEntry(
        cell_id=cell_id,
        file=f"dist/{cell_id}.whl",
        size=10,
        sha256="ab" * 32,
        version="1.0.0+cpu",
        package_type="wheel",
        variant="cpu",
        upload_subfolder="cpu",
        build={"builder": "host", "seconds": 1.5},
    )
    return dataclasses.replace(base, **kw)


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


def _manifest_text(entries: object) -> str:
    return json.dumps(
        {"schema_version": 1, "project": "d", "release": "1", "channel": "t", "entries": entries}
    )


def _with(**changes: object) -> str:
    raw = entry().to_json() | changes
    return _manifest_text({raw["cell_id"]: raw})


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (_manifest_text([]), "entries is list, not an object"),
        (_manifest_text(None), "entries is NoneType"),
        (_with(file=123), ".file is 123"),
        (_with(file=None), ".file is None"),
        (_with(size="abc"), ".size is 'abc'"),
        (_with(size=-1), ".size is -1"),
        (_with(build=[1, 2]), ".build is not an object"),
        (_with(verdicts=None), ".verdicts is not a list"),
        (_with(verdicts=[{"check": "RF-V010", "status": "bogus"}]), "verdicts[0]"),
        (_with(platform_tag=7), ".platform_tag is 7"),
    ],
)
def test_fields_of_the_wrong_type_are_config_errors(tmp_path: Path, text: str, words: str) -> None:
    """A hand-edited manifest stops with one paragraph naming the key, never a crash later."""
    path = tmp_path / "m.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match="not a relforge manifest") as caught:
        load_manifest(path)
    assert words in caught.value.message


def test_a_warning_is_kept_and_never_blocks(tmp_path: Path) -> None:
    """RF-R005's warning (a __version__ the build did not stamp) survives the manifest and
    leaves the entry publishable; the report counts it and names it."""
    from relforge.validate.report import ArtifactReport, ValidationReport

    cell = "wheel-linux-x86_64-py3.12-cpu"
    warning = Verdict(check="RF-R005", status="warn", message="__version__ is '0+unknown'")
    manifest = (
        ArtifactManifest(project="d", release="1.0", channel="test")
        .with_entries([entry()])
        .with_verdicts(cell, [Verdict(check="RF-V010", status="pass"), warning])
    )
    path = tmp_path / "relforge-manifest.json"
    manifest.save(path)
    again = load_manifest(path)
    assert again.entries[cell].verdicts[-1] == warning
    assert again.entries[cell].validated
    report = ValidationReport(
        project="d",
        release="1.0",
        channel="test",
        artifacts=(ArtifactReport(subject=cell, cell_id=cell, file="x.whl", verdicts=(warning,)),),
    )
    data = report.to_json()
    assert data["status"] == "pass" and data["counts"]["warn"] == 1
    assert "0 skipped, 1 warned on 1 artifacts" in report.to_markdown()
    assert "warning: **RF-R005**" in report.to_markdown()
    assert "warning: __version__ is" in report.to_junit()


def test_a_verdict_of_a_check_this_relforge_does_not_know_is_reported_not_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A manifest from another relforge can carry a check ID this registry lacks: every view of
    the report names it without a name; a message with `<…>` or `|` stays one table cell."""
    from relforge.validate.report import ArtifactReport, ValidationReport

    odd = Verdict(check="RF-V999", status="fail", message="needs <prefix> | and\nmore")
    report = ValidationReport(
        project="d",
        release="1.0",
        channel="test",
        artifacts=(ArtifactReport(subject="c", cell_id="c", file="x.whl", verdicts=(odd,)),),
    )
    report.print_table()
    assert "RF-V999" in capsys.readouterr().out
    row = report.to_markdown().splitlines()[-1]
    assert "**RF-V999** needs &lt;prefix&gt; \\| and more" in row and row.count(" | ") == 2
    assert report.to_json()["artifacts"][0]["verdicts"][0]["name"] == ""
    assert 'name="RF-V999 "' in report.to_junit()


def test_skipped_cells_round_trip_and_give_way_to_entries(tmp_path: Path) -> None:
    """The cells a build skipped are recorded (the key appears only then); an entry of the
    cell replaces its skip, a skip of a cell drops its entry."""
    cell, other = "wheel-linux-x86_64-py3.12-cpu", "wheel-linux-x86_64-py3.13-cpu"
    plain = ArtifactManifest(project="d", release="1.0", channel="dev").with_entries([entry()])
    assert "skipped" not in plain.to_json()
    manifest = plain.with_skipped({other: "no Docker image"})
    path = tmp_path / "relforge-manifest.json"
    manifest.save(path)
    assert json.loads(path.read_text())["skipped"] == {other: "no Docker image"}
    assert load_manifest(path) == manifest
    assert dict(manifest.with_entries([entry(other)]).skipped) == {}
    assert list(manifest.with_skipped({cell: "gone"}).entries) == []


@pytest.mark.parametrize("skipped", [["a"], {"a": 1}, "a"])
def test_a_malformed_skipped_key_is_a_config_error(tmp_path: Path, skipped: object) -> None:
    path = tmp_path / "relforge-manifest.json"
    data = {"schema_version": 1, "project": "d", "release": "1.0", "channel": "dev"}
    path.write_text(json.dumps({**data, "entries": {}, "skipped": skipped}))
    with pytest.raises(ConfigError, match="skipped is"):
        load_manifest(path)


def test_a_manifest_decides_its_release_and_channel() -> None:
    """No --release/--channel: the manifest's; the same ones given: fine; another: exit 2 with
    a hint naming the manifest's and how to build for the other."""
    manifest = ArtifactManifest(project="d", release="0.1", channel="dev")
    path = Path("dist/relforge-manifest.json")
    assert manifest_target(manifest, path, release=None, channel=None) == ("0.1", "dev")
    assert manifest_target(manifest, path, release="0.1", channel="dev") == ("0.1", "dev")
    with pytest.raises(UsageError) as caught:
        manifest_target(manifest, path, release=None, channel="nightly", matrix_file="m.yaml")
    error = caught.value
    assert error.exit_code == 2 and error.key == "--channel"
    assert "is for release 0.1 on dev, not 0.1 on nightly" in error.message
    assert "drop --channel to take the manifest's (dev)" in (error.hint or "")
    assert "relforge build m.yaml --release 0.1 --channel nightly" in (error.hint or "")
    with pytest.raises(UsageError, match=r"not 0\.2 on dev") as caught:
        manifest_target(manifest, path, release="0.2", channel=None)
    assert caught.value.key == "--release"
