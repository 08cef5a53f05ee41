"""The starter matrix `relforge init` writes: one release of the project for this host's Linux
platform (its glibc's manylinux tag), CPU and — when the sources have CUDA code — one CUDA
variant, the Python versions its `requires-python` admits that CPython still supports and a
builder here can provide (the others as a comment saying why), a `build:` section, and comments
that say where each key is documented.  Beside it: the version file it names, when missing, and
`.gitignore` entries for `.relforge/` and `dist/`.

The text is checked with the strict loader (and expanded into cells) before anything is
written, so a starter that does not load is a bug here, never a file left for the user.
"""

from __future__ import annotations

import datetime
import json
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from relforge.atomic import replacing
from relforge.errors import ConfigError, EnvironmentFault, RefusedError, Span, UsageError
from relforge.init.machine import (
    HostPlatform,
    cuda_sources,
    host_platform,
    python_on_host,
    split_pythons,
)
from relforge.init.project import PYPROJECT, VERSION_FILE, ProjectFacts
from relforge.init.sidefiles import SideFile, gitignore, version_file, write_side_file
from relforge.matrix.expand import expand_cells
from relforge.matrix.lint import python_eol_dates
from relforge.matrix.load import load_matrix

CUDA_VARIANT = "cu128"
CUDA_VERSION = "12.8.1"
CUDA_ARCH_LIST = ("7.5", "8.0", "8.6", "9.0", "10.0", "12.0+PTX")
GPU_RUNNER = "linux-gpu"  # a placeholder for the user's self-hosted GPU runner label
DEFAULT_RELEASE = "0.1"
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
    uploads: bool = False  # publishing.store is one CI jobs can upload to (s3://)

    def next_commands(self) -> tuple[str, ...]:
        """What to run after `relforge init`: see the cells, generate CI, build.  Generated
        CI uploads only to a shared (s3://) store: with the starter's local store the
        workflows are generated without upload jobs."""
        matrix, release = shlex.quote(self.path.as_posix()), self.release
        no_upload = "" if self.uploads else " --no-upload"
        return (
            f"relforge matrix list {matrix} --release {release}",
            f"relforge workflows generate {matrix} --release {release} --out .github/workflows"
            + no_upload,
            f"relforge build {matrix} --release {release} --builder host",
        )


def default_path(facts: ProjectFacts) -> Path:
    """matrix/<normalized name>.yaml: found by `relforge release cut` when it is the only one."""
    return Path("matrix") / f"{canonicalize_name(facts.name)}.yaml"


def plan_starter(
    facts: ProjectFacts,
    path: Path,
    *,
    root: Path,
    download_url: str = "",
    today: datetime.date | None = None,
    host: HostPlatform | None = None,
    available: Callable[[str], bool] = python_on_host,
) -> Starter:
    """The starter matrix for `facts`, to be written at `path` (its build source is `root`),
    for `host` (default: this machine) with the Pythons `available` says a builder has."""
    day = today or datetime.date.today()
    host = host or host_platform()
    notes: list[str] = [f"name {facts.name} from {facts.name_from}"]
    if facts.name_from != PYPROJECT and not (root / PYPROJECT).is_file():
        notes[0] += f" (no {PYPROJECT} here)"
    wanted, why = choose_pythons(facts.requires_python, day, where=facts.requires_python_at)
    notes.append(why)
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
    cuda = cuda_sources(root)
    notes.append(
        f"CUDA variant {CUDA_VARIANT}: the sources have CUDA code ({', '.join(cuda)})"
        if cuda
        else "CPU only: no CUDA code in the sources (*.cu, *.cuh, CUDAExtension, CMake CUDA); "
        "docs/cuda-extension.md shows how to add a CUDA variant"
    )
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
    if facts.version is None:
        release, version = DEFAULT_RELEASE, None
        written = f"{DEFAULT_RELEASE}.0a0"
        notes.append(f"no {VERSION_FILE} and no [project] version: release {release} assumed")
        side = version_file(root, VERSION_FILE, written, "the first release's alpha")
    else:
        release = f"{facts.version.major}.{facts.version.minor}"
        patch = Version(facts.version.base_version)
        version = str(patch) if patch.micro else None
        notes.append(f"release {release} from {facts.version_from} ({facts.version})")
        side = version_file(root, VERSION_FILE, str(facts.version), f"from {facts.version_from}")
    ignore = gitignore(root)
    side_files = tuple(f for f in (side, ignore) if f is not None)
    source = Path(os.path.relpath(root.resolve(), path.resolve().parent)).as_posix()
    text = render_starter(
        facts,
        release=release,
        version=version,
        pythons=pythons,
        source=source,
        matrix_file=path.as_posix(),
        download_url=download_url,
        requires_comment=bool(excluded),
        platform=host,
        absent_pythons=absent,
        cuda=bool(cuda),
    )
    try:
        matrix = load_matrix(str(path), text=text)  # the strict loader
    except ConfigError as exc:
        if download_url and "download_url" in (exc.key or ""):
            raise UsageError(exc.message, key="--download-url", hint=exc.hint) from None
        raise  # anything else is a bug of the starter
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
        uploads=matrix.publishing.store.startswith("s3://"),
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
    spec: SpecifierSet | None, today: datetime.date, *, where: Span | None = None
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
        return chosen, f"Python {_span(chosen)} from requires-python {spec}{left_out}"
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


def render_starter(
    facts: ProjectFacts,
    *,
    release: str,
    version: str | None,
    pythons: list[str],
    source: str,
    matrix_file: str,
    download_url: str = "",
    requires_comment: bool = False,
    platform: HostPlatform,
    absent_pythons: list[str] | None = None,
    cuda: bool = True,
) -> str:
    """The matrix text: plain YAML, comments pointing to relforge's docs pages."""
    absent = (
        f"    # and {json.dumps(absent_pythons)} once a builder here has them: no CPython\n"
        "    # of those versions was on PATH, in pyenv or from uv when this was written\n"
        if absent_pythons
        else ""
    )
    plat = platform.name
    glibc_from = "this host's glibc" if platform.from_host else "a manylinux_2_28 image's glibc"
    runner = "ubuntu-24.04-arm" if platform.arch == "aarch64" else "ubuntu-24.04"
    runners = f"{{cpu: {runner}, cuda: {GPU_RUNNER}}}" if cuda else f"{{cpu: {runner}}}"
    gpu_comment = (
        f"        # Tests of CUDA wheels run on a runner with a GPU: {GPU_RUNNER} stands for your\n"
        "        # self-hosted runner's label (`workflows generate` lists it in "
        ".github/actionlint.yaml).\n"
        if cuda
        else ""
    )
    cuda_variant = (
        f"""\
      {CUDA_VARIANT}:
        kind: cuda
        version: {CUDA_VERSION}
        arch_list: {json.dumps(list(CUDA_ARCH_LIST))}
        # extra_install_requires: ["nvidia-cuda-runtime-cu12==12.8.*"]  # if you link shared
        platforms:
          {plat}: {{image: pytorch/manylinux2_28-builder:cuda12.8}}
"""
        if cuda
        else ""
    )
    download = (
        f"  download_url: {json.dumps(download_url)}  # where the channel indexes are served\n"
        if download_url
        else "  # download_url: https://download.example.org  # where the channel indexes are "
        "served\n"
    )
    requires = (
        f"    requires_python: {json.dumps(str(facts.requires_python))}"
        f"  # = requires-python in {PYPROJECT} (checked on every wheel)\n"
        if facts.requires_python is not None
        else ""
    )
    if requires and requires_comment:  # the matrix reads python X.Y as X.Y.0, which it excludes
        requires = "    # " + requires.lstrip().replace(
            "(checked on every wheel)", "(excludes some Python X.Y.0 listed above)"
        )
    patch = (
        f"    version: {version}  # the patch release built from this branch\n" if version else ""
    )
    return f"""\
# Build matrix of {facts.name}, written by `relforge init`; edit it freely.
# Every key is described in relforge's docs: docs/reference/matrix.md (and the JSON Schema
# editors complete it with, docs/reference/matrix.schema.json); docs/guide/matrix.md (sections,
# extends, rules), builds.md (project.build), channels-and-promotion.md (publishing);
# docs/cuda-extension.md in relforge's repository walks a CUDA extension from here to a release.
# Check it with `relforge matrix check {matrix_file}`
# and `relforge matrix lint {matrix_file}`.
schema_version: 1

project:
  name: {json.dumps(facts.name)}
  version_file: {VERSION_FILE}  # X.Y.Z of nightly and test builds, relative to build.source
  # repository: OWNER/NAME  # GitHub repository: lets `workflows generate --ref` pin branches
{download}  build:
    source: {json.dumps(source)}  # the project root, relative to this file
    command: []  # empty: the PEP 517 wheel build (pip wheel, offline); or your build script
    arch_list_env: CUDA_ARCH_LIST  # the variable your build reads the CUDA arch list from
    timeout_minutes: 60

channels:
  default: nightly  # `relforge release cut` makes it test on release/X.Y

publishing:
  store: file://.relforge/store  # or s3://BUCKET/PREFIX (credentials from the environment)

releases:
  "{release}":
{patch}    # date: YYYY-MM-DD  # planned release date; `matrix lint` checks Python end of life by it
    python: {json.dumps(pythons)}
{absent}{requires}    platforms:
      {plat}:
        os: linux
        arch: {platform.arch}
        platform_tag: {platform.tag}  # {glibc_from}
        build_runner: {runner}
{gpu_comment}        test_runners: {runners}
    # Images come from a registry (`docker pull`); with no registry at hand, make one with
    # `relforge builder-image` and name relforge/builder:bookworm instead (docs/guide/builds.md).
    accelerators:
      cpu:
        kind: cpu
        platforms:
          {plat}: {{image: pytorch/manylinux2_28-builder:cpu}}
{cuda_variant}    pypi_default:
      {plat}: cpu  # the variant `relforge pypi stage` uploads to PyPI
"""
