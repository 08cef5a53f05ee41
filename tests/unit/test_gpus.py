"""Which GPUs this machine has (nvidia-smi, stood in for by a script) and whether an artifact's
CUDA device code can run on them, predicted from its fat binaries' entries."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from packaging.version import Version

from relforge.validate.devicecode import DeviceCode, DeviceImage
from relforge.validate.gpus import (
    MINIMUM_DRIVER,
    Gpu,
    can_run,
    driver_problem,
    explain,
    parse_gpus,
    predict,
    query_gpus,
)

H200 = Gpu(0, "NVIDIA H200", (9, 0), "580.159.04")
A10 = Gpu(0, "NVIDIA A10", (8, 6), "570.133.20")
L4 = Gpu(0, "NVIDIA L4", (8, 9), "570.133.20")
A100 = Gpu(0, "NVIDIA A100-SXM4-80GB", (8, 0), "570.133.20")
B200 = Gpu(0, "NVIDIA B200", (10, 0), "580.65.06")
B300 = Gpu(0, "NVIDIA B300", (10, 3), "580.65.06")
THOR = Gpu(0, "NVIDIA Thor", (11, 0), "580.65.06")
RTX5090 = Gpu(1, "NVIDIA GeForce RTX 5090", (12, 0), "580.65.06")
GB10 = Gpu(0, "NVIDIA GB10", (12, 1), "580.95.05")


def image(arch: str) -> DeviceImage:
    """`sm_90a` / `compute_120` / `gfx942` as the fat binary reader makes them."""
    if arch.startswith("gfx"):
        return DeviceImage(kind="gfx", arch=arch, section=".hip_fatbin")
    prefix, _, rest = arch.partition("_")
    suffix = rest[-1] if rest[-1] in "af" else ""
    number = int(rest.rstrip("af"))
    return DeviceImage(
        kind="sass" if prefix == "sm" else "ptx",
        arch=arch,
        capability=divmod(number, 10),
        suffix=suffix,
        section=".nv_fatbin",
    )


def code(*archs: str) -> DeviceCode:
    images = tuple(image(a) for a in archs)
    return DeviceCode(images=images, sections=tuple(dict.fromkeys(i.section for i in images)))


# (device, images, runs) — the rule in the module's docstring, case by case
RULE = [
    # SASS sm_80 only: same major, minor ≤ the device's
    (A100, ("sm_80",), True),
    (A10, ("sm_80",), True),
    (H200, ("sm_80",), False),
    (RTX5090, ("sm_80",), False),
    (B300, ("sm_80",), False),
    # sm_80 plus its PTX: the PTX is JIT-compiled on anything newer
    (A10, ("sm_80", "compute_80"), True),
    (H200, ("sm_80", "compute_80"), True),
    (RTX5090, ("sm_80", "compute_80"), True),
    (B300, ("sm_80", "compute_80"), True),
    # minor versions within a major
    (L4, ("sm_86",), True),
    (A100, ("sm_86",), False),
    (A10, ("sm_89",), False),
    (GB10, ("sm_120",), True),
    # architecture-specific SASS: exactly X.Y
    (H200, ("sm_90a",), True),
    (A10, ("sm_90a",), False),
    (B200, ("sm_100a",), True),
    (B300, ("sm_100a",), False),
    (RTX5090, ("sm_90a",), False),
    # family-specific SASS: same major, minor ≤ the device's
    (B200, ("sm_100f",), True),
    (B300, ("sm_100f",), True),
    (B200, ("sm_103f",), False),
    (THOR, ("sm_100f",), False),
    (RTX5090, ("sm_100f",), False),
    (H200, ("sm_100f",), False),
    # plain PTX: any device at or above its capability
    (RTX5090, ("compute_120",), True),
    (GB10, ("compute_120",), True),
    (B300, ("compute_120",), False),
    (H200, ("compute_120",), False),
    (RTX5090, ("compute_90",), True),
    # architecture-specific PTX: exactly X.Y
    (H200, ("compute_90a",), True),
    (B200, ("compute_90a",), False),
    # family-specific PTX: same major, minor ≤ the device's
    (B300, ("compute_100f",), True),
    (B200, ("compute_103f",), False),
    (RTX5090, ("compute_100f",), False),
    # ROCm's images never run on an NVIDIA GPU; no images, nothing runs
    (H200, ("gfx942",), False),
    (H200, (), False),
]


@pytest.mark.parametrize(("gpu", "archs", "runs"), RULE)
def test_the_compatibility_rule(gpu: Gpu, archs: tuple[str, ...], runs: bool) -> None:
    assert can_run(gpu, code(*archs)) is runs


@pytest.mark.parametrize(
    ("gpu", "archs", "said"),
    [
        (H200, ("sm_90",), "NVIDIA H200 (sm_90): SASS sm_90"),
        (H200, ("sm_80", "compute_80"), "NVIDIA H200 (sm_90): PTX compute_80 (JIT)"),
        (A10, ("sm_80", "compute_80"), "NVIDIA A10 (sm_86): SASS sm_80"),
        (H200, ("sm_80", "sm_90", "sm_90a", "compute_90"), "NVIDIA H200 (sm_90): SASS sm_90a"),
        (B300, ("sm_100f", "compute_120"), "NVIDIA B300 (sm_103): SASS sm_100f"),
        (
            RTX5090,
            ("compute_80", "compute_90", "compute_120"),
            "NVIDIA GeForce RTX 5090 (sm_120): PTX compute_120 (JIT)",
        ),
        (H200, ("sm_80",), "no kernel image for NVIDIA H200 (sm_90): SASS sm_80 only, no PTX"),
        (
            H200,
            ("sm_80", "sm_86", "compute_100"),
            "no kernel image for NVIDIA H200 (sm_90): SASS sm_80, sm_86; "
            "PTX compute_100 (above sm_90)",
        ),
        (
            B200,
            ("sm_90a", "compute_90a"),
            "no kernel image for NVIDIA B200 (sm_100): SASS sm_90a; PTX compute_90a (9.0 only)",
        ),
        (
            RTX5090,
            ("compute_100f",),
            "no kernel image for NVIDIA GeForce RTX 5090 (sm_120): no SASS; "
            "PTX compute_100f (the 10.x family only)",
        ),
        (
            A10,
            ("compute_89", "compute_90", "compute_90a"),
            "no kernel image for NVIDIA A10 (sm_86): no SASS; "
            "PTX compute_89, compute_90 (above sm_86), compute_90a (9.0 only)",
        ),
    ],
)
def test_explain_names_the_image_that_runs_or_what_the_file_carries(
    gpu: Gpu, archs: tuple[str, ...], said: str
) -> None:
    assert explain(gpu, code(*archs)) == said


def test_a_file_with_only_sass_for_an_older_major_is_predicted_to_fail() -> None:
    (prediction,) = predict([H200], {"hello_native/_cuda.so": code("sm_80")})
    assert not prediction.ok
    assert prediction.message == (
        "no kernel image for NVIDIA H200 (sm_90) in hello_native/_cuda.so: SASS sm_80 only, no PTX"
    )
    assert prediction.blocked_files == ("hello_native/_cuda.so",)
    assert prediction.runnable_files == ()


def test_ptx_too_new_for_the_device_is_named_with_its_reason() -> None:
    (prediction,) = predict([H200], {"hello_native/_cuda.so": code("sm_80", "compute_100")})
    assert prediction.message == (
        "no kernel image for NVIDIA H200 (sm_90) in hello_native/_cuda.so: "
        "SASS sm_80; PTX compute_100 (above sm_90)"
    )


def test_a_success_names_the_image_that_runs() -> None:
    sass, jit = predict([H200], {"a/_cuda.so": code("sm_80", "sm_90")}) + predict(
        [H200], {"a/_cuda.so": code("sm_80", "compute_80")}
    )
    assert (sass.ok, sass.message) == (True, "NVIDIA H200 (sm_90): SASS sm_90")
    assert (jit.ok, jit.message) == (True, "NVIDIA H200 (sm_90): PTX compute_80 (JIT)")
    assert sass.runnable_files == jit.runnable_files == ("a/_cuda.so",)
    assert sass.blocked_files == ()


def test_one_prediction_per_gpu_in_their_order() -> None:
    files = {"pkg/_cuda.so": code("sm_80", "sm_86", "sm_90")}
    predictions = predict([A10, H200, RTX5090], files)
    assert [(p.gpu, p.ok) for p in predictions] == [(A10, True), (H200, True), (RTX5090, False)]
    assert predictions[0].message == "NVIDIA A10 (sm_86): SASS sm_86"
    assert predictions[2].message == (
        "no kernel image for NVIDIA GeForce RTX 5090 (sm_120) in pkg/_cuda.so: "
        "SASS sm_80, sm_86, sm_90 only, no PTX"
    )


def test_one_file_without_code_for_the_gpu_fails_the_artifact() -> None:
    files = {"pkg/_ops.so": code("sm_90", "compute_90"), "pkg/_legacy.so": code("sm_75", "sm_80")}
    (prediction,) = predict([H200], files)
    assert not prediction.ok
    assert prediction.runnable_files == ("pkg/_ops.so",)
    assert prediction.blocked_files == ("pkg/_legacy.so",)
    assert prediction.message == (
        "no kernel image for NVIDIA H200 (sm_90) in pkg/_legacy.so: SASS sm_75, sm_80 only, no PTX"
    )


def test_several_failing_files_are_named_up_to_three_and_the_rest_counted() -> None:
    files = {f"pkg/_k{n}.so": code("sm_80") for n in range(5)}
    (prediction,) = predict([H200], files)
    assert prediction.blocked_files == tuple(files)
    assert prediction.message == (
        "no kernel image for NVIDIA H200 (sm_90) in pkg/_k0.so: SASS sm_80 only, no PTX; "
        "in pkg/_k1.so: SASS sm_80 only, no PTX; in pkg/_k2.so: SASS sm_80 only, no PTX; "
        "and 2 more files"
    )


def test_several_running_files_are_grouped_by_the_image_that_runs() -> None:
    files = {
        "pkg/_a.so": code("sm_90"),
        "pkg/_b.so": code("sm_80", "sm_90"),
        "pkg/_c.so": code("compute_80"),
    }
    (prediction,) = predict([H200], files)
    assert prediction.ok
    assert prediction.message == (
        "NVIDIA H200 (sm_90): SASS sm_90 in pkg/_a.so, pkg/_b.so; PTX compute_80 (JIT) in pkg/_c.so"
    )
    many = {f"pkg/_k{n}.so": code("sm_90") for n in range(4)}
    (prediction,) = predict([H200], many)
    assert prediction.message == (
        "NVIDIA H200 (sm_90): SASS sm_90 in pkg/_k0.so, pkg/_k1.so, pkg/_k2.so and 1 more file"
    )


def test_files_without_cuda_images_do_not_count() -> None:
    files = {
        "pkg/_hip.so": code("gfx942", "gfx90a"),
        "pkg/_cpu.so": DeviceCode(),
        "pkg/_cuda.so": code("sm_90"),
    }
    (prediction,) = predict([H200], files)
    assert (prediction.ok, prediction.message) == (True, "NVIDIA H200 (sm_90): SASS sm_90")
    assert prediction.runnable_files == ("pkg/_cuda.so",)
    (nothing,) = predict([H200], {"pkg/_hip.so": code("gfx942")})
    assert (nothing.ok, nothing.message) == (
        True,
        "NVIDIA H200 (sm_90): no CUDA device code to run",
    )
    assert (nothing.runnable_files, nothing.blocked_files) == ((), ())


def test_no_gpus_no_predictions() -> None:
    assert predict([], {"pkg/_cuda.so": code("sm_80")}) == []


def test_a_prediction_as_json() -> None:
    (prediction,) = predict([H200], {"pkg/_cuda.so": code("sm_80")})
    assert prediction.to_json() == {
        "gpu": {
            "index": 0,
            "name": "NVIDIA H200",
            "capability": "9.0",
            "sm": "sm_90",
            "driver": "580.159.04",
        },
        "ok": False,
        "message": prediction.message,
        "runnable_files": [],
        "blocked_files": ["pkg/_cuda.so"],
    }


@pytest.mark.parametrize(
    ("capability", "sm"), [((9, 0), "sm_90"), ((12, 0), "sm_120"), ((10, 3), "sm_103")]
)
def test_sm_names_the_capability(capability: tuple[int, int], sm: str) -> None:
    assert Gpu(0, "x", capability, "1").sm == sm


@pytest.mark.parametrize(
    ("text", "gpus", "skipped"),
    [
        ("0, NVIDIA H200, 9.0, 580.159.04\n", (H200,), ()),
        (
            "\n0, NVIDIA A10, 8.6, 570.133.20\n\n  1, NVIDIA GeForce RTX 5090, 12.0, 580.65.06  \n",
            (A10, RTX5090),
            (),
        ),
        (
            "0, NVIDIA Mystery, [N/A], 580.65.06\n1, NVIDIA GeForce RTX 5090, 12.0, 580.65.06\n",
            (RTX5090,),
            ("GPU 0 (NVIDIA Mystery): compute capability [N/A]",),
        ),
        ("No devices were found\n", (), ("an unreadable line 'No devices were found'",)),
        ("", (), ()),
        (
            "0, NVIDIA H200, 9.0, 580.159.04\r\nx, y, 9.0, 1\r\n",
            (H200,),
            ("an unreadable line 'x, y, 9.0, 1'",),
        ),
    ],
)
def test_parse_gpus(text: str, gpus: tuple[Gpu, ...], skipped: tuple[str, ...]) -> None:
    assert parse_gpus(text) == (gpus, skipped)


# --- query_gpus against a stand-in nvidia-smi -------------------------------------------------

ARGS = "--query-gpu=index,name,compute_cap,driver_version --format=csv,noheader"


def fake_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    """An `nvidia-smi` first on PATH that refuses other arguments than the query's, then runs
    `body`."""
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "nvidia-smi"
    script.write_text(
        f'#!/bin/sh\n[ "$*" = "{ARGS}" ] || {{ echo "unexpected arguments: $*" >&2; exit 64; }}\n'
        + body
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")


@pytest.mark.parametrize(
    ("printed", "gpus"),
    [
        ("0, NVIDIA H200, 9.0, 580.159.04", (H200,)),
        (
            "0, NVIDIA A10, 8.6, 570.133.20\n1, NVIDIA GeForce RTX 5090, 12.0, 580.65.06",
            (A10, RTX5090),
        ),
    ],
)
def test_query_gpus_reads_what_nvidia_smi_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, printed: str, gpus: tuple[Gpu, ...]
) -> None:
    fake_smi(tmp_path, monkeypatch, f"cat <<'EOF'\n{printed}\nEOF\n")
    assert query_gpus() == (gpus, "")


def test_query_gpus_says_when_nvidia_smi_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_smi(
        tmp_path,
        monkeypatch,
        'echo "NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver."\n'
        "exit 9\n",
    )
    assert query_gpus() == (
        (),
        "no GPU on this machine (nvidia-smi exited 9: NVIDIA-SMI has failed because it "
        "couldn't communicate with the NVIDIA driver.)",
    )


def test_query_gpus_skips_a_gpu_without_a_compute_capability(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_smi(tmp_path, monkeypatch, "echo '0, NVIDIA Mystery, [N/A], 580.65.06'\n")
    assert query_gpus() == (
        (),
        "no GPU on this machine (nvidia-smi lists none usable: "
        "GPU 0 (NVIDIA Mystery): compute capability [N/A])",
    )


def test_query_gpus_keeps_the_usable_gpus_and_notes_the_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_smi(
        tmp_path,
        monkeypatch,
        "echo '0, NVIDIA H200, 9.0, 580.159.04'\necho '1, NVIDIA Mystery, [N/A], 580.159.04'\n",
    )
    assert query_gpus() == ((H200,), "skipped GPU 1 (NVIDIA Mystery): compute capability [N/A]")


def test_query_gpus_gives_up_on_a_hung_nvidia_smi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_smi(tmp_path, monkeypatch, "exec sleep 30\n")
    assert query_gpus(timeout=0.5) == (
        (),
        "no GPU on this machine (nvidia-smi timed out after 0.5s)",
    )


def test_query_gpus_with_empty_or_unreadable_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_smi(tmp_path, monkeypatch, "printf '\\n\\377\\376\\n'\n")
    gpus, reason = query_gpus()
    assert gpus == ()
    assert reason.startswith("no GPU on this machine (nvidia-smi lists none usable: an unreadable")


def test_query_gpus_when_nvidia_smi_prints_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_smi(tmp_path, monkeypatch, "exit 0\n")
    assert query_gpus() == ((), "no GPU on this machine (nvidia-smi lists none)")


def test_query_gpus_without_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert query_gpus() == ((), "no GPU on this machine (nvidia-smi not found)")


# --- the driver against the cell's CUDA -------------------------------------------------------


@pytest.mark.parametrize(
    ("driver", "cuda", "problem"),
    [
        ("580.159.04", "13.0", None),
        ("580.65.06", "13.0", None),
        (
            "580.65.05",
            "13.0",
            "driver 580.65.05 is too old for CUDA 13.0 (needs 580.65.06 or newer)",
        ),
        (
            "535.104.05",
            "13.0",
            "driver 535.104.05 is too old for CUDA 13.0 (needs 580.65.06 or newer)",
        ),
        ("535.104.05", "12.8", None),
        ("525.60.13", "12.8.1", None),
        ("525.60.2", "12.0", "driver 525.60.2 is too old for CUDA 12.0 (needs 525.60.13 or newer)"),
        (
            "470.256.02",
            "12.4",
            "driver 470.256.02 is too old for CUDA 12.4 (needs 525.60.13 or newer)",
        ),
        ("450.80.02", "11.8", None),
        (
            "450.51.06",
            "11.0",
            "driver 450.51.06 is too old for CUDA 11.0 (needs 450.80.02 or newer)",
        ),
        ("580.159.04", "11.8", None),  # newer drivers run older toolkits' programs
        ("[N/A]", "13.0", None),
        ("580.159.04", "cuda", None),
        ("", "", None),
        ("400.1", "10.2", None),  # no minor version compatibility before CUDA 11
        ("400.1", "14.0", None),  # a major the table does not know yet
    ],
)
def test_driver_problem(driver: str, cuda: str, problem: str | None) -> None:
    assert driver_problem(driver, cuda) == problem


def test_the_driver_table_is_ordered_like_the_cuda_majors() -> None:
    """A later CUDA major never needs an older driver than an earlier one."""
    floors = [Version(MINIMUM_DRIVER[m]) for m in sorted(MINIMUM_DRIVER)]
    assert floors == sorted(floors)
