"""PEP 825 variant wheels from matrix/example.yaml: staged without recompression, published
with their variants.json, consistent, and read back by variantlib (an independent reader)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from variantlib.commands.analyze_wheel import analyze_wheel
from variantlib.constants import VALIDATION_WHEEL_NAME_REGEX
from variantlib.variant_dist_info import VariantDistInfo
from variantlib.variants_json import VariantsJson

from relforge.errors import ConfigError, RefusedError
from relforge.manifest import ArtifactManifest, ManifestEntry, Verdict, sha256_file
from relforge.matrix import variants as fmt
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from relforge.stores.local import LocalStore
from relforge.variants.labelcheck import check_variant_folder, check_variant_wheel
from relforge.variants.variantstage import stage_variant_wheel, variant_name
from relforge.variants.variantupload import VariantRequest, apply_variants, plan_variants
from tests.conftest import Run, Write
from tests.wheelfactory import WheelSpec, write_wheel

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "matrix" / "example.yaml"
CELLS = ("wheel-linux-x86_64-py3.12-cpu", "wheel-linux-x86_64-py3.12-cu130")


def built(tmp_path: Path, *, validated: bool = True) -> tuple[ArtifactManifest, Path]:
    """Wheels shaped like the example's two Python 3.12 cells, in a manifest like a build's."""
    matrix = load_matrix(EXAMPLE)
    cells = {c.id: c for c in expand_cells(matrix, "1.0", channel="test")}
    dist = tmp_path / "dist"
    entries = {}
    for cell_id in CELLS:
        cell = cells[cell_id]
        wheel = write_wheel(
            WheelSpec(
                name="hello-native",
                version=cell.version or "",
                python_tag="cp312",
                abi_tag="cp312",
                platform_tag=cell.platform_tag or "",
                extension=b"\x7fELF" + bytes(range(256)) * 64,
            ),
            dist,
        )
        verdicts = (Verdict(check="RF-V010", status="pass" if validated else "fail"),)
        entries[cell_id] = ManifestEntry(
            cell_id=cell_id,
            file=wheel.name,
            size=wheel.stat().st_size,
            sha256=sha256_file(wheel),
            version=cell.version or "",
            package_type="wheel",
            variant=cell.variant,
            upload_subfolder=cell.upload_subfolder,
            platform_tag=cell.platform_tag,
            python=cell.python,
            verdicts=verdicts,
        )
    manifest = ArtifactManifest(
        project="hello-native", release="1.0", channel="test", entries=entries
    )
    return manifest, dist


def publish(tmp_path: Path, manifest: ArtifactManifest, dist: Path) -> tuple[LocalStore, int]:
    store = LocalStore(tmp_path / "store")
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    request = VariantRequest(
        matrix=load_matrix(EXAMPLE), release="1.0", channel="test", manifest=manifest, dist=dist
    )
    plan = plan_variants(store, work, request)
    return store, apply_variants(store, plan)


def test_example_variant_wheels_pass_variantlib(tmp_path: Path) -> None:
    manifest, dist = built(tmp_path)
    _, written = publish(tmp_path, manifest, dist)
    folder = tmp_path / "store" / "whl" / "test" / "variant"
    names = sorted(p.name for p in folder.iterdir() if p.is_file())
    assert names == [
        "hello_native-1.0.0-cp312-cp312-manylinux_2_28_x86_64-null.whl",
        "hello_native-1.0.0-cp312-cp312-manylinux_2_34_x86_64-cu130.whl",
        "hello_native-1.0.0-variants.json",
        "index.html",
    ]
    assert written == 3
    index = json.loads((folder / "hello_native-1.0.0-variants.json").read_text())
    assert index["$schema"] == fmt.SCHEMA_URL
    assert index["variants"] == {
        "cu130": {"nvidia": {"cuda_version_lower_bound": ["13.0"]}},
        "null": {},
    }
    # variantlib reads the index-level file and every wheel's variant.json
    parsed = VariantsJson(index)
    assert set(parsed.variants) == {"cu130", "null"}
    assert parsed.namespace_priorities == ["nvidia"]
    for wheel in folder.glob("*.whl"):
        match = VALIDATION_WHEEL_NAME_REGEX.fullmatch(wheel.name)
        assert match is not None and match.group("variant_label") in ("null", "cu130")
        with zipfile.ZipFile(wheel) as zf:
            data = zf.read("hello_native-1.0.0.dist-info/variant.json")
            assert zf.testzip() is None
        info = VariantDistInfo(data, match.group("variant_label"))
        assert info.variant_desc == parsed.variants[match.group("variant_label")]
        analyze_wheel(["-i", str(wheel)])  # raises on anything it cannot read
    page = (folder / "hello-native" / "index.html").read_text()
    assert "hello_native-1.0.0-variants.json#sha256=" in page
    assert page.count(".whl#sha256=") == 2
    assert check_variant_folder(folder) == {
        "hello_native-1.0.0-cp312-cp312-manylinux_2_28_x86_64-null.whl": [],
        "hello_native-1.0.0-cp312-cp312-manylinux_2_34_x86_64-cu130.whl": [],
    }
    again = publish(tmp_path, manifest, dist)[1]  # a rerun writes nothing
    assert again == 0


def test_members_are_copied_without_recompression(tmp_path: Path) -> None:
    manifest, dist = built(tmp_path)
    source = dist / manifest.entries[CELLS[1]].file
    out = stage_variant_wheel(source, tmp_path / "out", label="cu130", variant_json=b"{}\n")
    with zipfile.ZipFile(source) as a, zipfile.ZipFile(out.path) as b:
        ext = next(n for n in a.namelist() if "_core" in n)
        before, after = a.getinfo(ext), b.getinfo(ext)
        assert (before.CRC, before.compress_size, before.compress_type) == (
            after.CRC,
            after.compress_size,
            after.compress_type,
        )
        assert b.namelist()[-1] == "hello_native-1.0.0.dist-info/RECORD"  # RECORD stays last
        assert "Version: 1.0.0\n" in b.read("hello_native-1.0.0.dist-info/METADATA").decode()
        record = b.read("hello_native-1.0.0.dist-info/RECORD").decode()
        assert "hello_native-1.0.0.dist-info/variant.json,sha256=" in record
        assert "+cu130" not in record
    assert out.path.name == variant_name(source.name, "cu130")


def test_lies_are_caught(tmp_path: Path) -> None:
    manifest, dist = built(tmp_path)
    source = dist / manifest.entries[CELLS[1]].file
    cu130 = frozenset({("nvidia", "cuda_version_lower_bound", "13.0")})
    providers = {  # what variantlib requires of every variant.json
        "default-priorities": {"namespace": ["nvidia"]},
        "providers": {"nvidia": {"requires": ["nvidia-variant-provider"]}},
    }
    fake = fmt.dumps(
        {
            "$schema": fmt.SCHEMA_URL,
            **providers,
            "variants": {"cu130": {"nvidia": {"cuda_version_lower_bound": ["12.8"]}}},
        }
    )
    staged = stage_variant_wheel(source, tmp_path / "a", label="cu130", variant_json=fake)
    assert any("12.8" in p for p in check_variant_wheel(staged.path, {"cu130": cu130}))
    renamed = staged.path.with_name(staged.path.name.replace("-cu130.whl", "-cu128.whl"))
    staged.path.rename(renamed)
    assert any("the file name cu128" in p for p in check_variant_wheel(renamed, {"cu130": cu130}))
    honest = fmt.dumps(
        {
            "$schema": fmt.SCHEMA_URL,
            **providers,
            "variants": {"cu130": {"nvidia": {"cuda_version_lower_bound": ["13.0"]}}},
        }
    )
    good = stage_variant_wheel(source, tmp_path / "b", label="cu130", variant_json=honest)
    assert check_variant_wheel(good.path, {"cu130": cu130}) == []
    assert check_variant_wheel(good.path, {"cu128": cu130}) == [
        "label cu130 is not in the variants.json"
    ]
    with pytest.raises(RefusedError, match="variant wheel already"):
        stage_variant_wheel(good.path, tmp_path / "c", label="cu130", variant_json=honest)


def test_unvalidated_wheels_and_changed_meanings_are_refused(tmp_path: Path) -> None:
    manifest, dist = built(tmp_path, validated=False)
    with pytest.raises(RefusedError, match="not validated"):
        publish(tmp_path, manifest, dist)
    manifest, dist = built(tmp_path)
    publish(tmp_path, manifest, dist)
    doc = tmp_path / "store" / "whl" / "test" / "variant" / "hello_native-1.0.0-variants.json"
    data = json.loads(doc.read_text())
    data["variants"]["cu130"]["nvidia"]["cuda_version_lower_bound"] = ["12.0"]
    doc.write_text(json.dumps(data))
    with pytest.raises(RefusedError, match="other properties"):
        publish(tmp_path, manifest, dist)


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("label: cu130", "label: CU130", "must be 0-9, a-z"),
        (
            'label: "null"                  # the null variant: no properties',
            "label: cpu",
            "null label",
        ),
        ("nvidia :: cuda_version_lower_bound :: 13.0", "amd :: rocm :: 6.4", "has no provider"),
        (
            "nvidia :: cuda_version_lower_bound :: 13.0",
            "nvidia : cuda : 13",
            "namespace :: feature",
        ),
        ("match: {variant: cu130}", "match: {variant: cu130, numpy: '2'}", "unknown cell field"),
    ],
)
def test_bad_variants_are_load_errors(write: Write, old: str, new: str, words: str) -> None:
    text = EXAMPLE.read_text()
    assert old in text
    path = write(text.replace(old, new))
    with pytest.raises(ConfigError) as info:
        load_matrix(path)
    assert words in info.value.render() and str(path) in info.value.render()


def test_axis_values_sharing_a_variant_label_are_a_load_error(
    write: Write,
) -> None:
    """numpy 1.26 and 2.x wheels of one Python would both be `…-null.whl`."""
    text = (ROOT / "matrix" / "numpy-abi.yaml").read_text()
    shared = text + (
        "    variants:\n"
        "      providers:\n"
        "        nvidia: {requires: [nvidia-variant-provider]}\n"
        "      wheels:\n"
        "        - match: {variant: cpu}\n"
        '          label: "null"\n'
    )
    with pytest.raises(ConfigError) as info:
        load_matrix(write(shared))
    message = info.value.render()
    assert "wheel-linux-x86_64-py3.11-cpu-numpy1.26 and wheel-linux-x86_64-py3.11-cpu-numpy2.x" in (
        message
    )
    assert "variants.wheels" in message
    apart = shared.replace(
        '        - match: {variant: cpu}\n          label: "null"\n',
        '        - match: {numpy: "1.26"}\n          label: "null"\n'
        '        - match: {numpy: "2.x"}\n          label: np2\n'
        '          properties: ["nvidia :: cuda_version_lower_bound :: 12.0"]\n',
    )
    load_matrix(write(apart, "apart.yaml"))


def test_variant_publish_is_a_dry_run_then_writes_then_is_a_no_op(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    manifest, dist = built(tmp_path)
    manifest.save(dist / "relforge-manifest.json")
    monkeypatch.chdir(tmp_path)  # the example's store is .relforge/store under it
    args = ("variant", "publish", str(EXAMPLE), "--channel", "test", "--manifest")
    dry = run(*args, str(dist / "relforge-manifest.json"))
    assert dry.code == 0, dry.err
    assert dry.out.count("  upload  whl/test/variant/") == 2 and "dry run" in dry.out
    assert "  write   whl/test/variant/hello_native-1.0.0-variants.json" in dry.out
    assert not (tmp_path / ".relforge" / "store").exists()
    done = run(*args, str(dist / "relforge-manifest.json"), "--execute")
    assert done.code == 0, done.err
    assert done.out.splitlines()[-1] == (
        "variant publish: 3 object(s) written to whl/test/variant/"
    )
    again = run(*args, str(dist / "relforge-manifest.json"), "--execute")
    assert again.out.count("  keep    whl/test/variant/") == 3  # two wheels, variants.json
    assert again.out.splitlines()[-1].endswith(
        "0 object(s) written to whl/test/variant/ — everything was already in place"
    )
