"""Validation: every artifact of a release checked against its cell before it is published.

Entry points: `validate_artifacts` (relforge.validate.run) binds files to cells and runs the
static, release-wide and (when asked) runtime checks; `inspect_wheel` (relforge.validate.inspect)
checks one wheel against itself; `fetch_from_index` (relforge.validate.fetch) reads a release's
files from a PEP 503 index; the checks register in relforge.validate.registry and report in
relforge.validate.report.
"""
