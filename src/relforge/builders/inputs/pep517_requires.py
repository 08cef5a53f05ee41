"""A script relforge runs with a build's interpreter, in the source tree (never imported): ask
the project's PEP 517 backend what else it needs to build a wheel (get_requires_for_build_wheel,
e.g. scikit-build-core's `cmake>=3.27` when the machine's cmake is older) and write those the
environment does not meet, one per line.

    python pep517_requires.py SPEC.json OUT.txt

SPEC.json holds {"backend": "module:object", "backend_path": [...]}.  Installed distributions
are judged with `packaging` (pip's own copy when there is no other); a requirement that cannot
be judged counts as unmet.  Any Python 3.8+ runs it: it may be an image's own interpreter.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any


def _requirement_type() -> Any:
    for module in ("packaging.requirements", "pip._vendor.packaging.requirements"):
        try:  # pip's own copy of packaging, when the environment has no other
            return importlib.import_module(module).Requirement
        except ImportError:
            continue
    return None


def met(text: str) -> bool:
    """Whether the environment has a distribution that satisfies the requirement `text`."""
    from importlib import metadata

    requirement_type = _requirement_type()
    if requirement_type is None:
        return False
    try:
        requirement = requirement_type(text)
    except Exception:  # an invalid requirement: pip will say what is wrong with it
        return False
    if requirement.marker is not None and not requirement.marker.evaluate():
        return True
    try:
        version = metadata.version(requirement.name)
    except metadata.PackageNotFoundError:
        return False
    return bool(requirement.specifier.contains(version, prereleases=True))


def load_backend(spec: dict[str, Any]) -> Any:
    """The backend object named `module:object`, with its in-tree folders on sys.path."""
    sys.path[:0] = [str(Path(p).resolve()) for p in spec.get("backend_path", [])]
    module, _, attrs = str(spec["backend"]).partition(":")
    backend: Any = importlib.import_module(module)
    for attr in filter(None, attrs.split(".")):
        backend = getattr(backend, attr)
    return backend


def main(argv: list[str]) -> int:
    here = Path(__file__).resolve().parent
    if sys.path and Path(sys.path[0] or ".").resolve() == here:
        del sys.path[0]  # this script's folder is no place for the backend's imports
    spec_path, out_path = argv[1], argv[2]
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    hook = getattr(load_backend(spec), "get_requires_for_build_wheel", None)
    asked = [str(r) for r in hook()] if hook is not None else []
    unmet = [r for r in asked if not met(r)]
    sys.stderr.write(
        "build requirements the backend adds: "
        + (", ".join(asked) or "none")
        + (f" (not installed: {', '.join(unmet)})" if unmet else "")
        + "\n"
    )
    Path(out_path).write_text("".join(r + "\n" for r in unmet), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
