"""This machine's NVIDIA GPUs, and whether an artifact's CUDA device code can run on them:
predicted from the fat binaries' entries (`DeviceCode`) before anything is run.

The rule, per image of a fat binary, for a device of compute capability M.N (NVIDIA: the CUDA
C++ Programming Guide's binary and PTX compatibility and its architecture-specific and
family-specific feature sets; the nvcc guide's GPU code generation; the blog post "NVIDIA
Blackwell and NVIDIA CUDA 12.9 Introduce Family-Specific Architecture Features"):

- SASS `sm_XY` (a cubin) runs when M = X and N ≥ Y: sm_80 on 8.0, 8.6, 8.9, not on 9.0.
- SASS `sm_XYa` (architecture-specific) runs only on exactly X.Y: sm_90a on 9.0 alone.
- SASS `sm_XYf` (family-specific) runs like plain SASS, M = X and N ≥ Y: sm_100f on 10.0 and
  10.3, not on 11.0 or 12.0.
- PTX `compute_XY` is JIT-compiled by the driver for any device with (M, N) ≥ (X, Y):
  compute_80 runs on 8.6, 9.0 and 12.0; compute_120 not on 10.3.
- PTX `compute_XYa` runs only on exactly X.Y; PTX `compute_XYf` only when M = X and N ≥ Y.

Where SASS and PTX both fit, the driver loads the SASS; PTX is the way forward to GPUs newer
than the SASS.  Not predicted here: whether the driver can JIT the PTX a newer toolkit wrote
(CUDA minor version compatibility does not cover PTX JIT; `driver_problem` checks the floor).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from relforge.validate.devicecode import DeviceCode, DeviceImage

QUERY = ("--query-gpu=index,name,compute_cap,driver_version", "--format=csv,noheader")
NO_GPU = "no GPU on this machine"
# A prediction's message names this many failing (or running) files and counts the rest.
NAMED_FILES = 3

# The oldest Linux driver that runs programs built with any toolkit of a CUDA major version
# (CUDA minor version compatibility).  From NVIDIA's CUDA Compatibility guide ("Minor Version
# Compatibility": 13.x >= 580, 12.x >= 525, 11.x >= 450 once upgraded to 450.80.02) and the CUDA
# Toolkit Release Notes' driver tables (CUDA 12.x >= 525.60.13, 11.x >= 450.80.02; CUDA 13.0 GA
# >= 580.65.06, the first R580 release).
MINIMUM_DRIVER: Mapping[int, str] = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}

_CAPABILITY = re.compile(r"(\d+)\.(\d+)")


@dataclass(frozen=True)
class Gpu:
    """One GPU as nvidia-smi lists it; `capability` (major, minor), `driver` "580.159.04"."""

    index: int
    name: str
    capability: tuple[int, int]
    driver: str

    @property
    def sm(self) -> str:
        """`sm_90` for compute capability 9.0, `sm_120` for 12.0."""
        return f"sm_{self.capability[0]}{self.capability[1]}"

    @property
    def label(self) -> str:
        """`NVIDIA H200 (sm_90)`."""
        return f"{self.name} ({self.sm})"

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "capability": f"{self.capability[0]}.{self.capability[1]}",
            "sm": self.sm,
            "driver": self.driver,
        }


@dataclass(frozen=True)
class Prediction:
    """Whether every file with CUDA images has one that can run on `gpu` (`ok`), and which
    files do (`runnable_files`) and which do not (`blocked_files`), by their paths in the wheel."""

    gpu: Gpu
    ok: bool
    message: str
    runnable_files: tuple[str, ...] = ()
    blocked_files: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu.to_json(),
            "ok": self.ok,
            "message": self.message,
            "runnable_files": list(self.runnable_files),
            "blocked_files": list(self.blocked_files),
        }


def query_gpus(timeout: float = 30.0) -> tuple[tuple[Gpu, ...], str]:
    """The GPUs `nvidia-smi` (found on PATH) lists, and a one-line reason when there are none
    (`no GPU on this machine (…)`) or a note naming the lines it skipped ("" when none).
    Never raises."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return (), f"{NO_GPU} (nvidia-smi not found)"
    try:
        out = subprocess.run(
            [smi, *QUERY],
            capture_output=True,
            encoding="utf-8",
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return (), f"{NO_GPU} (nvidia-smi timed out after {timeout:g}s)"
    except (OSError, ValueError) as exc:
        return (), f"{NO_GPU} (nvidia-smi could not be run: {exc})"
    if out.returncode != 0:
        said = _first_line(out.stderr) or _first_line(out.stdout)
        return (), f"{NO_GPU} (nvidia-smi exited {out.returncode}{': ' + said if said else ''})"
    gpus, skipped = parse_gpus(out.stdout)
    if not gpus and not skipped:
        return (), f"{NO_GPU} (nvidia-smi lists none)"
    if not gpus:
        return (), f"{NO_GPU} (nvidia-smi lists none usable: {'; '.join(skipped)})"
    return gpus, f"skipped {'; '.join(skipped)}" if skipped else ""


def parse_gpus(text: str) -> tuple[tuple[Gpu, ...], tuple[str, ...]]:
    """The GPUs of `nvidia-smi --query-gpu=index,name,compute_cap,driver_version
    --format=csv,noheader` output, and why each line that is not one was skipped (blank lines
    are not counted)."""
    gpus: list[Gpu] = []
    skipped: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 4 or not fields[0].isdigit():
            skipped.append(f"an unreadable line {line[:80]!r}")
            continue
        # a name cannot hold a comma in this CSV mode; should one, it is all the middle fields
        index, name, cap, driver = int(fields[0]), ", ".join(fields[1:-2]), fields[-2], fields[-1]
        match = _CAPABILITY.fullmatch(cap)
        if match is None:
            skipped.append(f"GPU {index} ({name}): compute capability {cap}")
            continue
        gpus.append(Gpu(index, name, (int(match[1]), int(match[2])), driver))
    return tuple(gpus), tuple(skipped)


def image_runs_on(image: DeviceImage, capability: tuple[int, int]) -> bool:
    """Whether one CUDA image can run on a device of `capability` (the module's rule)."""
    if image.kind not in ("sass", "ptx"):
        return False
    if image.suffix not in ("", "f"):  # "a": architecture-specific
        return image.capability == capability
    if image.kind == "sass" or image.suffix == "f":
        return image.capability[0] == capability[0] and image.capability[1] <= capability[1]
    return image.capability <= capability


def can_run(gpu: Gpu, code: DeviceCode) -> bool:
    """Whether some CUDA image of `code` can run on `gpu` (False when it has none)."""
    return any(image_runs_on(i, gpu.capability) for i in code.images)


def explain(gpu: Gpu, code: DeviceCode) -> str:
    """`NVIDIA H200 (sm_90): SASS sm_90` (the image that runs; SASS before PTX), or
    `no kernel image for NVIDIA H200 (sm_90): SASS sm_80 only, no PTX`."""
    chosen = _chosen(gpu, code)
    if chosen is not None:
        return f"{gpu.label}: {chosen}"
    return f"no kernel image for {gpu.label}: {_carries(gpu, code)}"


def predict(gpus: Sequence[Gpu], files: Mapping[str, DeviceCode]) -> list[Prediction]:
    """One prediction per GPU for the binaries of an artifact (`files`: path in the wheel →
    device code); files without CUDA images (none, or ROCm's only) do not count."""
    cuda = {path: code for path, code in files.items() if _cuda_images(code)}
    return [_predict_one(gpu, cuda) for gpu in gpus]


def driver_problem(driver: str, cuda_version: str) -> str | None:
    """Why `driver` (nvidia-smi's "580.159.04") cannot run what CUDA `cuda_version` ("13.0")
    built, or None: fine, or either version unreadable, or a CUDA major not in the table."""
    try:
        have = Version(driver)
        major = Version(cuda_version).major
    except InvalidVersion:
        return None
    needed = MINIMUM_DRIVER.get(major)
    if needed is None or have >= Version(needed):
        return None
    return f"driver {driver} is too old for CUDA {cuda_version} (needs {needed} or newer)"


def _predict_one(gpu: Gpu, files: Mapping[str, DeviceCode]) -> Prediction:
    runnable = tuple(path for path, code in files.items() if can_run(gpu, code))
    blocked = tuple(path for path in files if path not in runnable)
    if blocked:
        parts = [f"in {path}: {_carries(gpu, files[path])}" for path in blocked[:NAMED_FILES]]
        message = f"no kernel image for {gpu.label} {'; '.join(parts)}"
        if len(blocked) > NAMED_FILES:
            message += f"; and {_more(len(blocked) - NAMED_FILES)}"
        return Prediction(gpu, False, message, runnable, blocked)
    if not files:
        return Prediction(gpu, True, f"{gpu.label}: no CUDA device code to run")
    if len(files) == 1:
        return Prediction(gpu, True, explain(gpu, next(iter(files.values()))), runnable)
    by_image: dict[str, list[str]] = {}
    for path, code in files.items():
        by_image.setdefault(_chosen(gpu, code) or "", []).append(path)
    parts = [f"{chosen} in {_files(paths)}" for chosen, paths in by_image.items()]
    return Prediction(gpu, True, f"{gpu.label}: {'; '.join(parts)}", runnable)


def _cuda_images(code: DeviceCode) -> tuple[DeviceImage, ...]:
    return tuple(i for i in code.images if i.kind in ("sass", "ptx"))


def _chosen(gpu: Gpu, code: DeviceCode) -> str | None:
    """The image that runs, as the driver picks it (SASS before PTX): the newest fitting SASS
    (an `a` or `f` build before a plain one of the same capability), else the newest fitting
    PTX, JIT-compiled."""
    fits = [i for i in code.images if image_runs_on(i, gpu.capability)]
    sass = [i for i in fits if i.kind == "sass"]
    if sass:
        best = max(sass, key=lambda i: (i.capability, i.suffix != ""))
        return f"SASS {best.arch}"
    if fits:
        best = max(fits, key=lambda i: (i.capability, i.suffix != ""))
        return f"PTX {best.arch} (JIT)"
    return None


def _carries(gpu: Gpu, code: DeviceCode) -> str:
    """What a file carries that does not fit: `SASS sm_80 only, no PTX`, `SASS sm_80; PTX
    compute_100 (above sm_90)`."""
    sass = _names(i for i in code.images if i.kind == "sass")
    ptx = [i for i in code.images if i.kind == "ptx"]
    if not ptx:
        return f"SASS {', '.join(sass)} only, no PTX" if sass else "no CUDA device code"
    reasons: dict[str, list[str]] = {}
    for image in ptx:
        names = reasons.setdefault(_ptx_misfit(image, gpu), [])
        if image.arch not in names:
            names.append(image.arch)
    described = "PTX " + ", ".join(f"{', '.join(names)} ({why})" for why, names in reasons.items())
    return f"SASS {', '.join(sass)}; {described}" if sass else f"no SASS; {described}"


def _ptx_misfit(image: DeviceImage, gpu: Gpu) -> str:
    major, minor = image.capability
    if image.suffix not in ("", "f"):
        return f"{major}.{minor} only"
    if image.suffix == "f" and major != gpu.capability[0]:
        return f"the {major}.x family only"
    return f"above {gpu.sm}"


def _names(images: Iterable[DeviceImage]) -> list[str]:
    return list(dict.fromkeys(i.arch for i in images))


def _files(paths: list[str]) -> str:
    named = ", ".join(paths[:NAMED_FILES])
    if len(paths) > NAMED_FILES:
        named += f" and {_more(len(paths) - NAMED_FILES)}"
    return named


def _more(n: int) -> str:
    return f"{n} more file" if n == 1 else f"{n} more files"


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""
