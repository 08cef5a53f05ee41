"""The starter matrix `relforge init` writes: one release of the project for this host's Linux
platform (its glibc's manylinux tag), CPU and — when the sources have CUDA code — one CUDA
variant (the nvcc found here), the Python versions its `requires-python` admits that CPython
still supports and a builder here can provide (the others as a comment saying why), abi3 when
the build uses the limited API, dependency axes for torch and numpy in the build, the import
name when it is not the name's, a `build:` section, and comments that say where each key is
documented.  Beside it: the version file it names, when missing, and
`.gitignore` entries for `.relforge/` and `dist/`.

The text is checked with the strict loader (and expanded into cells) and by `matrix lint
--strict` before anything is written, so a starter that does not load is a bug here, never a
file left for the user.  `Starter.next_commands` is the one list of what to run next (the docs'
Getting started shows the same).
"""

from __future__ import annotations

import datetime
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from relforge.atomic import replacing
from relforge.errors import ConfigError, EnvironmentFault, RefusedError, Span, UsageError
from relforge.init.choices import choose
from relforge.init.features import default_import_name
from relforge.init.machine import (
    HostPlatform,
    LocalWheels,
    Nvcc,
    cuda_sources,
    find_nvcc,
    host_platform,
    local_wheels,
    python_on_host,
    split_pythons,
)
from relforge.init.project import PYPROJECT, VERSION_FILE, ProjectFacts
from relforge.init.sidefiles import SideFile, gitignore, version_file, write_side_file
from relforge.init.startermatrix import StarterLayout, render_starter
from relforge.matrix.expand import expand_cells
from relforge.matrix.lint import python_eol_dates
from relforge.matrix.lintreport import lint_report
from relforge.matrix.load import load_matrix

DEFAULT_RELEASE = "0.1"
MANIFEST = "dist/relforge-manifest.json"  # where `relforge build` writes it (--out dist)
_PATCHES = range(40)  # patch releases probed when asking whether a specifier admits 3.X


@dataclass(frozen=True, kw_only=True)
class Starter:
    """A starter matrix, checked, not yet written."""

    path: Path
    text: str
    release: str
    pythons: tuple[str, ...]
    variants: tuple[str, ...]
    platform: str  # linux-x86_64
    cells: int
    notes: tuple[str, ...]
    side_files: tuple[SideFile, ...] = ()
    first_final: str = ""  # X.Y.Z the first RC is tagged for (the version file's, final)

    def next_commands(self) -> tuple[str, ...]:
        """What to run after `relforge init`, from the matrix to a first release candidate:
        lint it, build the release (the channel: the matrix's default), validate the build
        (installing each wheel), publish it to the local store (whose last lines say how to
        install it); then, once these files are pushed, cut the release branch and tag its
        first RC.  README.md's Getting started (= docs/guide/quick-start.md's) runs the same
        commands, for a project hello-ext."""
        matrix, release = shlex.quote(self.path.as_posix()), self.release
        return (
            f"relforge matrix lint --strict {matrix}",
            f"relforge build {matrix} --release {release}",
            f"relforge validate {matrix} --manifest {MANIFEST} --runtime",
            f"relforge publish {matrix} --manifest {MANIFEST} --execute",
            f"relforge release cut {release} --execute",
            f"relforge release tag {self.first_final or release + '.0'} --rc --execute",
        )


def default_path(facts: ProjectFacts) -> Path:
    """matrix/<normalized name>.yaml: found by `relforge release cut` when it is the only one."""
    return Path("matrix") / f"{canonicalize_name(facts.name)}.yaml"


@dataclass(frozen=True, kw_only=True)
class StarterRequest:
    """What `relforge init` asks for: the starter matrix of the project `facts` describe, to
    be written at `path` (its build source is `root`), with `download_url` when given, for
    `host` (default: this machine) with the Pythons `available` says a builder has, the CUDA of
    `nvcc` and the torch wheels `torch` ("find": what this machine has)."""

    facts: ProjectFacts
    path: Path
    root: Path
    download_url: str = ""
    today: datetime.date | None = None
    host: HostPlatform | None = None
    available: Callable[[str], bool] = python_on_host
    nvcc: Nvcc | Literal["find"] | None = "find"
    torch: LocalWheels | Literal["find"] | None = "find"


def plan_starter(request: StarterRequest) -> Starter:
    """The starter matrix for `facts`, to be written at `path` (its build source is `root`),
    for `host` (default: this machine) with the Pythons `available` says a builder has, the
    CUDA of `nvcc` and the torch wheels `torch` (default: what this machine has)."""
    facts, path, root, download_url = (
        request.facts,
        request.path,
        request.root,
        request.download_url,
    )
    today, host, available = request.today, request.host, request.available
    nvcc, torch = request.nvcc, request.torch
    day = today or datetime.date.today()
    host = host or host_platform()
    build = facts.build
    notes: list[str] = [f"name {facts.name} from {facts.name_from}"]
    if facts.name_from != PYPROJECT and not (root / PYPROJECT).is_file():
        notes[0] += f" (no {PYPROJECT} here)"
    wanted, why = choose_pythons(
        facts.requires_python,
        day,
        where=facts.requires_python_at,
        source=facts.requires_python_from,
    )
    notes.append(why)
    against = build.compiled_against if build else ()
    if "torch" in against and torch == "find":
        torch = local_wheels("torch", host.arch)
    cuda = cuda_sources(root)
    if nvcc == "find":
        nvcc = find_nvcc() if cuda else None  # asked only of a project with CUDA code
    choices = choose(
        platform=host,
        cuda_found_in=cuda,
        nvcc=nvcc,
        compiled_against=against,
        compiled_against_from=build.compiled_against_from if build else "",
        torch=None if torch == "find" else torch,
    )
    if choices.pythons:
        served = [p for p in wanted if p in choices.pythons]
        if served and served != wanted:
            notes.append(
                f"Python {', '.join(p for p in wanted if p not in served)} left out (as a "
                f"comment): the torch wheel here is for Python {', '.join(choices.pythons)} only"
            )
            wanted = served
    pythons, absent = split_pythons(wanted, available)
    if absent:
        notes.append(
            f"Python {', '.join(absent)} left out (as a comment): no builder here has them "
            "(looked on PATH, in pyenv and with uv); install them, then add them"
        )
    elif not any(available(p) for p in wanted):
        notes.append(
            f"no builder here has Python {', '.join(wanted)}: `relforge build` skips every "
            "cell until one is installed (PATH, pyenv or uv)"
        )
    notes.append(host.why)
    notes.extend(choices.notes)
    spec = facts.requires_python
    excluded = [p for p in pythons if spec is not None and not spec.contains(p, prereleases=True)]
    if excluded:
        # The matrix checks each `python: X.Y` against requires_python as X.Y.0: a range that
        # starts at a patch release (>=3.12.1) would make the starter fail to load.
        notes.append(
            f"requires_python left out of the matrix (as a comment): it excludes "
            f"{', '.join(f'{p}.0' for p in excluded)}, and the matrix checks each Python X.Y "
            "as X.Y.0"
        )
    elif spec is not None and facts.requires_python_from != PYPROJECT:
        notes.append(f"requires_python {spec} from {facts.requires_python_from}")
    release, version, side = _release(facts, root, notes)
    abi3, abi3_from = (build.abi3, build.abi3_from) if build else ("", "")
    if abi3 and not any(Version(p) >= Version(abi3) for p in pythons):
        notes.append(f"! abi3 floor {abi3} ({abi3_from}) is above every Python here: left out")
        abi3 = ""
    elif abi3:
        notes.append(f"abi3 {abi3} from {abi3_from}: one cp{abi3.replace('.', '')}-abi3 wheel")
    if build:
        notes.extend(build.notes)
    module = build.import_name if build else ""
    if module and module != default_import_name(facts.name):
        notes.append(f"import_name {module} from {build.import_name_from if build else ''}")
    else:
        module = ""
    ignore = gitignore(root)
    side_files = tuple(f for f in (side, ignore) if f is not None)
    source = Path(os.path.relpath(root.resolve(), path.resolve().parent)).as_posix()
    layout = StarterLayout(
        name=facts.name,
        import_name=module,
        import_name_from=build.import_name_from if build else "",
        release=release,
        version=version,
        date=day,
        pythons=pythons,
        absent_pythons=absent,
        requires_python=str(spec) if spec is not None else None,
        requires_python_from=facts.requires_python_from,
        requires_comment=bool(excluded),
        source=source,
        matrix_file=path.as_posix(),
        download_url=download_url,
        platform=host,
        cpu_image=choices.cpu_image,
        cuda=choices.cuda,
        abi3=abi3,
        abi3_from=abi3_from,
        axes=choices.axes,
        images_comment=_IMAGES_COMMENT,
    )
    text = render_starter(layout)
    try:
        matrix = load_matrix(str(path), text=text)  # the strict loader
    except ConfigError as exc:
        if download_url and "download_url" in (exc.key or ""):
            raise UsageError(exc.message, key="--download-url", hint=exc.hint) from None
        raise  # anything else is a bug of the starter
    for finding in lint_report(matrix, strict=True).failing:  # a bug of the starter too
        notes.append(f"! matrix lint --strict: {finding.rule.id} {finding.message}")
    cells = expand_cells(matrix, release)
    others = [
        p.as_posix()
        for p in sorted(path.parent.glob("*.y*ml"))
        if p.suffix in (".yaml", ".yml") and p.resolve() != path.resolve()
    ]
    if others and path.parent.name == "matrix":
        notes.append(
            f"{path.parent.as_posix()}/ holds other YAML files too ({', '.join(others)}): "
            f"`relforge release cut` then needs --matrix {path.as_posix()}"
        )
    return Starter(
        path=path,
        text=text,
        release=release,
        pythons=tuple(pythons),
        variants=tuple(matrix.release(release).accelerators),
        platform=host.name,
        cells=len(cells),
        notes=tuple(notes),
        side_files=side_files,
        first_final=version or f"{release}.0",
    )


_IMAGES_COMMENT = (
    "    # Images come from a registry (`docker pull`); with no registry at hand, make one with\n"
    "    # `relforge builder-image` and name relforge/builder:bookworm instead\n"
    "    # (docs/guide/builds.md).\n"
)


def _release(
    facts: ProjectFacts, root: Path, notes: list[str]
) -> tuple[str, str | None, SideFile | None]:
    """The release X.Y, its patch version (None for X.Y.0) and the version file to write."""
    notes.extend(facts.notes)
    if facts.version is None:
        written = f"{DEFAULT_RELEASE}.0a0"
        notes.append(f"no version in the project's files: release {DEFAULT_RELEASE} assumed")
        side = version_file(root, VERSION_FILE, written, "the first release's alpha")
        _warn_tag(facts, Version(written), notes)
        return DEFAULT_RELEASE, None, side
    found = facts.version
    release = f"{found.major}.{found.minor}"
    patch = Version(found.base_version)
    notes.append(f"release {release} from {facts.version_from} ({found})")
    side = version_file(root, VERSION_FILE, str(found), f"from {facts.version_from}")
    if side is None and facts.version_from == VERSION_FILE:
        text = (root / VERSION_FILE).read_text(encoding="utf-8").strip()
        if text != str(found):
            notes.append(f"{VERSION_FILE} says {text}: read as {found} (X.Y.Z, as build does)")
    _warn_tag(facts, found, notes)
    return release, (str(patch) if patch.micro else None), side


def _warn_tag(facts: ProjectFacts, written: Version, notes: list[str]) -> None:
    """A version below the newest tag builds nightlies below a release already made."""
    if facts.newest_tag is None:
        return
    name, tagged = facts.newest_tag
    final_made = not tagged.is_prerelease and tagged == Version(written.base_version)
    if tagged > written or final_made:
        notes.append(
            f"! the newest version tag {name} ({tagged}) is "
            f"{'already' if final_made else 'above'} {written}, the version written: its "
            f"builds would sort below a release already tagged; write the next release in "
            f"{VERSION_FILE}"
        )


def write_starter(starter: Starter, *, force: bool) -> None:
    """Write the starter; an existing file is kept (exit 5) unless `force`."""
    path = starter.path
    if path.exists() and not force:
        raise RefusedError(
            "exists; not overwriting it",
            where=Span(str(path)),
            hint=f"check it with `relforge matrix check {path.as_posix()}`, pass --out "
            "OTHER.yaml, or --force to replace it",
        )
    if path.exists() and not path.is_file():
        raise RefusedError("exists and is not a file", where=Span(str(path)))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with replacing(path) as tmp:
            tmp.write_text(starter.text, encoding="utf-8")
    except (NotADirectoryError, IsADirectoryError, FileExistsError) as exc:  # a file in the way
        raise UsageError(
            f"cannot write the matrix there: {exc.strerror or exc}",
            where=Span(str(path)),
            key="--out",
        ) from None
    except OSError as exc:
        raise EnvironmentFault(
            f"cannot write the matrix: {exc.strerror or exc}", where=Span(str(path))
        ) from None
    for side in starter.side_files:
        write_side_file(side)


def choose_pythons(
    spec: SpecifierSet | None,
    today: datetime.date,
    *,
    where: Span | None = None,
    source: str = PYPROJECT,
) -> tuple[list[str], str]:
    """CPython feature versions for the matrix, and one line saying why these."""
    eol = python_eol_dates()
    released = sorted((v for v, end in eol.items() if _release_date(end) <= today), key=Version)
    supported = [v for v in released if eol[v] > today]
    if spec is None:
        return supported, (
            f"no requires-python in {PYPROJECT}: Python {_span(supported)}, the CPython "
            f"versions supported on {today}"
        )
    admitted = [v for v in released if _admits(spec, v)]
    chosen = [v for v in admitted if v in supported]
    if chosen:
        past = [v for v in admitted if v not in supported]
        left_out = f"; {', '.join(past)} past end of life, left out" if past else ""
        named = "requires-python" if source == PYPROJECT else f"python_requires of {source}"
        return chosen, f"Python {_span(chosen)} from {named} {spec}{left_out}"
    if admitted:
        return admitted, (
            f"Python {_span(admitted)} from requires-python {spec} (all past their end of life)"
        )
    raise ConfigError(
        f"requires-python {str(spec)!r} admits no released CPython version ({', '.join(released)})",
        where=where,
        key="project.requires-python",
        hint=f"fix requires-python in {PYPROJECT}",
    )


def _release_date(end_of_life: datetime.date) -> datetime.date:
    # PEP 602: a feature release gets five years of support, and is released in October.
    return datetime.date(end_of_life.year - 5, 10, 1)


def _admits(spec: SpecifierSet, minor: str) -> bool:
    return any(spec.contains(Version(f"{minor}.{patch}")) for patch in _PATCHES)


def _span(versions: list[str]) -> str:
    return versions[0] if len(versions) == 1 else f"{versions[0]}–{versions[-1]}"
