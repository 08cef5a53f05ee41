"""Generated CI: GitHub Actions workflows rendered from the matrix, and their staleness check.

Entry points: `render_workflows(RenderRequest)` renders one release's set in memory;
`check_dir` / `write_dir` (relforge.workflows.files) compare it with, or write it to, a directory.
"""

from relforge.workflows.files import Drift, WriteReport, check_dir, write_dir
from relforge.workflows.render import RenderRequest, WorkflowSet, render_workflows

__all__ = [
    "Drift",
    "RenderRequest",
    "WorkflowSet",
    "WriteReport",
    "check_dir",
    "render_workflows",
    "write_dir",
]
