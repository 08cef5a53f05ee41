"""Validation: a release's artifacts checked against the cells of the matrix that expect them.

Entry points: `validate_release(ReleaseRequest)` (relforge.validate.release) reads the
artifacts from a directory, an artifact manifest or an index, runs every check and writes the
verdicts back into the manifest; `validate_artifacts` (relforge.validate.run) checks given
artifacts against given cells.
"""
