"""Builds: the cells of one release built in Docker or on the host, each into a wheel or archive.

Entry points: `plan_build` (relforge.builders.buildplan), given a `BuildRequest`,
selects the cells and stamps their versions;
`assign_builders` (relforge.builders.backends.choice) picks Docker or the host per cell; `run_build`
(relforge.builders.executor) builds them in parallel and `write_manifest`
(relforge.builders.manifestfile) records the artifacts (a `WrittenManifest`); the reporters,
the tables and `failure_report` (relforge.builders.progress) show a run; `make_builder_image`
(relforge.builders.images.baseimage) and `make_python_image`
(relforge.builders.images.pyimage) make local builder images.  The Docker SDK and its kin load only
when a build runs (inside the functions that need them), so importing this front door is cheap.
"""

from __future__ import annotations

from relforge.builders.backends import (
    BUILDER_CHOICES,
    Assignment,
    BuilderChoice,
    BuilderOptions,
    assign_builders,
)
from relforge.builders.buildplan import BuildPlan, BuildRequest, plan_build
from relforge.builders.executor import CellResult, run_build
from relforge.builders.images import (
    BUILD_REQUIREMENTS,
    PULL_POLICIES,
    ImageSpec,
    PullPolicy,
    PythonImageSpec,
    base_spec,
    make_builder_image,
    make_python_image,
)
from relforge.builders.manifestfile import WrittenManifest, write_manifest
from relforge.builders.progress import (
    LineReporter,
    LiveReporter,
    failure_report,
    results_json,
    shown,
    summary_markdown,
    summary_table,
)
from relforge.builders.version import BUILD_CHANNELS, BuildChannel, release_refused

__all__ = [
    "BUILDER_CHOICES",
    "BUILD_CHANNELS",
    "BUILD_REQUIREMENTS",
    "PULL_POLICIES",
    "Assignment",
    "BuildChannel",
    "BuildPlan",
    "BuildRequest",
    "BuilderChoice",
    "BuilderOptions",
    "CellResult",
    "ImageSpec",
    "LineReporter",
    "LiveReporter",
    "PullPolicy",
    "PythonImageSpec",
    "WrittenManifest",
    "assign_builders",
    "base_spec",
    "failure_report",
    "make_builder_image",
    "make_python_image",
    "plan_build",
    "release_refused",
    "results_json",
    "run_build",
    "shown",
    "summary_markdown",
    "summary_table",
    "write_manifest",
]
