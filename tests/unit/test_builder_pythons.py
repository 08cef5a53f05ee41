"""The multi-Python builder image without an engine: which host interpreters are found (and
which are reported missing), what the image's root holds, the content digest, the in-image
check's verdicts, and what the image labels let `auto` and skips decide."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from relforge.builders.backends.container import image_lacks
from relforge.builders.images.imagecheck import parse_check
from relforge.builders.images.imageroot import CudaToolkit, ImageRoot
from relforge.builders.images.pythons import HostPython, find_host_pythons
from relforge.interpreters import find_interpreter, probe
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from relforge.matrix.values import PythonVersion
from tests.conftest import EXAMPLE, Result

Run = Callable[..., Result]
PYENV = Path.home() / ".pyenv" / "versions"


def fake_prefix(root: Path, version: str = "3.12.1") -> HostPython:
    """A CPython-shaped prefix: bin/, libpython, a stdlib with a test suite and site-packages
    full of the host's packages."""
    minor = ".".join(version.split(".")[:2])
    prefix = root / "prefix"
    stdlib = prefix / "lib" / f"python{minor}"
    for folder in ("bin", "include", "lib-dynload", "test", "site-packages/boto3"):
        target = prefix / folder if folder in ("bin", "include") else stdlib / folder
        target.mkdir(parents=True)
    (prefix / "bin" / f"python{minor}").write_bytes(b"\x7fELF not really")
    (prefix / "bin" / "python3").symlink_to(f"python{minor}")
    (prefix / "bin" / "pip3").write_text(f"#!{prefix}/bin/python{minor}\n")
    (prefix / "bin" / f"python{minor}-config").write_text("#!/bin/sh\n")
    (prefix / "lib" / f"libpython{minor}.so.1.0").write_bytes(b"lib")
    config = stdlib / f"config-{minor}-x86_64-linux-gnu"
    config.mkdir(parents=True)
    (config / f"libpython{minor}.a").write_bytes(b"!<arch>\n")
    (prefix / "lib" / f"libpython{minor}.a").symlink_to(config / f"libpython{minor}.a")
    (config / "Makefile").write_text("# sysconfig's\n")
    rpath = f"-L{prefix}/lib -Wl,-rpath,{prefix}/lib"
    (stdlib / "_sysconfigdata__linux_x86_64-linux-gnu.py").write_text(
        f"build_time_vars = {{'LDSHARED': 'gcc -shared {rpath} {rpath}', "
        f"'LIBDIR': '{prefix}/lib', 'LDCXXSHARED': 'g++ -shared'}}\n"
    )
    (stdlib / "__pycache__").mkdir()
    (stdlib / "__pycache__" / "_sysconfigdata__linux_x86_64-linux-gnu.cpython-312.pyc").write_bytes(
        b"stale"
    )
    (stdlib / "os.py").write_text("# os\n")
    (stdlib / "test" / "test_os.py").write_text("# a test\n")
    (stdlib / "site-packages" / "boto3" / "__init__.py").write_text("# host package\n")
    (stdlib / "site-packages" / "_sandboxing_egress_ca.pth").write_text("import x\n")
    return HostPython(
        wanted=minor,
        version=version,
        free_threaded=False,
        prefix=prefix,
        executable=prefix / "bin" / f"python{minor}",
        stdlib=stdlib,
        origin="pyenv",
        can_make_venv=True,
    )


def fake_layer(root: Path) -> Path:
    layer = root / "layer"
    (layer / "pip").mkdir(parents=True)
    (layer / "pip" / "__init__.py").write_text("# pip\n")
    (layer / "bin").mkdir()
    (layer / "bin" / "pip").write_text("#!/host/python\n")
    (layer / ".complete").write_text("[]")
    return layer


def test_the_hosts_pythons_are_found_and_the_missing_ones_named() -> None:
    found, missing = find_host_pythons(["3.12", "3.10", "3.13t", "3.12"])
    assert [p.wanted for p in found] == ["3.12", "3.10"]
    assert found[0].tag == "cp312-cp312" and found[0].origin == "pyenv"
    assert found[0].version.startswith("3.12.") and not found[0].free_threaded
    assert str(found[0].prefix).startswith(str(PYENV))
    assert [m.wanted for m in missing] == ["3.13t"]
    assert "no CPython 3.13t" in missing[0].why and "pyenv" in missing[0].why


def test_a_free_threaded_interpreter_gets_manylinux_t_names() -> None:
    python = HostPython(
        wanted="3.13t",
        version="3.13.1",
        free_threaded=True,
        prefix=Path("/p"),
        executable=Path("/p/bin/python3.13t"),
        stdlib=Path("/p/lib/python3.13t"),
        origin="uv",
        can_make_venv=True,
    )
    assert (python.tag, python.home) == ("cp313-cp313t", "/opt/_internal/cpython-3.13.1t")
    assert python.label == "CPython 3.13.1 (free-threaded) from uv (/p)"


def test_a_pyenv_folder_that_lies_about_its_version_is_not_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """versions/3.12.9 whose python3.12 is really 3.11: reported, never copied as 3.12."""
    real = next(PYENV.glob("3.11.*")) / "bin" / "python3.11"
    liar = tmp_path / "pyenv" / "versions" / "3.12.9" / "bin"
    liar.mkdir(parents=True)
    (liar / "python3.12").symlink_to(real)
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    monkeypatch.setenv("PATH", "/nonexistent")
    found, missing = find_host_pythons(["3.12"])
    assert found == []
    assert "is 3.11" in missing[0].why


def test_the_image_root_is_laid_out_like_manylinux(tmp_path: Path) -> None:
    python = fake_prefix(tmp_path)
    plan = ImageRoot(pythons=[python], layers={python.tag: fake_layer(tmp_path)}, cuda=[], base="b")
    entries = {e.arcname: e for e in plan.entries()}
    home = "rootfs/opt/_internal/cpython-3.12.1"
    assert entries["rootfs/opt/python/cp312-cp312"].link == "/opt/_internal/cpython-3.12.1"
    assert entries[f"{home}/bin/python3.12"].patch_rpath == "$ORIGIN/../lib"
    assert entries[f"{home}/bin/python3"].link == "python3.12"
    assert f"{home}/lib/libpython3.12.so.1.0" in entries
    assert f"{home}/lib/python3.12/site-packages/pip/__init__.py" in entries
    assert f"{home}/bin/python3.12-config" in entries
    leaked = [
        name
        for name in entries
        if "/test/" in name or "boto3" in name or "_sandboxing" in name or "pip3" in name
    ]
    assert leaked == []  # the test suite, the host's packages and their scripts stay behind
    assert f"{home}/lib/python3.12/config-3.12-x86_64-linux-gnu/Makefile" in entries
    assert not any(name.endswith(".a") for name in entries)  # static libpython, as manylinux
    assert not any(name.endswith((".complete", "/bin/pip")) for name in entries)


def test_the_copied_build_configuration_names_the_image_prefix_and_no_host_rpath(
    tmp_path: Path,
) -> None:
    """A pyenv interpreter's LDSHARED carries -Wl,-rpath,<its prefix>/lib: every setuptools
    extension built with the copy in the image got that RUNPATH (RF-V043).  The copy's
    sysconfig names the image's prefix and no rpath; the stale bytecode stays behind."""
    python = fake_prefix(tmp_path)
    plan = ImageRoot(pythons=[python], layers={}, cuda=[], base="b")
    entries = {e.arcname: e for e in plan.entries()}
    stdlib = "rootfs/opt/_internal/cpython-3.12.1/lib/python3.12"
    copied = entries[f"{stdlib}/_sysconfigdata__linux_x86_64-linux-gnu.py"].rewritten().decode()
    namespace: dict[str, dict[str, str]] = {}
    exec(copied, namespace)  # sysconfig's own file: a dict literal
    config = namespace["build_time_vars"]
    lib = "/opt/_internal/cpython-3.12.1/lib"
    assert config["LDSHARED"].split() == ["gcc", "-shared", f"-L{lib}", f"-L{lib}"]
    assert (config["LIBDIR"], config["LDCXXSHARED"]) == (lib, "g++ -shared")
    assert str(python.prefix) not in copied
    assert not any("__pycache__/_sysconfigdata" in name for name in entries)


def test_a_system_interpreter_is_linked_not_copied(tmp_path: Path) -> None:
    python = HostPython(
        wanted="3.11",
        version="3.11.2",
        free_threaded=False,
        prefix=Path("/usr"),
        executable=Path("/usr/bin/python3.11"),
        stdlib=Path("/usr/lib/python3.11"),
        origin="PATH",
        can_make_venv=True,
    )
    entries = {
        e.arcname: e for e in ImageRoot(pythons=[python], layers={}, cuda=[], base="b").entries()
    }
    assert entries["rootfs/opt/python/cp311-cp311/bin/python"].link == "/usr/bin/python3.11"
    assert all(e.source is None for e in entries.values())


def test_the_digest_follows_the_inputs(tmp_path: Path) -> None:
    python = fake_prefix(tmp_path)
    layer = fake_layer(tmp_path)

    def digest(**changes: object) -> str:
        plan = ImageRoot(pythons=[python], layers={python.tag: layer}, cuda=[], base="b")
        return plan.digest(str(changes.get("base", "sha256:1")), ("pip", "setuptools"))

    first = digest()
    assert digest() == first
    assert digest(base="sha256:2") != first
    os_py = python.stdlib / "os.py"
    os_py.write_text("# changed os\n")
    changed = digest()
    assert changed != first
    (python.stdlib / "test" / "test_os.py").write_text("# the test suite is not copied\n")
    (python.stdlib / "site-packages" / "boto3" / "x.py").write_text("# nor the host's packages\n")
    assert digest() == changed
    stat = os_py.stat()
    os.utime(os_py, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert digest() != changed


def host(tag: str, version: str, threaded: bool = False) -> HostPython:
    return HostPython(
        wanted=tag,
        version=version,
        free_threaded=threaded,
        prefix=Path("/p"),
        executable=Path("/p/bin/python"),
        stdlib=Path("/p/lib"),
        origin="pyenv",
        can_make_venv=True,
    )


def test_the_image_check_fails_what_does_not_run_and_warns_about_optional_modules() -> None:
    pythons = [host("3.12", "3.12.1"), host("3.13", "3.13.0"), host("3.11", "3.11.7")]
    cuda = [CudaToolkit(home=Path("/usr/local/cuda-13.0"), version="13.0")]
    output = "\n".join(
        [
            "ok cp312-cp312 3.12.1",
            "missing cp312-cp312 lib/python3.12/lib-dynload/_tkinter.cpython-312.so libtk8.6.so",
            "missing cp312-cp312 lib/python3.12/lib-dynload/_tkinter.cpython-312.so libtcl8.6.so",
            "ok cp313-cp313 3.13.1",
            "fail cp311-cp311 ImportError: libssl.so.3: cannot open shared object file",
            "missing cp311-cp311 lib/python3.11/lib-dynload/_ssl.cpython-311.so libssl.so.3",
            "cuda /usr/local/cuda-13.0/bin/nvcc Cuda compilation tools, release 13.0, V13.0.88",
        ]
    )
    check = parse_check(output, pythons, cuda)
    assert not check.ok
    assert check.failures == [
        "cp311-cp311 does not run in the image: ImportError: libssl.so.3: cannot open shared "
        "object file",
        "cp313-cp313 runs Python 3.13.1, not the host's 3.13.0",
    ]
    assert check.warnings == [
        "_ssl cannot load in cp311-cp311: libssl.so.3 not in the image",
        "_tkinter cannot load in cp312-cp312: libtcl8.6.so, libtk8.6.so not in the image",
    ]
    assert check.versions["cp312-cp312"] == "3.12.1"


def test_the_image_check_names_a_missing_interpreter_library_and_a_missing_nvcc() -> None:
    check = parse_check(
        "ok cp312-cp312 3.12.1\nmissing cp312-cp312 bin/python3.12 libpython3.12.so.1.0\n",
        [host("3.12", "3.12.1"), host("3.10", "3.10.13")],
        [CudaToolkit(home=Path("/c"), version="12.8")],
    )
    assert check.failures == [
        "cp310-cp310 is not in the image",
        "cp312-cp312: bin/python3.12 needs libpython3.12.so.1.0, which the image lacks",
        "nvcc of CUDA 12.8 does not run in the image: ",
    ]


def test_a_system_interpreter_the_image_lacks_says_what_to_do() -> None:
    system = HostPython(
        wanted="3.12",
        version="3.12.3",
        free_threaded=False,
        prefix=Path("/usr"),
        executable=Path("/usr/bin/python3.12"),
        stdlib=Path("/usr/lib/python3.12"),
        origin="PATH",
        can_make_venv=True,
    )
    check = parse_check("", [system], [])
    assert check.failures == [
        "cp312-cp312: the host's /usr/bin/python3.12 is a system interpreter, which cannot be "
        "copied, and the image's /usr has no Python 3.12 (install 3.12 with pyenv or uv)"
    ]


@pytest.mark.parametrize(
    ("cell_id", "labels", "lacks"),
    [
        ("wheel-linux-x86_64-py3.12-cpu", {"org.relforge.pythons": "3.10 3.12"}, None),
        ("wheel-linux-x86_64-py3.13-cpu", {"org.relforge.pythons": "3.10 3.12"}, "not 3.13"),
        ("wheel-linux-x86_64-py3.13-cpu", {}, None),  # not made by relforge: tried
        (
            "wheel-linux-x86_64-py3.12-cu130",
            {"org.relforge.pythons": "3.12", "org.relforge.cuda": ""},
            "has no CUDA toolkit, not CUDA 13.0",
        ),
        (
            "wheel-linux-x86_64-py3.12-cu130",
            {"org.relforge.pythons": "3.12", "org.relforge.cuda": "12.8"},
            "has CUDA 12.8, not CUDA 13.0",
        ),
        (
            "wheel-linux-x86_64-py3.12-cu130",
            {"org.relforge.pythons": "3.12", "org.relforge.cuda": "12.8 13.0"},
            None,
        ),
    ],
)
def test_image_labels_say_what_a_relforge_image_lacks(
    cell_id: str, labels: dict[str, str], lacks: str | None
) -> None:
    cell = next(c for c in expand_cells(load_matrix(EXAMPLE), "1.0") if c.id == cell_id)
    found = image_lacks(cell, labels)
    if lacks is None:
        assert found is None
    else:
        assert found is not None and lacks in found and "relforge/builder:bookworm" in found


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--python", "3.1x"], "not a Python version"),
        (["--python", "3.12t"], "free-threaded builds exist from Python 3.13 on"),
        (["3.12"], "unexpected argument '3.12'"),
        (["--cuda", "/"], "--cuda and --with need --python"),
        (["--python", "3.13t"], "none of the wanted Pythons is on this host: 3.13t: no CPython"),
        (["--python", "3.12", "--cuda", "/tmp"], "/tmp holds no working bin/nvcc"),
    ],
)
def test_builder_image_refuses_bad_flags_before_touching_the_engine(
    run: Run, args: list[str], message: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/none.sock")
    result = run("builder-image", *args)
    assert result.code == 2, result.err
    assert message in result.err and "Traceback" not in result.err


def test_the_image_and_the_builds_ask_interpreters_the_same_way() -> None:
    # one probe and one matching rule (relforge.interpreters) behind both finders
    built = find_interpreter("3.12")
    assert built is not None
    (imaged,), _ = find_host_pythons(["3.12"])
    asked = probe(str(imaged.executable))
    assert asked is not None and asked.version == built.version == imaged.version
    assert (asked.prefix, asked.stdlib) == (str(imaged.prefix), str(imaged.stdlib))
    assert asked.serves(PythonVersion.parse("3.12"))
    assert not replace(asked, free_threaded=True).serves(PythonVersion.parse("3.12"))
    assert not asked.serves(PythonVersion.parse("3.11"))
    assert not replace(asked, version="not a version").serves(PythonVersion.parse("3.12"))
    # the image's description of it is the probe's, venv support included (not assumed)
    assert imaged.interpreter() == asked
    assert replace(imaged, can_make_venv=False).interpreter() == replace(asked, can_make_venv=False)
