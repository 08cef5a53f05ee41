"""Helpers for the promotion tests: real wheels built with pip + setuptools, manifests, a
matrix whose publishing section points at a given store."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Mapping
from pathlib import Path

from relforge.manifest import ArtifactManifest, ManifestEntry, Verdict, sha256_file

PROJECT = "rfdemo"


def matrix_head(size_limit_mb: int = 5) -> str:
    """The project `rfdemo` and its three channels (the start of a matrix file)."""
    return textwrap.dedent(f"""\
        schema_version: 1
        project:
          name: rfdemo
          size_limit_mb: {size_limit_mb}
        channels:
          nightly: {{version_scheme: dev-date, prefix: whl/nightly}}
          test: {{version_scheme: final, prefix: whl/test}}
          release: {{version_scheme: final, prefix: whl}}
        """)


def matrix_text(publishing: str = "", release_extra: str = "") -> str:
    """Release 1.0 of `rfdemo`: linux cpu + cu128, windows cpu; PyPI takes linux cu128 and
    windows cpu."""
    return (
        matrix_head()
        + (publishing or "")
        + textwrap.dedent("""\
        releases:
          "1.0":
            date: 2026-01-01
            python: ["3.11"]
            platforms:
              linux-x86_64: {os: linux, arch: x86_64, platform_tag: manylinux_2_28_x86_64}
              windows-x86_64:
                os: windows
                arch: x86_64
                platform_tag: win_amd64
                cxx11_abi: false
            accelerators:
              cpu:
                kind: cpu
                platforms: {linux-x86_64: {}, windows-x86_64: {}}
              cu128:
                kind: cuda
                version: 12.8.1
                platforms: {linux-x86_64: {}}
            pypi_default: {linux-x86_64: cu128, windows-x86_64: cpu}
        """)
        + release_extra
    )


CELLS = {
    "wheel-linux-x86_64-py3.11-cpu": ("cpu", "manylinux_2_28_x86_64"),
    "wheel-linux-x86_64-py3.11-cu128": ("cu128", "manylinux_2_28_x86_64"),
    "wheel-windows-x86_64-py3.11-cpu": ("cpu", "win_amd64"),
}


# Wheels built in this test process, by (version, plat, payload): pip + setuptools take about
# two CPU seconds a build, and the promotion tests ask for the same few wheels over and over.
_BUILT: dict[tuple[str, str, str], Path] = {}


def build_wheel(out: Path, *, version: str, plat: str, payload: str = "") -> Path:
    """A real wheel of `rfdemo` built by pip with setuptools (pure Python, tagged `plat`), in
    `out/dist`.  Built once per test process for each (version, plat, payload), then copied."""
    key = (version, plat, payload)
    built = _BUILT.get(key)
    if built is None or not built.is_file():
        store = Path(tempfile.mkdtemp(prefix="relforge-test-wheel-"))
        atexit.register(shutil.rmtree, store, True)
        built = _BUILT[key] = _pip_wheel(store, version=version, plat=plat, payload=payload)
    dist = out / "dist"
    dist.mkdir(parents=True, exist_ok=True)
    copy = dist / built.name
    shutil.copyfile(built, copy)
    return copy


def _pip_wheel(out: Path, *, version: str, plat: str, payload: str) -> Path:
    src = out / f"src-{version}-{plat}"
    shutil.rmtree(src, ignore_errors=True)
    (src / "rfdemo").mkdir(parents=True)
    (src / "rfdemo" / "__init__.py").write_text(
        f'VERSION = "{version}"\nPAYLOAD = {payload!r}\n', encoding="utf-8"
    )
    (src / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools", "wheel"]\n'
        'build-backend = "setuptools.build_meta"\n',
        encoding="utf-8",
    )
    (src / "setup.cfg").write_text(
        textwrap.dedent(f"""\
            [metadata]
            name = rfdemo
            version = {version}
            description = relforge test package
            classifiers =
                Programming Language :: Python :: 3
                Private :: Do Not Upload
            [options]
            packages = rfdemo
            python_requires = >=3.8
            [bdist_wheel]
            plat_name = {plat}
            """),
        encoding="utf-8",
    )
    dist = out / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--isolated",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(dist),
            str(src),
        ],
        check=True,
        capture_output=True,
    )
    shutil.rmtree(src)
    local = version.replace("+", "+")
    (found,) = dist.glob(f"rfdemo-{local}-*{plat}.whl")
    return found


def padded_wheel(wheel: Path, size: int, seed: int = 0) -> Path:
    """`wheel` rewritten in place with `rfdemo/blob.bin` added: `size` random bytes, stored
    uncompressed and listed in RECORD, so the (valid) wheel is large enough to go in parts."""
    import base64
    import hashlib
    import random
    import zipfile

    blob = random.Random(seed).randbytes(size)
    digest = base64.urlsafe_b64encode(hashlib.sha256(blob).digest()).rstrip(b"=").decode()
    padded = wheel.with_suffix(".tmp")
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(padded, "w") as out:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                data += f"rfdemo/blob.bin,sha256={digest},{size}\n".encode()
            out.writestr(info, data)
        out.writestr(zipfile.ZipInfo("rfdemo/blob.bin"), blob, zipfile.ZIP_STORED)
    padded.replace(wheel)
    return wheel


def write_manifest(
    path: Path,
    wheels: dict[str, Path],
    *,
    channel: str = "test",
    validated: bool | dict[str, bool] = True,
    cells: Mapping[str, tuple[str, str]] = CELLS,
) -> ArtifactManifest:
    """A manifest at `path` for {cell id: wheel}, with passing verdicts unless told not to;
    `cells`: each cell's variant and platform tag (those of matrix_text by default)."""
    manifest = ArtifactManifest(project=PROJECT, release="1.0", channel=channel)
    entries = []
    for cell_id, wheel in wheels.items():
        variant, plat = cells[cell_id]
        version = wheel.name.split("-")[1]
        entries.append(
            ManifestEntry(
                cell_id=cell_id,
                file=os.path.relpath(wheel, path.parent),
                size=wheel.stat().st_size,
                sha256=sha256_file(wheel),
                version=version,
                package_type="wheel",
                variant=variant,
                upload_subfolder=variant,
                platform_tag=plat,
                python="3.11",
            )
        )
    manifest = manifest.with_entries(entries)
    for cell_id in wheels:
        ok = validated if isinstance(validated, bool) else validated.get(cell_id, True)
        verdict = Verdict(check="RF-W001", status="pass" if ok else "fail", message="")
        if isinstance(validated, bool) and not validated:
            continue  # never checked
        manifest = manifest.with_verdicts(cell_id, [verdict])
    manifest.save(path)
    return manifest


def release_wheels(dist: Path, version: str = "1.0.0") -> dict[str, Path]:
    """One wheel per cell of release 1.0 (the variant is the local version)."""
    out = {}
    for cell_id, (variant, plat) in CELLS.items():
        out[cell_id] = build_wheel(dist, version=f"{version}+{variant}", plat=plat, payload=cell_id)
    return out
