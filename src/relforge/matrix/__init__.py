"""The build matrix: the YAML file, its schema, and the cells it expands to.

Entry points: `load_matrix` (relforge.matrix.load) reads and checks a file; `expand_cells` and
`candidates` (relforge.matrix.expand) give a release's cells (and why each is in or out);
`explain_cell` (relforge.matrix.explain), `lint_matrix` (relforge.matrix.lint),
`diff_releases` (relforge.matrix.diff) and `render_docs` (relforge.matrix.docs) answer
`relforge matrix explain/lint/diff/docs`; `parse_selector` (relforge.matrix.selector) reads
`--select`.  Every other stage imports from here, so this package imports no stage.
"""
