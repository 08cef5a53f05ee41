"""`relforge init`: a starter matrix for the project in a directory.

Entry points: `read_project(root, name)` (relforge.init.project) reads the project's name,
Python range, version (version.txt, pyproject.toml, setuptools' dynamic version, setup.py,
setup.cfg, git tags: relforge.init.projectversion)
and how it builds (import name, abi3, torch/numpy:
relforge.init.features), statically, never running its code; `plan_starter(request)`
(relforge.init.starter), given a `StarterRequest` (the facts, the path, the root), decides
with what this machine has (nvcc, torch wheels: relforge.init.machine, relforge.init.choices),
renders the starter matrix (relforge.init.startermatrix) and checks it with the strict loader
and the lint rules;
`write_starter(starter, force=…)` writes it, refusing to replace an existing file;
`default_path(facts)` is where it goes by default.
"""

from relforge.init.project import ProjectFacts, read_project
from relforge.init.starter import (
    Starter,
    StarterRequest,
    default_path,
    plan_starter,
    write_starter,
)

__all__ = [
    "ProjectFacts",
    "Starter",
    "StarterRequest",
    "default_path",
    "plan_starter",
    "read_project",
    "write_starter",
]
