"""`relforge init`: a starter matrix for the project in a directory.

Entry points: `read_project(root, name)` (relforge.init.project) reads the project's name,
Python range and version from pyproject.toml and version.txt; `plan_starter(facts, path, root=…)`
(relforge.init.starter) renders the starter matrix and checks it with the strict loader;
`write_starter(starter, force=…)` writes it, refusing to replace an existing file;
`default_path(facts)` is where it goes by default.
"""

from relforge.init.project import ProjectFacts, read_project
from relforge.init.starter import Starter, default_path, plan_starter, write_starter

__all__ = [
    "ProjectFacts",
    "Starter",
    "default_path",
    "plan_starter",
    "read_project",
    "write_starter",
]
