"""Attacks on `relforge variant check`: a tampered variants.json, variant.json or RECORD must be
reported as a failed check (exit 4, naming the file), never crash and never pass."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from packaging.utils import parse_wheel_filename
from variantlib.variant_dist_info import VariantDistInfo
from variantlib.variants_json import VariantsJson

from relforge.errors import ConfigError
from relforge.matrix import variants as fmt
from relforge.matrix.load import load_matrix
from relforge.record import record_hash
from tests.conftest import Result
from tests.unit.test_variants import built, publish
from tests.wheelfactory import WheelSpec, write_wheel

Run = Callable[..., Result]
ROOT = Path(__file__).resolve().parents[2]
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


def test_a_short_record_row_fails_the_check_without_a_crash(tmp_path: Path, run: Run) -> None:
    folder = published(tmp_path)

    def short_row(name: str, data: bytes) -> bytes:
        if not name.endswith("/RECORD"):
            return data
        rows = data.decode().splitlines()
        return "\n".join(r.split(",")[0] if "variant.json" in r else r for r in rows).encode()

    rewrite(folder / CU130, short_row)
    result = run("variant", "check", str(folder))
    assert result.code == 4, result
    assert "internal error" not in result.err
    assert "RECORD does not list" in result.out


@pytest.mark.parametrize("what", ["module", "unlisted", "record-row-dropped"])
def test_a_member_that_does_not_match_record_fails_the_check(
    tmp_path: Path, run: Run, what: str
) -> None:
    """The check says it verifies RECORD: every member must match its row, not only variant.json."""
    folder = published(tmp_path)

    def tamper(name: str, data: bytes) -> bytes:
        if what == "module" and "_core" in name:
            return data + b"\0"
        if what == "record-row-dropped" and name.endswith("/RECORD"):
            return b"\n".join(r for r in data.split(b"\n") if b"_core" not in r)
        return data

    rewrite(folder / CU130, tamper)
    if what == "unlisted":
        with zipfile.ZipFile(folder / CU130, "a") as zf:
            zf.writestr("hello_native/evil.py", b"import os\n")
    result = run("variant", "check", str(folder))
    assert result.code == 4, result
    assert f"FAIL  {CU130}" in result.out
    assert "RECORD" in result.out


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under `root` with its bytes (None for a folder)."""
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with the example matrix (store file://.relforge/store) and a
    validated manifest in dist/; the CLI runs there."""
    manifest, dist = built(tmp_path)
    manifest.save(dist / "relforge-manifest.json")
    (tmp_path / "m.yaml").write_text((ROOT / "matrix" / "example.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    return tmp_path


PUBLISH = (
    "variant",
    "publish",
    "m.yaml",
    "--channel",
    "test",
    "--manifest",
    "dist/relforge-manifest.json",
)
DOC = Path(".relforge/store/whl/test/variant/hello_native-1.0.0-variants.json")


def test_a_dry_run_leaves_the_working_directory_as_it_was(project: Path, run: Run) -> None:
    before = tree(project)
    result = run(*PUBLISH)
    assert result.code == 0, result
    assert "dry run" in result.out
    assert tree(project) == before


def test_a_rerun_writes_nothing_not_even_the_pages(project: Path, run: Run) -> None:
    assert run(*PUBLISH, "--execute").code == 0
    store = project / ".relforge" / "store"
    before = tree(store)
    again = run(*PUBLISH, "--execute")
    assert again.code == 0, again
    assert "everything was already in place" in again.out
    assert tree(store) == before


def test_an_unreadable_published_variants_json_is_refused_not_a_crash(
    project: Path, run: Run
) -> None:
    assert run(*PUBLISH, "--execute").code == 0
    DOC.write_text("{not json")
    for args in (PUBLISH, (*PUBLISH, "--execute")):
        result = run(*args)
        assert result.code == 5, result
        assert "internal error" not in result.err
        assert str(DOC.name) in result.err
    assert DOC.read_text() == "{not json"  # never overwritten


def test_merging_keeps_the_providers_of_labels_published_before(project: Path, run: Run) -> None:
    """A label published earlier with a namespace this matrix no longer names keeps its
    provider: a variants.json listing a namespace without provider is invalid (variantlib)."""
    assert run(*PUBLISH, "--execute").code == 0
    doc = json.loads(DOC.read_text())
    doc["variants"]["gfx942"] = {"amd": {"gfx_arch": ["gfx942"]}}
    doc["providers"]["amd"] = {"requires": ["amd-variant-provider>=0.0.1"]}
    doc["default-priorities"]["namespace"].append("amd")
    DOC.write_text(json.dumps(doc))
    assert run(*PUBLISH, "--execute").code == 0
    merged = json.loads(DOC.read_text())
    assert set(merged["variants"]) == {"cu130", "gfx942", "null"}
    VariantsJson(merged)  # raises when a namespace has no provider
    assert merged["providers"]["amd"] == {"requires": ["amd-variant-provider>=0.0.1"]}
    assert merged["default-priorities"]["namespace"] == ["nvidia", "amd"]
    checked = run("variant", "check", str(DOC.parent))
    assert checked.code == 0, checked


def test_check_fails_a_variants_json_naming_a_namespace_without_provider(
    project: Path, run: Run
) -> None:
    assert run(*PUBLISH, "--execute").code == 0
    doc = json.loads(DOC.read_text())
    doc["variants"]["gfx942"] = {"amd": {"gfx_arch": ["gfx942"]}}
    DOC.write_text(json.dumps(doc))
    result = run("variant", "check", str(DOC.parent))
    assert result.code == 4, result
    assert "amd" in result.out and "provider" in result.out


PROPERTY = 'properties: ["nvidia :: cuda_version_lower_bound :: 13.0"]'
REQUIRES = 'requires: ["nvidia-variant-provider>=0.0.1,<1.0.0"]'
PROVIDERS = "    variants:\n      providers:"


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        # the variant folder is cu130's own index folder: publishing would re-index it
        (PROVIDERS, "    variants:\n      folder: cu130\n      providers:", "index folder cu130"),
        (PROVIDERS, "    variants:\n      folder: cpu\n      providers:", "index folder cpu"),
        # variantlib refuses a property listed twice and a plugin-api that is no object path
        (
            PROPERTY,
            PROPERTY.replace('"]', '", "nvidia :: cuda_version_lower_bound :: 13.0"]'),
            "listed twice",
        ),
        (REQUIRES, REQUIRES + '\n          plugin_api: "not an object path"', "plugin_api"),
    ],
)
def test_variants_that_would_publish_a_lie_are_load_errors(
    write: Callable[[str], Path], old: str, new: str, words: str
) -> None:
    text = (ROOT / "matrix" / "example.yaml").read_text()
    assert old in text
    path = write(text.replace(old, new, 1))
    with pytest.raises(ConfigError) as info:
        load_matrix(path)
    message = info.value.render()
    assert words in message and str(path) in message, message


def test_a_wheel_changed_after_validation_is_not_published(project: Path, run: Run) -> None:
    """The manifest records the sha256 of the validated wheel: other bytes under its name are
    not the wheel that was validated, and must not become a variant wheel."""
    wheel = next((project / "dist").glob("*cu130*.whl"))
    name = parse_wheel_filename(wheel.name)
    tag = next(iter(name[3]))
    wheel.unlink()
    other = WheelSpec(  # a consistent wheel (RECORD and all), only not the validated one
        name="hello-native",
        version=str(name[1]),
        python_tag=tag.interpreter,
        abi_tag=tag.abi,
        platform_tag=tag.platform,
        extension=b"\x7fELF other bytes",
    )
    assert write_wheel(other, project / "dist") == wheel
    for args in (PUBLISH, (*PUBLISH, "--execute")):
        result = run(*args)
        assert result.code == 5, result
        assert wheel.name in result.err and "sha256" in result.err
    assert not (project / ".relforge" / "store").exists()


def test_the_release_channel_is_never_filled_by_variant_publish(project: Path, run: Run) -> None:
    """On a branch whose channels.default is release, no --channel must not mean release: that
    channel is filled by promotion only."""
    matrix = project / "m.yaml"
    text = matrix.read_text()
    assert "  default: nightly" in text
    matrix.write_text(text.replace("  default: nightly", "  default: release", 1))
    result = run("variant", "publish", "m.yaml", "--manifest", "dist/relforge-manifest.json")
    assert result.code == 2, result
    assert "promotion" in result.err
    assert not (project / ".relforge" / "store").exists()


def test_a_manifest_of_another_channel_is_refused(project: Path, run: Run) -> None:
    """A manifest built for test must not fill nightly's variant folder (its versions are the
    test channel's)."""
    result = run(
        "variant", "publish", "m.yaml", "--channel", "nightly",
        "--manifest", "dist/relforge-manifest.json",
    )  # fmt: skip
    assert result.code == 2, result
    assert "'test'" in result.err and "nightly" in result.err
    assert not (project / ".relforge" / "store").exists()


@pytest.mark.parametrize(
    "change",
    [
        lambda doc: doc.pop("providers"),
        lambda doc: doc.pop("default-priorities"),
        lambda doc: doc["default-priorities"].update(namespace=[]),
        lambda doc: doc["default-priorities"].update(namespace=["nvidia", "amd"]),
    ],
)
def test_a_wheel_whose_variant_json_variantlib_refuses_fails_the_check(
    tmp_path: Path, run: Run, change: Callable[[dict[str, Any]], object]
) -> None:
    """Properties that agree with variants.json are not enough: without its providers and
    priorities the wheel's variant.json is refused by installers (variantlib)."""
    folder = published(tmp_path)
    name = "hello_native-1.0.0.dist-info/variant.json"
    with zipfile.ZipFile(folder / CU130) as zf:
        doc = json.loads(zf.read(name))
    change(doc)
    new = fmt.dumps(doc)
    with pytest.raises(Exception):  # noqa: B017 - whatever variantlib raises
        VariantDistInfo(new, "cu130")

    def drop(member: str, data: bytes) -> bytes:
        if member == name:
            return new
        if member.endswith("/RECORD"):  # keep RECORD honest: only variant.json is at fault
            rows = [
                f"{name},{record_hash(new)},{len(new)}" if r.startswith(f"{name},") else r
                for r in data.decode().splitlines()
            ]
            return ("\n".join(rows) + "\n").encode()
        return data

    rewrite(folder / CU130, drop)
    result = run("variant", "check", str(folder))
    assert result.code == 4, result
    assert f"FAIL  {CU130}" in result.out


def encrypted(wheel: Path) -> None:
    """Mark every member of `wheel` as encrypted (flag bit 0), as a hostile archive could."""
    data = bytearray(wheel.read_bytes())
    for signature, flags_at in ((b"PK\x01\x02", 8), (b"PK\x03\x04", 6)):
        at = data.find(signature)
        while at >= 0:
            data[at + flags_at] |= 1
            at = data.find(signature, at + 4)
    wheel.write_bytes(bytes(data))


def test_an_encrypted_member_fails_the_check_without_a_crash(tmp_path: Path, run: Run) -> None:
    folder = published(tmp_path)
    encrypted(folder / CU130)
    result = run("variant", "check", str(folder))
    assert result.code == 4, result
    assert "internal error" not in result.err
    assert f"FAIL  {CU130}" in result.out and "not a readable wheel" in result.out


def test_a_folder_named_like_a_variants_json_fails_the_check_without_a_crash(
    tmp_path: Path, run: Run
) -> None:
    folder = published(tmp_path)
    (folder / "hello_native-2.0.0-variants.json").mkdir()
    result = run("variant", "check", str(folder))
    assert result.code == 4, result
    assert "internal error" not in result.err
    assert "FAIL  hello_native-2.0.0-variants.json" in result.out
