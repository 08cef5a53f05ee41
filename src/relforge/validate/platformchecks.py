"""The checks of a wheel's macOS and Windows binaries against its platform tags, and of every
binary's format against the OS its tags name (issue 34).

- RF-V070 macos-binaries: every Mach-O file holds the architectures its tag says (`arm64`,
  `x86_64`, `universal2` = both), needs no newer macOS than the tag's, loads only system
  libraries (`/usr/lib/…`, `/System/Library/…`) or files inside the wheel (reached through
  `@loader_path`, `@executable_path` or `@rpath` and the file's LC_RPATHs); an absolute path
  anywhere else (`/opt/homebrew`, `/usr/local`, a build folder) fails; arm64 code is signed.
- RF-V071 windows-binaries: every PE file's machine is the tag's (`win_amd64`, `win_arm64`,
  `win32`); every DLL it imports (delay-loaded ones too) is a Windows system DLL, the Python
  DLL of the tag's interpreter (`python3XX.dll`, `python3.dll` for abi3) or a DLL inside the
  wheel; the MSVC runtime is reported as bundled or required, as delvewheel treats it.
- RF-V072 binary-formats: a binary of another OS's format than the tags' (an ELF file in a
  macOS wheel, a Mach-O in a Linux one) fails.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Sequence

from relforge.providedlibs import DRIVER, declared_by, platform_environment, providers_of
from relforge.validate.checkregistry import Expectation, Outcome, artifact
from relforge.validate.facts import MachOMember, PEMember, WheelFacts
from relforge.validate.macho import MachOSlice, macos_version
from relforge.validate.pe import is_system_dll, msvc_runtime, python_dll
from relforge.validate.platformtags import (
    MacosTag,
    macos_tag,
    tag_format,
    windows_machine,
)

MACOS_SYSTEM = ("/usr/lib/", "/System/Library/")
ARM64_FIRST_MACOS = (11, 0)  # pip accepts macosx_10_X_universal2 on arm64 from macOS 11
_SHOWN = 6


@artifact("RF-V070", "macos-binaries",
          "Every Mach-O file has the architectures of the macOS tag (universal2: x86_64 and "
          "arm64), a minimum macOS (LC_BUILD_VERSION / LC_VERSION_MIN_MACOSX) not newer than "
          "the tag's, dependencies that are system libraries or resolve inside the wheel "
          "through @loader_path/@rpath (no /opt/homebrew, /usr/local or build folder), and a "
          "code signature on arm64.")  # fmt: skip
def _macos_binaries(facts: WheelFacts, expect: Expectation) -> Outcome:
    tags = [t for t in (macos_tag(p) for p in facts.platform_tags) if t is not None]
    if not facts.machos:
        return "skip", "no Mach-O files"
    if not tags:
        return "skip", f"no macOS platform tag ({', '.join(facts.platform_tags)})"
    members = frozenset(facts.members)
    arch = next(iter(sorted(tags[0].arches)))
    provided = _provider(facts, "macos", arch)
    problems: list[str] = []
    for macho in facts.machos:
        if macho.info is None:
            problems.append(f"{macho.path}: unreadable Mach-O ({macho.error})")
            continue
        problems += _macho_problems(macho, tags, members, provided)
    if problems:
        return "fail", _listed(problems)
    arches = sorted({a for m in facts.machos if m.info for a in m.info.arches})
    lowest = min(t.version for t in tags)
    return "pass", (
        f"{len(facts.machos)} Mach-O files for {', '.join(arches)}, none newer than macOS "
        f"{lowest[0]}.{lowest[1]}, every dependency a system library or in the wheel"
    )


def _macho_problems(
    macho: MachOMember,
    tags: Sequence[MacosTag],
    members: frozenset[str],
    provided: Provider,
) -> list[str]:
    assert macho.info is not None
    out = []
    have = set(macho.info.arches)
    for tag in tags:
        missing = sorted(tag.arches - have)
        if missing:
            out.append(
                f"{macho.path} is for {', '.join(sorted(have))}, the tag "
                f"macosx_{tag.version[0]}_{tag.version[1]} asks for {', '.join(missing)}"
            )
    for piece in macho.info.slices:
        wanted = [t for t in tags if piece.arch in t.arches]
        if piece.minos is not None and wanted:
            ceiling = max(t.version for t in wanted)
            if piece.arch == "aarch64":  # no macOS before 11.0 runs on arm64: a tag of
                ceiling = max(ceiling, ARM64_FIRST_MACOS)  # 10.13 means 11.0 for that slice
            if macos_version(piece.minos) > (*ceiling, 0):
                out.append(
                    f"{macho.path} ({piece.arch}) needs macOS {piece.minos}, the tag says "
                    f"{ceiling[0]}.{ceiling[1]}"
                )
        if piece.arch == "aarch64" and not piece.signed:
            out.append(f"{macho.path} (arm64) is not signed: Apple Silicon refuses to load it")
        outside = dylib_problems(macho.path, piece, members, provided)
        out += [f"{macho.path} ({piece.arch}) {p}" for p in outside]
    return list(dict.fromkeys(out))


def dylib_problems(
    path: str, piece: MachOSlice, members: frozenset[str], provided: Provider
) -> list[str]:
    """What one slice loads from outside the system, the wheel and its dependencies."""
    out = []
    for dylib in piece.dylibs:
        target = dylib.path
        if target.startswith(MACOS_SYSTEM):
            continue
        if target.startswith("@"):
            found = resolve_macho(path, target, piece.rpaths, members)
            if found is None and provided(posixpath.basename(target)) is None:
                where = (
                    f" (rpaths: {', '.join(piece.rpaths)})" if target.startswith("@rpath") else ""
                )
                out.append(f"loads {target}, which is not in the wheel{where}")
            continue
        out.append(f"loads {target} from outside the wheel and the system ({dylib.kind})")
    return out


def resolve_macho(
    path: str, target: str, rpaths: Iterable[str], members: frozenset[str]
) -> str | None:
    """The wheel member an `@loader_path/…`, `@executable_path/…` or `@rpath/…` dependency of
    the file `path` names (None: not in the wheel)."""
    here = posixpath.dirname(path)

    def inside(candidate: str) -> str | None:
        normal = posixpath.normpath(candidate)
        return normal if normal in members else None

    for prefix in ("@loader_path/", "@executable_path/"):
        if target.startswith(prefix):
            return inside(posixpath.join(here, target[len(prefix) :]))
    if target.startswith("@rpath/"):
        rest = target[len("@rpath/") :]
        for rpath in rpaths:
            for prefix in ("@loader_path", "@executable_path"):
                if rpath.startswith(prefix):
                    found = inside(posixpath.join(here, rpath[len(prefix) :].lstrip("/"), rest))
                    if found:
                        return found
    return None


@artifact("RF-V071", "windows-binaries",
          "Every PE file (DLL, .pyd) is for the machine of the Windows tag (win_amd64, "
          "win_arm64, win32) and imports (delay-loaded too) only Windows system DLLs, the "
          "tag's Python DLL (python3XX.dll; python3.dll for abi3) or DLLs inside the wheel; "
          "the MSVC runtime is reported as bundled or required.")  # fmt: skip
def _windows_binaries(facts: WheelFacts, expect: Expectation) -> Outcome:
    machines = {m for m in (windows_machine(p) for p in facts.platform_tags) if m}
    if not facts.pes:
        return "skip", "no PE files"
    if not machines:
        return "skip", f"no Windows platform tag ({', '.join(facts.platform_tags)})"
    bundled = {posixpath.basename(m).lower() for m in facts.members}
    pythons = _python_dlls(facts.tags)
    provided = _provider(facts, "windows", next(iter(sorted(machines))))
    problems: list[str] = []
    runtime: set[str] = set()
    for pe in facts.pes:
        if pe.info is None:
            problems.append(f"{pe.path}: unreadable PE file ({pe.error})")
            continue
        problems += _pe_problems(pe, machines, bundled, pythons, runtime, provided)
    if problems:
        return "fail", _listed(problems)
    note = ""
    if runtime:
        inside = sorted(r for r in runtime if r.lower() in bundled)
        outside = sorted(r for r in runtime if r.lower() not in bundled)
        note = "; MSVC runtime " + "; ".join(
            part
            for part in (
                f"bundled: {', '.join(inside)}" if inside else "",
                f"required from the system: {', '.join(outside)}" if outside else "",
            )
            if part
        )
    return "pass", (
        f"{len(facts.pes)} PE files for {', '.join(sorted(machines))}, every import a system "
        f"DLL, the Python DLL or in the wheel{note}"
    )


def _pe_problems(
    pe: PEMember,
    machines: set[str],
    bundled: set[str],
    pythons: set[str] | None,
    runtime: set[str],
    provided: Provider,
) -> list[str]:
    assert pe.info is not None
    out = []
    if pe.info.machine not in machines:
        out.append(
            f"{pe.path} is a {pe.info.machine} binary, the tag says {', '.join(sorted(machines))}"
        )
    for name, how in (
        *((n, "imports") for n in pe.info.imports),
        *((n, "delay-loads") for n in pe.info.delay_imports),
    ):
        lower = name.lower()
        if msvc_runtime(name):
            runtime.add(name)
            continue
        version = python_dll(name)
        if version is not None:
            if pythons is not None and lower not in pythons:
                out.append(
                    f"{pe.path} {how} {name}, the tags' Python needs {', '.join(sorted(pythons))}"
                )
            continue
        if is_system_dll(name) or lower in bundled or provided(lower) is not None:
            continue
        out.append(f"{pe.path} {how} {name}, which is neither in the wheel nor a Windows DLL")
    return out


Provider = Callable[[str], str | None]


def _provider(facts: WheelFacts, os: str, arch: str) -> Provider:
    """Who provides a library the wheel does not hold: the GPU driver, or a distribution of
    its Requires-Dist (marker true on that OS) that the catalogue says ships it."""
    environment = platform_environment(os, arch, facts.python_tag)

    def provided(library: str) -> str | None:
        if DRIVER in providers_of(library):
            return "the GPU driver"
        found = declared_by(library, facts.requires_dist, environment)
        return f"{found.name} (Requires-Dist)" if found is not None else None

    return provided


def _python_dlls(tags: Sequence[str]) -> set[str] | None:
    """The Python DLL names the wheel's tags allow (None: any; a `py3` tag says nothing)."""
    allowed: set[str] = set()
    for tag in tags:
        interpreter, abi, _ = tag.split("-")
        if abi == "abi3":
            allowed.add("python3.dll")
        if interpreter.startswith("cp") and interpreter[2:].isdigit():
            allowed.add(f"python{interpreter[2:]}.dll")
        else:
            return None
    return allowed or None


@artifact("RF-V072", "binary-formats",
          "Every binary is of the format its platform tags' OS loads: ELF on Linux, Mach-O "
          "on macOS, PE on Windows.")  # fmt: skip
def _binary_formats(facts: WheelFacts, expect: Expectation) -> Outcome:
    formats = {f for f in (tag_format(t) for t in facts.platform_tags) if f}
    found = [
        *(("ELF", e.path) for e in facts.elves),
        *(("Mach-O", m.path) for m in facts.machos),
        *(("PE", p.path) for p in facts.pes),
    ]
    if not found:
        return "skip", "no binaries"
    if not formats:
        return "skip", f"no OS in the platform tags ({', '.join(facts.platform_tags)})"
    wrong = [f"{path} is {kind}" for kind, path in found if kind not in formats]
    if wrong:
        return "fail", f"the tags want {'/'.join(sorted(formats))}: " + _listed(wrong)
    return "pass", f"{len(found)} {'/'.join(sorted(formats))} files"


def _listed(items: Sequence[str]) -> str:
    shown = "; ".join(items[:_SHOWN])
    return shown + (f" (+{len(items) - _SHOWN} more)" if len(items) > _SHOWN else "")
