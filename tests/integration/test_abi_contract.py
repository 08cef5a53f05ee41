"""The ABI contract check (RF-V046) on provider/consumer wheels compiled here with g++: a consumer
built against provider 1.0 is checked against provider 1.0 and 2.0 (which lacks a symbol, or
moves one to a new symbol version)."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Run
from tests.integration.test_wheel_hostile import SO, craft, verdict

PROVIDER = textwrap.dedent("""\
    #include <string>
    namespace prov {
    int compute(int x) { return 2 * x; }
    #ifndef DROP_SCALE
    double scale(double x, const std::string &unit) { return x * unit.size(); }
    #endif
    struct Widget { std::string label() const; };
    std::string Widget::label() const { return "w"; }
    }
    """)

CONSUMER = textwrap.dedent("""\
    #include <string>
    namespace prov {
    int compute(int x);
    double scale(double x, const std::string &unit);
    struct Widget { std::string label() const; };
    }
    extern "C" double consume(const std::string &unit) {
        prov::Widget w;
        return prov::compute(3) + prov::scale(1.5, unit) + w.label().size();
    }
    """)


def _gxx(*argv: str | Path) -> None:
    subprocess.run(["g++", "-shared", "-fPIC", "-O1", *map(str, argv)], check=True)


def provider_lib(workdir: Path, *, drop_scale: bool = False, version: str | None = None) -> Path:
    """libprov.so.1, optionally without prov::scale, optionally with all symbols at `version`."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "prov.cpp").write_text(PROVIDER)
    extra: list[str | Path] = ["-DDROP_SCALE"] if drop_scale else []
    if version:
        (workdir / "prov.map").write_text(f"{version} {{ global: *; }};\n")
        extra.append(f"-Wl,--version-script={workdir / 'prov.map'}")
    out = workdir / "libprov.so.1"
    _gxx(workdir / "prov.cpp", "-Wl,-soname,libprov.so.1", *extra, "-o", out)
    return out


def consumer_ext(workdir: Path, provider: Path, rpath: str) -> bytes:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "consumer.cpp").write_text(CONSUMER)
    out = workdir / "consumer.so"
    _gxx(workdir / "consumer.cpp", provider, f"-Wl,-rpath,{rpath}", "-o", out)
    return out.read_bytes()


def provider_wheel(directory: Path, lib: Path, version: str) -> Path:
    return craft(
        directory,
        {"provider/__init__.py": b"", "provider/lib/libprov.so.1": lib.read_bytes()},
        name="provider",
        tag="py3-none-manylinux_2_28_x86_64",
    ).rename(directory / f"provider-{version}-py3-none-manylinux_2_28_x86_64.whl")


def inspect_with(run: Run, wheel: Path, *deps: Path) -> tuple[int, dict[str, Any]]:
    args = [a for d in deps for a in ("--with", str(d))]
    result = run("wheel", "inspect", str(wheel), *args, "--format", "json")
    assert "Traceback" not in result.err, result.err
    return result.code, json.loads(result.out)


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("abi")
    return {
        "v1": provider_lib(root / "v1"),
        "v2-no-scale": provider_lib(root / "v2", drop_scale=True),
        "v1-versioned": provider_lib(root / "v1v", version="PROV_1.0"),
        "v2-versioned": provider_lib(root / "v2v", version="PROV_2.0"),
        "root": root,
    }


def _consumer_wheel(builds: dict[str, Path], provider: str, name: str) -> Path:
    root = builds["root"]
    ext = consumer_ext(root / f"c-{name}", builds[provider], "$ORIGIN/../provider/lib")
    return craft(root / name, {SO: ext}, metadata=b"Requires-Dist: provider>=1\n")


def test_consumer_against_the_provider_it_was_built_with(run: Run, builds: dict[str, Path]) -> None:
    consumer = _consumer_wheel(builds, "v1", "ok")
    v1 = provider_wheel(builds["root"] / "p1", builds["v1"], "1.0")
    code, found = inspect_with(run, consumer, v1)
    assert code == 0, found["verdicts"]
    message = verdict(found, "RF-V046")["message"]
    assert "symbol references resolved" in message and "unchecked" not in message


def test_consumer_against_a_provider_lacking_a_symbol(run: Run, builds: dict[str, Path]) -> None:
    consumer = _consumer_wheel(builds, "v1", "missing")
    v2 = provider_wheel(builds["root"] / "p2", builds["v2-no-scale"], "2.0")
    code, found = inspect_with(run, consumer, v2)
    assert code == 4
    check = verdict(found, "RF-V046")
    assert check["status"] == "fail"
    # demangled, grouped under the library, with the file that needs it
    assert check["message"].startswith("libprov.so.1: 1 missing: prov::scale(double, std::")
    assert f"needed by {SO}" in check["message"]
    assert "compute" not in check["message"] and "label" not in check["message"]


def test_a_symbol_version_the_provider_no_longer_defines(run: Run, builds: dict[str, Path]) -> None:
    consumer = _consumer_wheel(builds, "v1-versioned", "versioned")
    v1 = provider_wheel(builds["root"] / "pv1", builds["v1-versioned"], "1.0")
    v2 = provider_wheel(builds["root"] / "pv2", builds["v2-versioned"], "2.0")
    assert inspect_with(run, consumer, v1)[0] == 0
    code, found = inspect_with(run, consumer, v2)
    assert code == 4
    message = verdict(found, "RF-V046")["message"]
    assert "libprov.so.1: 3 missing" in message
    assert "prov::compute(int)@PROV_1.0" in message


def test_without_the_provider_the_symbols_are_unchecked_not_missing(
    run: Run, builds: dict[str, Path]
) -> None:
    consumer = _consumer_wheel(builds, "v1", "alone")
    code, found = inspect_with(run, consumer)
    check = verdict(found, "RF-V046")
    assert check["status"] == "pass"
    assert "unchecked: libprov.so.1 not at hand" in check["message"]
    assert code == 4  # RF-V041: nothing declares where libprov.so.1 comes from
    assert verdict(found, "RF-V041")["status"] == "fail"


def test_the_wheel_itself_bundling_a_newer_provider(run: Run, builds: dict[str, Path]) -> None:
    """No --with: a wheel that bundles provider 2.0 next to an extension built against 1.0."""
    root = builds["root"]
    ext = consumer_ext(root / "c-bundled", builds["v1"], "$ORIGIN/.libs")
    wheel = craft(
        root / "bundled",
        {SO: ext, "demo_ext/.libs/libprov.so.1": builds["v2-no-scale"].read_bytes()},
    )
    code, found = inspect_with(run, wheel)
    assert code == 4 and "prov::scale" in verdict(found, "RF-V046")["message"]


def test_a_non_weak_symbol_nobody_defines_is_missing(run: Run, tmp_path: Path) -> None:
    (tmp_path / "x.c").write_text("extern int nowhere(void);\nint f(void) { return nowhere(); }\n")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", str(tmp_path / "x.c"), "-o", str(tmp_path / "x.so")],
        check=True,
    )
    weak = tmp_path / "w.c"
    weak.write_text(
        "extern int maybe(void) __attribute__((weak));\n"
        "int g(void) { return maybe ? maybe() : 0; }\n"
    )
    subprocess.run(["gcc", "-shared", "-fPIC", str(weak), "-o", str(tmp_path / "w.so")], check=True)
    wheel = craft(
        tmp_path / "w",
        {
            "x/_x.cpython-311-x86_64-linux-gnu.so": (tmp_path / "x.so").read_bytes(),
            "x/_w.cpython-311-x86_64-linux-gnu.so": (tmp_path / "w.so").read_bytes(),
            "x/plugins/libsimplugin.so": (tmp_path / "x.so").read_bytes(),
        },
    )
    code, found = inspect_with(run, wheel)
    assert code == 4
    message = verdict(found, "RF-V046")["message"]
    assert "nowhere" in message and "maybe" not in message
    assert "needed by x/_x.cpython-311-x86_64-linux-gnu.so" in message
    assert "libsimplugin" not in message  # a plugin of some other program: unchecked


def test_a_dependency_wheel_is_read_only_as_far_as_the_consumer_loads(
    builds: dict[str, Path], tmp_path: Path
) -> None:
    from relforge.validate.providers import read_dependencies

    lib = builds["v1"].read_bytes()
    (tmp_path / "a.c").write_text("int a(void) { return 1; }\n")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-Wl,-soname,libinner.so", str(tmp_path / "a.c"),
         "-o", str(tmp_path / "libinner.so")],
        check=True,
    )  # fmt: skip
    (tmp_path / "b.c").write_text("int a(void);\nint b(void) { return a(); }\n")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-Wl,-soname,libouter.so", str(tmp_path / "b.c"),
         str(tmp_path / "libinner.so"), "-o", str(tmp_path / "libouter.so")],
        check=True,
    )  # fmt: skip
    wheel = craft(
        tmp_path / "dep",
        {
            "dep/lib/libprov.so.1": lib,
            "dep/lib/libouter.so": (tmp_path / "libouter.so").read_bytes(),
            "dep/lib/libinner.so": (tmp_path / "libinner.so").read_bytes(),
            "dep/lib/libunrelated.so": lib,
        },
        name="dep",
    )
    [dep] = read_dependencies([wheel], libraries=frozenset({"libouter.so"}))
    assert sorted(e.path for e in dep.facts.elves) == ["dep/lib/libinner.so", "dep/lib/libouter.so"]
    [full] = read_dependencies([wheel])
    assert len(full.facts.elves) == 4


def test_provider_wheels_found_in_the_channel_index(
    run: Run, builds: dict[str, Path], tmp_path: Path
) -> None:
    """`--index`: the newest provider the requirement admits is fetched and read."""
    from tests.integration.test_validate import http_server
    from tests.wheelfactory import serve_index

    v1 = provider_wheel(tmp_path / "p1", builds["v1"], "1.0")
    v2 = provider_wheel(tmp_path / "p2", builds["v2-no-scale"], "2.0")
    serve_index(tmp_path / "index", "provider", [v1, v2])
    ext = consumer_ext(tmp_path / "c", builds["v1"], "$ORIGIN/../provider/lib")
    pinned = craft(tmp_path / "old", {SO: ext}, metadata=b"Requires-Dist: provider<2\n")
    newest = craft(tmp_path / "new", {SO: ext}, metadata=b"Requires-Dist: provider>=1\n")
    with http_server(tmp_path / "index") as url:
        code, found = inspect_with_index(run, pinned, url)
        assert code == 0, found["verdicts"]
        entry = found["external_libraries"]["libprov.so.1"]
        assert entry["status"] == f"declared by provider (provider 1.0, {url})"
        code, found = inspect_with_index(run, newest, url)
        assert code == 4 and "prov::scale" in verdict(found, "RF-V046")["message"]
        # a --with wheel wins over the index
        code, found = inspect_with_index(run, newest, url, v1)
        assert code == 0, found["verdicts"]
    broken = run("wheel", "inspect", str(newest), "--index", "http://127.0.0.1:9/simple")
    # an index that cannot be reached is the environment's fault (exit 6), named by its flag
    assert broken.code == 6 and "--index" in broken.err


def inspect_with_index(run: Run, wheel: Path, url: str, *deps: Path) -> tuple[int, dict[str, Any]]:
    args = [a for d in deps for a in ("--with", str(d))]
    result = run("wheel", "inspect", str(wheel), "--index", url, *args, "--format", "json")
    assert "Traceback" not in result.err, result.err
    return result.code, json.loads(result.out)
