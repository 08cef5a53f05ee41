"""RF-V048 device-code: the CUDA/HIP device code of every binary against its cell's arch list.

A CUDA cell's `arch_list` entry `X.Y` (or `9.0a`, `10.0f`) asks for SASS `sm_XY` (with the same
suffix) in every ELF file that carries device code; `X.Y+PTX` also asks for PTX `compute_XY`.
An architecture the list does not name is a warning (it only costs size).  A CUDA cell whose
binaries carry no device code at all fails (a CPU build under a CUDA label), and so does a CPU
cell whose binaries carry some.  A ROCm cell's entries are gfx target IDs (`gfx90a`,
`gfx942:xnack+`): each must be in every file's offload bundles (a bare processor is met by any
of its feature variants).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from relforge.matrix.archlist import parse_cuda_arch
from relforge.validate.checkregistry import Expectation, Outcome, artifact
from relforge.validate.devicecode import DeviceCode
from relforge.validate.facts import WheelFacts

DEVICE_CODE = "RF-V048"
_SHOWN = 4


@dataclass(frozen=True)
class WantedCode:
    """What an arch list asks every device-code file for."""

    sass: tuple[str, ...]
    ptx: tuple[str, ...]

    @property
    def names(self) -> frozenset[str]:
        return frozenset((*self.sass, *self.ptx))


def cuda_wanted(arch_list: Sequence[str]) -> WantedCode:
    """`("8.0", "9.0a", "12.0+PTX")` → SASS sm_80, sm_90a, sm_120; PTX compute_120.  Entries
    the matrix grammar refuses are never here (matrix/consistency.py)."""
    sass, ptx = [], []
    for entry in arch_list:
        arch = parse_cuda_arch(entry)
        if arch is None:
            continue
        sass.append(arch.sass)
        if arch.ptx:
            ptx.append(arch.compute)
    return WantedCode(tuple(dict.fromkeys(sass)), tuple(dict.fromkeys(ptx)))


def device_files(facts: WheelFacts) -> list[tuple[str, DeviceCode]]:
    """(path, device code) of every ELF member that carries some (or whose sections failed)."""
    return [
        (elf.path, elf.info.device)
        for elf in facts.elves
        if elf.info is not None and elf.info.device is not None and elf.info.device.present
    ]


@artifact(DEVICE_CODE, "device-code",
          "Every ELF file carrying CUDA device code has SASS for each X.Y of the cell's "
          "arch_list and PTX for each X.Y+PTX (HIP: each gfx target in its offload bundles); a "
          "CUDA/ROCm cell carries device code, a CPU cell none.  Architectures the list does "
          "not name warn.", needs_cell=True)  # fmt: skip
def _device_code(facts: WheelFacts, expect: Expectation) -> Outcome:
    cell = expect.cell
    assert cell is not None
    files = device_files(facts)
    unreadable = [f"{path}: {code.error}" for path, code in files if code.error]
    if unreadable:
        return "fail", "device code unreadable: " + _listed(unreadable)
    cuda = [(p, c) for p, c in files if c.sass() or c.ptx()]
    hip = [(p, c) for p, c in files if c.gfx()]
    if cell.accelerator == "cuda":
        if not cuda:
            return "fail", (
                "no CUDA device code in any binary: a CUDA cell's artifact carries SASS or PTX "
                "(a CPU build under a CUDA label?)"
            )
        return _compare_cuda(cuda, cuda_wanted(cell.cuda_arch_list))
    if cell.accelerator == "rocm":
        if not hip:
            return "fail", "no HIP device code (.hip_fatbin) in any binary; a ROCm cell has some"
        return _compare_hip(hip, tuple(cell.cuda_arch_list))
    if cuda or hip:
        carried = [f"{p}: {c.summary()}" for p, c in (*cuda, *hip)]
        return "fail", f"a {cell.accelerator} cell carrying device code: " + _listed(carried)
    return "pass", f"no device code, as a {cell.accelerator} cell should"


def _compare_cuda(files: Sequence[tuple[str, DeviceCode]], wanted: WantedCode) -> Outcome:
    return _compare(
        files,
        (*wanted.sass, *wanted.ptx),
        lambda code: (*code.sass(), *code.ptx()),
        lambda have, want: have == want,
        _wanted_text(wanted),
    )


def _compare_hip(files: Sequence[tuple[str, DeviceCode]], arch_list: Sequence[str]) -> Outcome:
    return _compare(files, tuple(arch_list), DeviceCode.gfx, _meets, ", ".join(arch_list))


def _compare(
    files: Sequence[tuple[str, DeviceCode]],
    asked: Sequence[str],
    carried: Callable[[DeviceCode], Sequence[str]],
    meets: Callable[[str, str], bool],
    asked_text: str,
) -> Outcome:
    """Every file carries what each entry asks for (`meets(have, want)`); what no entry asks
    for is a warning."""
    if not asked:
        summary = _listed([f"{p}: {c.summary()}" for p, c in files])
        return "warn", f"the cell declares no arch_list to compare with; {summary}"
    missing, extra = [], []
    for path, code in files:
        have = carried(code)
        gaps = [want for want in asked if not any(meets(h, want) for h in have)]
        if gaps:
            missing.append(f"{path} lacks {', '.join(gaps)} (carries {code.summary()})")
        more = [h for h in have if not any(meets(h, want) for want in asked)]
        if more:
            extra.append(f"{path}: {', '.join(more)}")
    if missing:
        return "fail", _listed(missing)
    said = f"{len(files)} file{'s' if len(files) > 1 else ''} with {asked_text}"
    if extra:
        return "warn", f"{said}; not in the arch list (size only): {_listed(extra)}"
    return "pass", said


def _meets(target: str, want: str) -> bool:
    """Whether bundle target `gfx90a:xnack+` is what arch list entry `want` asks for: the same
    processor, and every feature the entry names with the same sign."""
    have, need = target.split(":"), want.strip().split(":")
    return have[0] == need[0] and set(need[1:]) <= set(have[1:])


def _wanted_text(wanted: WantedCode) -> str:
    text = f"SASS {', '.join(wanted.sass)}"
    return text + (f"; PTX {', '.join(wanted.ptx)}" if wanted.ptx else "")


def _listed(items: Sequence[str]) -> str:
    shown = "; ".join(items[:_SHOWN])
    return shown + (f" (+{len(items) - _SHOWN} more)" if len(items) > _SHOWN else "")
