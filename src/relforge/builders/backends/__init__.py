"""Where a cell is built: the job and the Builder protocol every builder satisfies (base), in a
container of the cell's image (container) or on this machine (host), and the choice of one for
each cell (choice: the Docker builder is imported only when a cell is assigned to it).

The other rooms of relforge.builders import this one by this front door only.
"""

from relforge.builders.backends.base import (
    AXIS_WHEELS,
    CACHED,
    STAMPING,
    Builder,
    BuildJob,
    output_files,
)
from relforge.builders.backends.choice import (
    BUILDER_CHOICES,
    Assignment,
    BuilderChoice,
    BuilderOptions,
    assign_builders,
)

__all__ = [
    "AXIS_WHEELS",
    "BUILDER_CHOICES",
    "CACHED",
    "STAMPING",
    "Assignment",
    "BuildJob",
    "Builder",
    "BuilderChoice",
    "BuilderOptions",
    "assign_builders",
    "output_files",
]
