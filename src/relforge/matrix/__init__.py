"""The build matrix: the YAML file, its schema, and the cells it expands to.

Entry points: `load_matrix` (relforge.matrix.load) reads and checks a file; `expand_cells` and
`candidates` (relforge.matrix.expand) give a release's cells (and why each is in or out),
`stamped_cells` those of a channel or of local `dev` builds (`AnyChannel`);
`explain_cell` (relforge.matrix.explain), `lint_matrix` (relforge.matrix.lint; `lint_report`
in relforge.matrix.lintreport gives its `LintReport` for the command),
`diff_releases` (relforge.matrix.diff) and `render_docs` (relforge.matrix.docs) answer
`relforge matrix explain/lint/diff/docs`; `parse_selector` (relforge.matrix.selector) reads
`--select`.  Every other stage imports from here, so this package imports no stage.
"""

from __future__ import annotations

from relforge.matrix.cell import Cell
from relforge.matrix.describe import newest_release
from relforge.matrix.diff import diff_releases, render_markdown
from relforge.matrix.docs import render_docs, with_download_url
from relforge.matrix.expand import AnyChannel, candidates, expand_cells, stamped_cells
from relforge.matrix.explain import explain_cell
from relforge.matrix.lint import RULES, lint_matrix
from relforge.matrix.lintreport import LintReport, lint_report
from relforge.matrix.load import load_matrix, read_text
from relforge.matrix.schema import CHANNEL_NAMES, ChannelName, Matrix
from relforge.matrix.selector import Selector, parse_selector
from relforge.matrix.values import PythonVersion, base_url_problem

__all__ = [
    "CHANNEL_NAMES",
    "RULES",
    "AnyChannel",
    "Cell",
    "ChannelName",
    "LintReport",
    "Matrix",
    "PythonVersion",
    "Selector",
    "base_url_problem",
    "candidates",
    "diff_releases",
    "expand_cells",
    "explain_cell",
    "lint_matrix",
    "lint_report",
    "load_matrix",
    "newest_release",
    "parse_selector",
    "read_text",
    "render_docs",
    "render_markdown",
    "stamped_cells",
    "with_download_url",
]
