"""Process control of a build: how a cell fails or is skipped (failures), running one
command into the cell's log under a deadline (process), stopping every build on an interrupt
(cancel), and the one line of a failed log that says why (logtail).

The other rooms of relforge.builders import this one by this front door only.
"""

from relforge.builders.control.cancel import cancel_all, cancellable
from relforge.builders.control.failures import BuildFailure, CellSkipped
from relforge.builders.control.logtail import error_line
from relforge.builders.control.process import run_logged

__all__ = ["BuildFailure", "CellSkipped", "cancel_all", "cancellable", "error_line", "run_logged"]
