"""Every module that defines validation checks, listed once: importing this module registers
them all, and whatever runs or lists checks (`relforge validate`, `wheel inspect`, the
reference pages) takes `CHECKS` and `check_artifact` from here, never from a module that may
not have imported them all.  A module that defines a check and is missing from
`CHECK_MODULES` fails tests/unit/test_check_list.py.

The order of the imports is the order of the verdicts: wheelchecks.py's own first, then the others
(libraries before abi, which uses it), the native archive's last.
"""

from __future__ import annotations

from types import ModuleType

from relforge.validate import wheelchecks

# isort: split
from relforge.validate import libraries

# isort: split
from relforge.validate import (
    abi,
    devicechecks,
    limitedapi,
    members,
    platformchecks,
    versionattr,
)

# isort: split
from relforge.validate import archivechecks
from relforge.validate.checkregistry import CHECKS, Expectation, check_artifact

__all__ = ["CHECKS", "CHECK_MODULES", "Expectation", "check_artifact"]

CHECK_MODULES: tuple[ModuleType, ...] = (
    wheelchecks,
    libraries,
    abi,
    devicechecks,
    limitedapi,
    members,
    platformchecks,
    versionattr,
    archivechecks,
)
