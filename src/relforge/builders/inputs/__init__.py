"""What a build consumes: the project's build metadata (projectfile), its source tree and digest
(sourcetree), its build requirements gathered as a PEP 517 front end does (buildreqs, with the
scripts pep517_requires.py and link_env.py run by the build's interpreter), the wheels of its
dependency axes (depwheels), the venv of a host build (buildenv) and the accelerator toolchain
it needs (toolchains).

The other rooms of relforge.builders import this one by this front door only.
"""

from relforge.builders.inputs.buildenv import install_into, make_venv, requirements_layer
from relforge.builders.inputs.buildreqs import (
    backend_requirements,
    linker_env,
    merged,
    read_requirements,
    remember,
    remembered,
    static_requirements,
    write_control,
)
from relforge.builders.inputs.depwheels import (
    REQUIREMENTS,
    DependencyWheels,
    fetch_axis_wheels,
    fetch_build_wheels,
    pip_find_links_env,
)
from relforge.builders.inputs.projectfile import BuildSystem, build_system, versioneer_prefix
from relforge.builders.inputs.sourcetree import SourceTree, scan_source
from relforge.builders.inputs.toolchains import (
    MissingToolchain,
    Toolchain,
    find_toolchain,
    nvcc_version,
)

__all__ = [
    "REQUIREMENTS",
    "BuildSystem",
    "DependencyWheels",
    "MissingToolchain",
    "SourceTree",
    "Toolchain",
    "backend_requirements",
    "build_system",
    "fetch_axis_wheels",
    "fetch_build_wheels",
    "find_toolchain",
    "install_into",
    "linker_env",
    "make_venv",
    "merged",
    "nvcc_version",
    "pip_find_links_env",
    "read_requirements",
    "remember",
    "remembered",
    "requirements_layer",
    "scan_source",
    "static_requirements",
    "versioneer_prefix",
    "write_control",
]
