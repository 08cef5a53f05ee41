"""RF-R005: the installed module's `__version__` against the wheel's version.

relforge stamps the cell's version into the wheel's metadata, renaming the wheel when the build
wrote the project's own (relforge.builders.artifacts.stamping);
code that carries a version of its own
(`__version__ = "1.0.0"`, versioneer's `0+unknown` without git, a C++ macro) keeps it.  That is
worth a warning, not a failure: the wheel installs and runs, only what it reports about itself is
off.  A module without `__version__` (or one that reads importlib.metadata) is not judged.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from relforge.manifest import Verdict
from relforge.validate.checkregistry import register

VERSION_ATTRIBUTE = register("RF-R005", "version-attribute", "runtime",
                             "The installed module's __version__, when it has one, is the "
                             "wheel's version; a mismatch (0+unknown, the project's unstamped "
                             "version) is a warning.")  # fmt: skip
PROBE = (
    "import json, {module} as m\nprint(json.dumps(getattr(m, '__version__', None), default=str))\n"
)


def version_verdict(reported: object, wheel: Path, module: str) -> Verdict:
    """The verdict on `module.__version__ == reported` for the wheel file `wheel`."""
    try:
        built = parse_wheel_filename(wheel.name)[1]
    except InvalidWheelFilename:
        return VERSION_ATTRIBUTE.verdict("skip", f"{wheel.name} is not a wheel file name")
    if reported is None:
        return VERSION_ATTRIBUTE.verdict("skip", f"{module} has no __version__")
    text = str(reported)
    try:
        same = Version(text) == built
    except InvalidVersion:
        same = False
    if same:
        return VERSION_ATTRIBUTE.verdict("pass", f"{module}.__version__ is {text}")
    return VERSION_ATTRIBUTE.verdict(
        "warn",
        f"{module}.__version__ is {text!r}, the wheel is {built}: the code carries a version "
        "the build did not stamp (read it with importlib.metadata.version, or from "
        "$RELFORGE_VERSION at build time)",
    )


def check_version_attribute(
    run: Callable[[list[str]], tuple[int, str, str]], python: str, wheel: Path, module: str
) -> Verdict:
    """Ask the installed module (`run(argv)` → exit code, stdout, stderr) for __version__."""
    code, out, err = run([python, "-c", PROBE.format(module=module)])
    if code != 0:
        tail = " | ".join(err.strip().splitlines()[-3:])
        return VERSION_ATTRIBUTE.verdict("skip", f"import {module} failed: {tail}")
    try:
        reported = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return VERSION_ATTRIBUTE.verdict("skip", f"{module}.__version__ could not be read")
    return version_verdict(reported, wheel, module)
