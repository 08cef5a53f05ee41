"""Where a release commit keeps its relforge matrix: `matrix.yaml` at the root or the one
YAML file in `matrix/` (a file two levels down, or a matrix.yaml elsewhere, is not one)."""

from __future__ import annotations

from collections.abc import Iterable

from relforge.git import Git

MATRIX_PLACES = ("matrix.yaml", "matrix")


def matrix_files(paths: Iterable[str]) -> list[str]:
    """The paths among `paths` that sit where a matrix is looked for."""
    return sorted(
        p
        for p in paths
        if p == "matrix.yaml"
        or (p.startswith("matrix/") and p.count("/") == 1 and p.endswith((".yaml", ".yml")))
    )


def committed_matrices(git: Git, commit: str) -> list[str]:
    """The matrix files of `commit`'s tree."""
    return matrix_files(git.list_files(commit, *MATRIX_PLACES))
