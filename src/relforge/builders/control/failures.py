"""How a cell's build ends when it produces nothing: it failed, or it cannot run here."""

from __future__ import annotations


class BuildFailure(Exception):
    """The cell's build failed; the message says why in one line (details are in the log)."""


class CellSkipped(Exception):
    """The builder cannot build this cell here (e.g. no nvcc); the message says why."""
