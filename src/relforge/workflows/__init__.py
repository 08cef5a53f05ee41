"""Generated CI: GitHub Actions workflows rendered from the matrix, and their staleness check.

Entry points: `render_workflows(RenderRequest)` renders one release's set in memory;
`check_dir` / `write_dir` (relforge.workflows.files) compare it with, or write it to, a
directory; `plan_config` (relforge.workflows.lintconfig) merges the runner labels into
`.github/actionlint.yaml` and `config_drift` reports how that file differs.
"""

from relforge.workflows.files import Drift, WriteReport, check_dir, config_drift, write_dir
from relforge.workflows.lintconfig import LintConfig, plan_config
from relforge.workflows.render import RenderRequest, WorkflowSet, render_workflows

__all__ = [
    "Drift",
    "LintConfig",
    "RenderRequest",
    "WorkflowSet",
    "WriteReport",
    "check_dir",
    "config_drift",
    "plan_config",
    "render_workflows",
    "write_dir",
]
