"""RF-V048 device-code against the cells of a small matrix: real wheels carrying libraries built by
nvcc 13.0 (read with `gather`, like `relforge validate` does), and device code written out by hand
where no compiler is at hand (ROCm offload bundles) or a reader's fault is wanted."""

from __future__ import annotations

import struct
import subprocess
import sysconfig
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from relforge.manifest import Verdict
from relforge.matrix.cell import Cell
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from relforge.validate.checkregistry import Expectation, check_artifact
from relforge.validate.devicechecks import DEVICE_CODE, cuda_wanted
from relforge.validate.devicecode import DeviceCode, DeviceImage
from relforge.validate.elf import ElfInfo
from relforge.validate.facts import ElfMember, WheelFacts, gather
from tests.wheelfactory import MODULE, WheelSpec, write_wheel

NVCC = "/usr/local/cuda-13.0/bin/nvcc"
KERNEL = """\
__global__ void k(float *x) { x[0] = 1; }
extern "C" void launch(float *x) { k<<<1, 1>>>(x); }
"""
CORE = f"{MODULE}/_core{sysconfig.get_config_var('EXT_SUFFIX')}"  # wheelfactory's extension
EXTRA = f"{MODULE}/libextra.so"

MATRIX = """\
schema_version: 1
project:
  name: demo
channels:
  nightly: {version_scheme: dev-date, prefix: whl/nightly}
releases:
  "1.0":
    date: 2026-01-01
    python: ["3.12"]
    platforms:
      linux-x86_64:
        os: linux
        arch: x86_64
        platform_tag: manylinux_2_28_x86_64
    accelerators:
      cpu:
        kind: cpu
        platforms:
          linux-x86_64: {image: "img:cpu"}
      cu130:
        kind: cuda
        version: 13.0.0
        arch_list: ["8.0", "9.0+PTX"]
        platforms:
          linux-x86_64: {image: "img:cu130"}
      cu130-special:
        kind: cuda
        version: 13.0.0
        arch_list: ["9.0a", "10.0f"]
        platforms:
          linux-x86_64: {image: "img:cu130"}
      cu130-unlisted:
        kind: cuda
        version: 13.0.0
        platforms:
          linux-x86_64: {image: "img:cu130"}
      rocm6.4:
        kind: rocm
        version: "6.4"
        arch_list: ["gfx90a", "gfx942:xnack-"]
        platforms:
          linux-x86_64: {image: "img:rocm"}
    pypi_default:
      linux-x86_64: cpu
"""

SHARED = ["-shared", "-Xcompiler", "-fPIC"]
SM80 = ["-gencode", "arch=compute_80,code=sm_80"]
SM90_PTX = ["-gencode", "arch=compute_90,code=[sm_90,compute_90]"]
LIBRARIES: dict[str, list[str]] = {
    "exact": [*SHARED, *SM80, *SM90_PTX],  # = ["8.0", "9.0+PTX"]
    "sm80": [*SHARED, *SM80],
    "extra": [*SHARED, "-gencode", "arch=compute_75,code=sm_75", *SM80, *SM90_PTX],
    "special": [
        *SHARED,
        "-gencode", "arch=compute_90a,code=sm_90a",
        "-gencode", "arch=compute_100f,code=sm_100f",
    ],
}  # fmt: skip
# wheel → the libraries it carries at CORE (and at EXTRA)
WHEELS: dict[str, tuple[str, ...]] = {
    "exact": ("exact",),
    "sm80": ("sm80",),
    "extra": ("extra",),
    "special": ("special",),
    "host": ("host",),
    "two": ("exact", "sm80"),
    "corrupt": ("corrupt",),
    "nameless": ("nameless",),
}


@dataclass(frozen=True)
class World:
    cells: Mapping[str, Cell]
    wheels: Mapping[str, WheelFacts]


def _nvcc(folder: Path, name: str, options: Sequence[str]) -> bytes:
    out = folder / f"{name}.so"
    subprocess.run(
        [NVCC, *options, str(folder / "kernel.cu"), "-o", str(out)], check=True, capture_output=True
    )
    return out.read_bytes()


def _names_past_the_end(data: bytes) -> bytes:
    """The library with its section name table's offset moved past the end of the file (the
    loader never reads it: the library still loads and runs)."""
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, _, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    out = bytearray(data)
    struct.pack_into("<Q", out, shoff + shstrndx * shentsize + 24, len(data))
    return bytes(out)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    folder = tmp_path_factory.mktemp("devicechecks")
    (folder / "matrix.yaml").write_text(MATRIX)
    cells = {c.variant: c for c in expand_cells(load_matrix(folder / "matrix.yaml"), "1.0")}
    (folder / "kernel.cu").write_text(KERNEL)
    (folder / "host.c").write_text("int host_only(void) { return 1; }\n")
    with ThreadPoolExecutor(2) as pool:
        jobs = {n: pool.submit(_nvcc, folder, n, o) for n, o in LIBRARIES.items()}
        subprocess.run(
            ["gcc", "-shared", "-fPIC", str(folder / "host.c"), "-o", str(folder / "host.so")],
            check=True,
        )
        libraries = {n: job.result() for n, job in jobs.items()}
        libraries["host"] = (folder / "host.so").read_bytes()
        # the first fat binary container's magic, overwritten
        magic = bytes.fromhex("50ed55ba")
        exact = libraries["exact"]
        assert magic in exact
        libraries["corrupt"] = exact.replace(magic, b"\xde\xad\xbe\xef", 1)
        libraries["nameless"] = _names_past_the_end(exact)
        facts = {}
        for n, (name, carried) in enumerate(WHEELS.items()):
            spec = WheelSpec(
                version=f"1.0.{n}",
                extension=libraries[carried[0]],
                extra_files={EXTRA: libraries[carried[1]]} if len(carried) > 1 else {},
            )
            facts[name] = gather(write_wheel(spec, folder / name), pool, verify_digests=False)
    for name, wheel in facts.items():
        assert wheel.error is None, name
        assert all(e.info is not None for e in wheel.elves), name
    return World(cells, facts)


def rf_v048(facts: WheelFacts, cell: Cell) -> Verdict:
    (verdict,) = check_artifact(facts, Expectation(cell=cell), only={DEVICE_CODE})
    assert verdict.check == "RF-V048"
    return verdict


def facts_with(*files: tuple[str, DeviceCode | None]) -> WheelFacts:
    """A wheel whose ELF members carry the device code given (None: none)."""
    elves = tuple(
        ElfMember(
            path=path,
            size=4096,
            info=ElfInfo(bits=64, machine="x86_64", kind="shared object", device=code),
        )
        for path, code in files
    )
    return WheelFacts(
        path=Path("demo-1.0-cp312-cp312-manylinux_2_28_x86_64.whl"), size=4096, elves=elves
    )


def gfx(*targets: str) -> DeviceCode:
    return DeviceCode(
        images=tuple(DeviceImage(kind="gfx", arch=t, section=".hip_fatbin") for t in targets),
        sections=(".hip_fatbin",),
    )


def cuda(sass: Sequence[str], ptx: Sequence[str] = ()) -> DeviceCode:
    """Device code with these SASS and PTX images (named like nvcc's: sm_90a, compute_120)."""
    images = [DeviceImage(kind="sass", arch=a, section=".nv_fatbin") for a in sass]
    images += [DeviceImage(kind="ptx", arch=a, section=".nv_fatbin") for a in ptx]
    return DeviceCode(images=tuple(images), sections=(".nv_fatbin",))


# --- the arch list read -----------------------------------------------------------------------


def test_wanted_from_an_arch_list() -> None:
    wanted = cuda_wanted(["8.0", "9.0a", "10.0f", "12.0+PTX", " 8.0 "])
    assert wanted.sass == ("sm_80", "sm_90a", "sm_100f", "sm_120")
    assert wanted.ptx == ("compute_120",)
    assert cuda_wanted(["9.0a+PTX"]).ptx == ("compute_90a",)


def test_the_matrix_cells(world: World) -> None:
    assert world.cells["cu130"].accelerator == "cuda"
    assert world.cells["cu130"].cuda_arch_list == ("8.0", "9.0+PTX")
    assert world.cells["rocm6.4"].accelerator == "rocm"
    assert world.cells["cpu"].accelerator == "cpu"


# --- CUDA, on real wheels -----------------------------------------------------------------------


def test_exactly_the_arch_list_passes(world: World) -> None:
    facts = world.wheels["exact"]
    assert [e.path for e in facts.elves] == [CORE]
    verdict = rf_v048(facts, world.cells["cu130"])
    assert verdict.status == "pass"
    assert verdict.message == "1 file with SASS sm_80, sm_90; PTX compute_90"


def test_a_missing_arch_fails_naming_the_file(world: World) -> None:
    verdict = rf_v048(world.wheels["sm80"], world.cells["cu130"])
    assert verdict.status == "fail"
    assert verdict.message == f"{CORE} lacks sm_90, compute_90 (carries SASS sm_80)"


def test_only_the_file_that_misses_an_arch_is_named(world: World) -> None:
    verdict = rf_v048(world.wheels["two"], world.cells["cu130"])
    assert verdict.status == "fail"
    assert verdict.message == f"{EXTRA} lacks sm_90, compute_90 (carries SASS sm_80)"


def test_an_arch_the_list_does_not_name_warns(world: World) -> None:
    verdict = rf_v048(world.wheels["extra"], world.cells["cu130"])
    assert verdict.status == "warn"
    assert verdict.message == (
        "1 file with SASS sm_80, sm_90; PTX compute_90; not in the arch list (size only): "
        f"{CORE}: sm_75"
    )


def test_a_cuda_cell_without_device_code_fails(world: World) -> None:
    facts = world.wheels["host"]
    assert facts.elves[0].info is not None and facts.elves[0].info.device is None
    verdict = rf_v048(facts, world.cells["cu130"])
    assert verdict.status == "fail"
    assert "no CUDA device code in any binary" in verdict.message
    assert "a CPU build under a CUDA label" in verdict.message


def test_a_cpu_cell_carrying_device_code_fails(world: World) -> None:
    verdict = rf_v048(world.wheels["exact"], world.cells["cpu"])
    assert verdict.status == "fail"
    assert verdict.message == (
        f"a cpu cell carrying device code: {CORE}: SASS sm_80, sm_90; PTX compute_90"
    )


def test_a_cpu_cell_without_device_code_passes(world: World) -> None:
    verdict = rf_v048(world.wheels["host"], world.cells["cpu"])
    assert verdict == Verdict(
        check="RF-V048", status="pass", message="no device code, as a cpu cell should"
    )


def test_arch_specific_and_family_entries_are_met_by_their_suffixes(world: World) -> None:
    facts = world.wheels["special"]
    assert facts.elves[0].info is not None and facts.elves[0].info.device is not None
    assert facts.elves[0].info.device.sass() == ("sm_90a", "sm_100f")
    verdict = rf_v048(facts, world.cells["cu130-special"])
    assert verdict.status == "pass"
    assert verdict.message == "1 file with SASS sm_90a, sm_100f"


def test_plain_sass_does_not_meet_an_arch_specific_entry(world: World) -> None:
    verdict = rf_v048(world.wheels["exact"], world.cells["cu130-special"])
    assert verdict.status == "fail"
    assert verdict.message.startswith(f"{CORE} lacks sm_90a, sm_100f (carries SASS sm_80, sm_90")


def test_suffixed_sass_does_not_meet_a_plain_entry(world: World) -> None:
    verdict = rf_v048(world.wheels["special"], world.cells["cu130"])
    assert verdict.status == "fail"
    assert f"{CORE} lacks sm_80, sm_90, compute_90" in verdict.message


def test_unreadable_fat_binary_fails(world: World) -> None:
    facts = world.wheels["corrupt"]
    verdict = rf_v048(facts, world.cells["cu130"])
    assert verdict.status == "fail"
    assert verdict.message == (
        f"device code unreadable: {CORE}: .nv_fatbin: no fat binary magic at 0x0"
    )
    # what it says of a CPU cell too: it cannot tell what the file carries
    assert rf_v048(facts, world.cells["cpu"]).status == "fail"


@pytest.mark.parametrize("variant", ["cpu", "cu130"])
def test_unreadable_section_headers_fail(world: World, variant: str) -> None:
    """A library carrying SASS whose section names cannot be read: the reader says so (its
    DeviceCode has an error and no sections); the check cannot tell what it carries."""
    facts = world.wheels["nameless"]
    info = facts.elves[0].info
    assert info is not None and info.device is not None
    assert info.device.error == (
        "section headers: the section name table lies past the end of the file"
    )
    verdict = rf_v048(facts, world.cells[variant])
    assert verdict.status == "fail"
    assert verdict.message == f"device code unreadable: {CORE}: {info.device.error}"


def test_no_arch_list_warns(world: World) -> None:
    verdict = rf_v048(world.wheels["exact"], world.cells["cu130-unlisted"])
    assert verdict.status == "warn"
    assert verdict.message == (
        f"the cell declares no arch_list to compare with; {CORE}: SASS sm_80, sm_90; PTX compute_90"
    )


# --- CUDA and ROCm, device code written out ---------------------------------------------------


def test_sass_without_the_ptx_asked_for_fails(world: World) -> None:
    verdict = rf_v048(facts_with(("lib.so", cuda(["sm_80", "sm_90"]))), world.cells["cu130"])
    assert verdict.status == "fail"
    assert verdict.message == "lib.so lacks compute_90 (carries SASS sm_80, sm_90)"


def test_files_without_device_code_are_not_asked_for_any(world: World) -> None:
    facts = facts_with(("a.so", cuda(["sm_80", "sm_90"], ["compute_90"])), ("b.so", None))
    verdict = rf_v048(facts, world.cells["cu130"])
    assert verdict.status == "pass"
    assert verdict.message.startswith("1 file with")


def test_many_failing_files_are_counted(world: World) -> None:
    files = [(f"lib{n}.so", cuda(["sm_80"])) for n in range(6)]
    verdict = rf_v048(facts_with(*files), world.cells["cu130"])
    assert verdict.status == "fail"
    assert verdict.message.endswith(" (+2 more)")
    assert verdict.message.count("lacks sm_90, compute_90") == 4


PASSING = {
    "cu130": cuda(["sm_80", "sm_90"], ["compute_90"]),
    "cpu": None,
    "rocm6.4": gfx("gfx90a", "gfx942:xnack-"),
}


@pytest.mark.parametrize(
    "code",
    [
        DeviceCode(sections=(".nv_fatbin",), error=".nv_fatbin: no fat binary magic at 0x0"),
        DeviceCode(
            images=(DeviceImage(kind="sass", arch="sm_80", section=".nv_fatbin"),),
            sections=(".nv_fatbin",),
            error=".nv_fatbin: the entry at 0x5e0 is of unknown kind 7",
        ),
        # elf.py's verdict on a section header table it cannot read: no sections known
        DeviceCode(error="section headers: the section name table lies past the end of the file"),
    ],
    ids=["no images", "images before the fault", "section headers"],
)
@pytest.mark.parametrize("variant", ["cu130", "cpu", "rocm6.4"])
def test_unreadable_device_code_fails(world: World, code: DeviceCode, variant: str) -> None:
    """Beside a file that alone would pass for the cell."""
    facts = facts_with(("lib.so", code), ("ok.so", PASSING[variant]))
    assert rf_v048(facts_with(("ok.so", PASSING[variant])), world.cells[variant]).status == "pass"
    verdict = rf_v048(facts, world.cells[variant])
    assert verdict.status == "fail"
    assert verdict.message == f"device code unreadable: lib.so: {code.error}"


def test_rocm_targets_pass(world: World) -> None:
    facts = facts_with(("lib.so", gfx("gfx90a:xnack+", "gfx942:xnack-")))
    verdict = rf_v048(facts, world.cells["rocm6.4"])
    assert verdict.status == "pass"
    assert verdict.message == "1 file with gfx90a, gfx942:xnack-"


def test_rocm_target_with_more_features_meets_the_entry(world: World) -> None:
    facts = facts_with(("lib.so", gfx("gfx90a", "gfx942:sramecc+:xnack-")))
    assert rf_v048(facts, world.cells["rocm6.4"]).status == "pass"


def test_rocm_missing_target_fails(world: World) -> None:
    facts = facts_with(("lib.so", gfx("gfx90a:xnack+")))
    verdict = rf_v048(facts, world.cells["rocm6.4"])
    assert verdict.status == "fail"
    assert verdict.message == "lib.so lacks gfx942:xnack- (carries HIP gfx90a:xnack+)"


def test_rocm_feature_of_the_other_sign_fails(world: World) -> None:
    facts = facts_with(("lib.so", gfx("gfx90a:xnack+", "gfx942:xnack+")))
    verdict = rf_v048(facts, world.cells["rocm6.4"])
    assert verdict.status == "fail"
    assert "lacks gfx942:xnack-" in verdict.message


def test_rocm_extra_target_warns(world: World) -> None:
    facts = facts_with(("lib.so", gfx("gfx90a", "gfx942:xnack-", "gfx1100")))
    verdict = rf_v048(facts, world.cells["rocm6.4"])
    assert verdict.status == "warn"
    assert verdict.message.endswith("not in the arch list (size only): lib.so: gfx1100")


def test_rocm_cell_without_hip_code_fails(world: World) -> None:
    for facts in (facts_with(("lib.so", None)), world.wheels["exact"]):
        verdict = rf_v048(facts, world.cells["rocm6.4"])
        assert verdict.status == "fail"
        assert ".hip_fatbin" in verdict.message


def test_cpu_cell_carrying_hip_code_fails(world: World) -> None:
    verdict = rf_v048(facts_with(("lib.so", gfx("gfx90a"))), world.cells["cpu"])
    assert verdict.status == "fail"
    assert verdict.message == "a cpu cell carrying device code: lib.so: HIP gfx90a"


def test_a_cuda_cell_with_only_hip_code_fails(world: World) -> None:
    verdict = rf_v048(facts_with(("lib.so", gfx("gfx90a"))), world.cells["cu130"])
    assert verdict.status == "fail"
    assert "no CUDA device code" in verdict.message


def test_without_a_cell_the_check_skips(world: World) -> None:
    (verdict,) = check_artifact(world.wheels["exact"], Expectation(), only={DEVICE_CODE})
    assert verdict.status == "skip"
