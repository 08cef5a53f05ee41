"""A script relforge runs with a build's interpreter (never imported): the linker commands of
that interpreter without the search paths of the machine it was built on.

An interpreter configured with `--enable-shared` and an rpath (pyenv's, and the copies relforge
puts into its builder image) carries `-Wl,-rpath,<prefix>/lib` in LDSHARED, so every
setuptools extension it links gets a RUNPATH into that prefix, which validation rightly fails
(RF-V043).  Extensions never link libpython on Linux, so the entry is never needed.  This prints
LDSHARED and LDCXXSHARED with every rpath entry that is not `$ORIGIN`-relative removed (a `CC`
or `CXX` from the environment replaces the compiler, as setuptools itself would), only for those
that change and that the environment does not set already:

    python link_env.py          JSON object, for the host builder
    python link_env.py --shell  `export NAME='value'` lines, for in_container.sh
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import sysconfig

_RPATH = ("-rpath", "--rpath", "-R")
_ORIGIN = ("$ORIGIN", "${ORIGIN}")
_LINKERS = (("LDSHARED", "CC"), ("LDCXXSHARED", "CXX"))


def without_rpath(command: str) -> str:
    """`command` without its non-$ORIGIN `-Wl,-rpath,DIR` / `-Wl,-rpath=DIR` / `-Wl,-R…`."""
    out = []
    for token in shlex.split(command):
        if not token.startswith("-Wl,"):
            out.append(token)
            continue
        kept: list[str] = []
        parts = token[4:].split(",")
        i = 0
        while i < len(parts):
            part = parts[i]
            if part in _RPATH and i + 1 < len(parts):
                if parts[i + 1].startswith(_ORIGIN):
                    kept += parts[i : i + 2]
                i += 2
                continue
            option, eq, value = part.partition("=")
            if eq and option in _RPATH[:2] and not value.startswith(_ORIGIN):
                i += 1
                continue
            if part.startswith("-R") and part != "-R" and not part[2:].startswith(_ORIGIN):
                i += 1
                continue
            kept.append(part)
            i += 1
        if kept:
            out.append("-Wl," + ",".join(kept))
    return " ".join(shlex.quote(t) for t in out)


def link_env(environ: dict[str, str]) -> dict[str, str]:
    """The variables to set: changed linker commands the environment does not set itself."""
    found = {}
    for name, compiler in _LINKERS:
        configured = sysconfig.get_config_var(name)
        if not isinstance(configured, str) or not configured or name in environ:
            continue
        fixed = without_rpath(configured)
        default_compiler = sysconfig.get_config_var(compiler)
        chosen = environ.get(compiler)
        if chosen and isinstance(default_compiler, str) and fixed.startswith(default_compiler):
            fixed = chosen + fixed[len(default_compiler) :]  # as setuptools does for CC/CXX
        if shlex.split(fixed) != shlex.split(configured):
            found[name] = fixed
    return found


def main(argv: list[str]) -> int:
    found = link_env(dict(os.environ))
    if argv[1:] == ["--shell"]:
        sys.stdout.write("".join(f"export {k}={shlex.quote(v)}\n" for k, v in found.items()))
    else:
        sys.stdout.write(json.dumps(found) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
