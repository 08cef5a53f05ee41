"""What templates see: typed, read-only objects built from the matrix and the render request.

Templates get `ctx` (RenderContext), `action(name)` (a pinned `uses:` value), and per file either
`group` (a CellGroup, for relforge-<os>-<type>.yml) or `channels` (for validate-binaries).
"""

from __future__ import annotations

import datetime
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from relforge import __version__
from relforge.errors import ConfigError, UsageError
from relforge.matrix.cell import Cell
from relforge.matrix.expand import on_channel
from relforge.matrix.schema import CHANNEL_NAMES, ChannelName, Matrix, Release
from relforge.workflows.layout import MAX_MATRIX_JOBS, Shard, matrix_entry, shards
from relforge.workflows.toolpins import package_tool_pins

BUILD_WORKFLOW = "relforge-build.yml"
_REPOSITORY = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+\Z")
_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*\Z")
_SCRIPT_SUFFIXES = (".sh", ".bash", ".py", ".ps1", ".bat", ".cmd")
# Channel-stamped cells carry a dated nightly version; the workflows use only their index URL.
_ANY_DAY = datetime.date(2000, 1, 1)


@dataclass(frozen=True, kw_only=True)
class Timeouts:
    """Minutes per job kind (`timeout-minutes`)."""

    build: int = 360
    test: int = 120
    upload: int = 60
    bot: int = 30


@dataclass(frozen=True, kw_only=True)
class RenderContext:
    """Facts shared by every template (`ctx`)."""

    project: str = field(metadata={"doc": "distribution name"})
    matrix: str = field(metadata={"doc": "matrix file, relative to the repository root"})
    release: str
    ref: str = field(metadata={"doc": "ref of the reusable build workflow; empty: same commit"})
    build_workflow_file: str = BUILD_WORKFLOW
    build_workflow: str = field(metadata={"doc": "`uses:` value that calls relforge-build.yml"})
    pr_paths: tuple[str, ...] = field(metadata={"doc": "paths whose change builds a PR"})
    store_is_s3: bool = False
    upload: bool = field(
        default=True, metadata={"doc": "jobs upload and index (false: `--no-upload`)"}
    )
    pypi: bool = field(default=False, metadata={"doc": "the release has PyPI-default wheels"})
    relforge_version: str = __version__
    relforge_requirement: str = field(
        default=f"relforge=={__version__}",
        metadata={"doc": "what every job installs (ci.relforge)"},
    )
    relforge_pin: str = field(
        default=f"relforge {__version__} from the runner's index",
        metadata={"doc": "how that requirement is pinned, for step names"},
    )
    uv_requirement: str = field(
        default_factory=lambda: package_tool_pins()["uv"].requirement,
        metadata={"doc": "the pinned uv that installs relforge (a --require-hashes line)"},
    )
    python: str = field(default="3.12", metadata={"doc": "relforge's own Python (ci.python)"})
    hosted_runner: str = field(
        default="ubuntu-24.04",
        metadata={"doc": "runner of relforge's own jobs: upload, index, site, bot (ci.runner)"},
    )
    dist: str = "dist"
    manifest: str = "dist/relforge-manifest.json"
    nightly_branch: str = "nightly"
    rc_tags: str = "v[0-9]+.[0-9]+.[0-9]+-rc[0-9]+"
    final_tags: str = "v[0-9]+.[0-9]+.[0-9]+"
    site_dir: str = ".relforge/site"
    ciflow_tags: str = "ciflow/binaries/*"
    validate_cron: str = "17 7 * * *"
    retention_days: int = 14
    timeouts: Timeouts = field(default_factory=Timeouts)


@dataclass(frozen=True, kw_only=True)
class ValidateJobs:
    """The validate-binaries jobs of one channel."""

    name: ChannelName
    shards: tuple[Shard, ...]


def build_workflow_ref(matrix: Matrix, out_rel: str | None, ref: str | None) -> str:
    """`./.github/workflows/relforge-build.yml` (the documented form for a reusable workflow of
    the same repository, at the running commit; GitHub, GHES, act) or
    `owner/repo/…/relforge-build.yml@ref`."""
    directory = out_rel or ".github/workflows"
    if ref is None:  # GitHub runs it only from .github/workflows (a preview elsewhere is not run)
        return f"./{directory}/{BUILD_WORKFLOW}"
    if not _REF.match(ref) or ".." in ref or ref.endswith(("/", ".lock")) or "//" in ref:
        raise UsageError(
            f"{ref!r} is not a branch or tag name", key="--ref", hint="e.g. main or release/2.9"
        )
    repository = matrix.project.repository
    if not repository:
        raise ConfigError(
            "--ref needs the project's GitHub repository to reference the reusable workflow",
            where=matrix.project.span,
            key="project.repository",
            hint="add `repository: owner/name` under project:, or leave out --ref to call the "
            "reusable workflow from the same commit",
        )
    if not _REPOSITORY.match(repository):
        raise ConfigError(
            f"{repository!r} is not a GitHub repository like owner/name",
            where=matrix.project.at("repository"),
            key="project.repository",
        )
    return f"{repository}/{directory}/{BUILD_WORKFLOW}@{ref}"


def pr_paths(
    matrix: Matrix, matrix_rel: str, out_rel: str | None, templates_rel: str | None
) -> tuple[str, ...]:
    """What a pull request must touch to build: the matrix, the templates, the generated
    workflows and the build scripts the matrix names."""
    paths = [matrix_rel]
    if templates_rel:
        paths.append(f"{templates_rel}/**")
    if out_rel:
        paths.append(f"{out_rel}/relforge-*.yml")
    build = matrix.project.build
    for arg in (*build.command, *build.archive_command):
        if not _looks_like_script(arg):
            continue
        if build.source:  # commands run in the source tree, named relative to the matrix
            arg = posixpath.normpath(
                posixpath.join(posixpath.dirname(matrix_rel), build.source, arg)
            )
        if arg not in paths and not arg.startswith("../"):
            paths.append(arg)
    return tuple(paths)


def _looks_like_script(arg: str) -> bool:
    if arg.startswith(("-", "/", "$", "~")) or any(c in arg for c in " *?[]{}\"'"):
        return False
    return "/" in arg or arg.endswith(_SCRIPT_SUFFIXES)


def channel_cells(
    matrix: Matrix, release: Release, cells: Sequence[Cell], limit: int = MAX_MATRIX_JOBS
) -> list[ValidateJobs]:
    """Per channel, the cells with their index URL, sharded into job matrices."""
    out = []
    for channel in CHANNEL_NAMES:
        stamped = [on_channel(c, matrix, release, channel, _ANY_DAY) for c in cells]
        out.append(
            ValidateJobs(
                name=channel,
                shards=shards(stamped, channel, limit, lambda c: matrix_entry(c, "index_url")),
            )
        )
    return out
