"""The check before the first PyPI upload (and before staging): every file and the release's
total against PyPI's limits and upload checks (relforge.promote.pypi.refusals), the project's
current usage read from the index (relforge.promote.pypi.usage) — one refusal lists every
problem, and nothing is uploaded or staged.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from pathlib import Path

from relforge.promote.pypi.age import age_hint, age_problems
from relforge.promote.pypi.refusals import (
    MIB,
    Limits,
    Usage,
    file_problems,
    refuse,
    release_problems,
)
from relforge.promote.pypi.stage import public_url
from relforge.promote.pypi.usage import project_usage
from relforge.wheelformat import WheelName

NOT_CONFIGURED = (
    "publishing.pypi_repository_url is not set, so its index was not asked; set it to have "
    "the usage read"
)


def preflight(
    files: Sequence[Path],
    limits: Limits,
    index_url: str | None,
    echo: Callable[[str], None],
    *,
    nothing: str,
    now: datetime.datetime | None = None,
) -> None:
    """Refuse (RefusedError naming every problem; nothing was `nothing`) the release `files`
    when PyPI or twine would refuse any of them — files added to a release the index has had
    for 14 days or more included (`now`: the clock, default the current time); says what it
    checked."""
    if not files:
        return
    project = WheelName.parse(files[0].name).distribution
    where = public_url(index_url) if index_url else "the index"
    usage = (
        project_usage(index_url, project)
        if index_url
        else Usage(total=None, files=frozenset(), note=NOT_CONFIGURED)
    )
    sizes = [(path.name, path.stat().st_size) for path in files]
    problems = release_problems(sizes, limits, usage, where)
    for path in files:
        problems += file_problems(path)
    new = [name for name, _ in sizes if name not in usage.files]
    aged, unknown = age_problems(
        new, usage.files, usage.uploaded, now or datetime.datetime.now(datetime.timezone.utc), where
    )
    problems += aged
    adds = sum(size for name, size in sizes if name not in usage.files)
    used = (
        f"(the project's usage on {where} unknown)"
        if usage.total is None
        else f"to the {usage.total / MIB:.1f} MiB the project uses on {where}"
    )
    echo(
        f"PyPI pre-flight: {len(files)} file(s) (largest {max(s for _, s in sizes) / MIB:.1f} "
        f"MiB of {limits.file_mb} MiB per file); the release adds {adds / MIB:.1f} MiB {used}; "
        f"quota {limits.project_mb} MiB"
    )
    if usage.total is None:
        echo(
            f"  note: the project's current usage is unknown ({usage.note}); only this release "
            "was checked against the quota"
        )
    for note in unknown:
        echo(f"  note: {note}")
    refuse(problems, nothing, also=age_hint(problems))
