"""pip's resolver for another machine: `pip install --dry-run --ignore-installed --report` with
a cell's `--platform/--python-version/--abi`, against one index only (`--isolated`, no
configured extra sources, no PIP_* variables).  Returns what pip would install, or the names
pip could not find.

pip versions: `--dry-run` and `--report` came in pip 22.2 (report format 0; 1 since 23.0, which
added `archive_info.hashes` beside the older `hash`); pip accepts `--platform` and the other
target options with `--dry-run` alone only since 23.3, and before that with `--target`, so a
throwaway `--target` (never written: a dry run) is passed.  pip older than 22.2 is refused
with the version it needs.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from relforge.deps.targets import Target
from relforge.errors import EnvironmentFault

TIMEOUT = 600  # seconds for one resolution
PIP_NEEDED = Version("22.2")  # `pip install --dry-run --report`
RESOLVERS = 4  # pip processes at once (a resolution mostly waits on the index)
# pip's message for a requirement no link satisfies ("… found for rfdep-c (from rfdep-b)")
_MISSING = re.compile(r"No matching distribution found for ([A-Za-z0-9._-]+)")


@dataclass(frozen=True, kw_only=True)
class Resolved:
    """One distribution pip would install: its name, version and where it comes from."""

    name: str  # canonical
    version: str
    url: str
    sha256: str | None  # from the index link (#sha256=… or the JSON hashes); None if none
    direct: bool  # given by path/URL on the command line (our own wheel)

    @property
    def filename(self) -> str:
        return unquote(urlsplit(self.url).path.rsplit("/", 1)[-1])


@dataclass(frozen=True, kw_only=True)
class Resolution:
    ok: bool
    installs: tuple[Resolved, ...] = ()
    missing: tuple[str, ...] = ()  # canonical names pip found no distribution for
    error: str = ""  # pip's last ERROR lines when it failed
    tampered: bool = False  # pip found bytes that do not match the index's hash


def redact(url: str) -> str:
    """A URL without user:password@ (for output and records)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def reachable(index_url: str) -> None:
    """Raise EnvironmentFault (exit 6) when the index cannot be reached at all, so that pip's
    "no matching distribution" is never mistaken for a missing dependency."""
    try:
        with urllib.request.urlopen(index_url, timeout=30):
            pass
    except urllib.error.HTTPError:
        pass  # it answered: reachable (some indexes serve no root page)
    except (OSError, ValueError) as exc:
        raise EnvironmentFault(
            f"cannot reach {redact(index_url)}: {getattr(exc, 'reason', exc)}",
            hint="check the URL and the network; nothing was written",
        ) from None


def check_pip() -> str:
    """The version of the pip relforge resolves with (its own interpreter's); an
    EnvironmentFault (exit 6) naming the version needed when it is missing or too old."""
    upgrade = f"{sys.executable} -m pip install --upgrade 'pip>={PIP_NEEDED}'"
    try:
        found = importlib.metadata.version("pip")
    except importlib.metadata.PackageNotFoundError:
        raise EnvironmentFault(
            f"{sys.executable} has no pip; resolving a cell's dependencies needs pip "
            f"{PIP_NEEDED} or newer",
            hint=f"install it: {sys.executable} -m ensurepip, then {upgrade}",
        ) from None
    try:
        too_old = Version(found) < PIP_NEEDED
    except InvalidVersion:
        too_old = False  # a development build: let pip itself say
    if too_old:
        raise EnvironmentFault(
            f"pip {found} (of {sys.executable}) cannot resolve for another platform: it has "
            f"no `install --dry-run --report`, which came in pip {PIP_NEEDED}",
            hint=f"upgrade it: {upgrade}",
        )
    return found


def pip_resolve(target: Target, requirements: Sequence[str], index_url: str) -> Resolution:
    """Resolve `requirements` (requirement strings or wheel paths) for the target from
    `index_url` alone."""
    check_pip()
    with tempfile.TemporaryDirectory(prefix="relforge-resolve-") as tmp:
        report = Path(tmp) / "report.json"
        argv = [sys.executable, "-m", "pip", "--isolated", "--disable-pip-version-check"]
        argv += ["install", "--dry-run", "--ignore-installed", "--quiet", "--no-cache-dir"]
        argv += ["--report", str(report), "--index-url", index_url, *target.pip_options()]
        # pip < 23.3 takes --platform/--abi/--python-version only with --target; a dry run
        # never writes there
        argv += ["--target", str(Path(tmp) / "target")]
        argv += ["--retries", "2", "--timeout", "30"]
        parts = urlsplit(index_url)
        if parts.scheme == "http" and parts.hostname:  # the URL given is the trust decision
            argv += ["--trusted-host", parts.hostname]
        argv += ["--", *requirements]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        env["PIP_NO_INPUT"] = "1"
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, env=env, timeout=TIMEOUT, check=False
            )
        except subprocess.TimeoutExpired:
            raise EnvironmentFault(
                f"pip did not resolve {target.label} from {redact(index_url)} within {TIMEOUT} s",
                hint="is the index reachable?",
            ) from None
        except OSError as exc:
            raise EnvironmentFault(f"cannot run pip: {exc}") from None
        if done.returncode != 0:
            text = done.stderr + done.stdout
            if "No module named pip" in text:
                raise EnvironmentFault(
                    f"{sys.executable} has no pip", hint="install relforge where pip is"
                )
            tampered = "DO NOT MATCH THE HASHES" in text
            missing = sorted({str(canonicalize_name(m)) for m in _MISSING.findall(text)})
            errors = [ln for ln in text.splitlines() if ln.startswith("ERROR")]
            return Resolution(
                ok=False,
                missing=tuple(missing),
                error="\n".join(errors[-3:]),
                tampered=tampered,
            )
        data = json.loads(report.read_text(encoding="utf-8"))
    out = []
    for item in data.get("install", []):
        info = item.get("download_info", {})
        meta = item.get("metadata", {})
        out.append(
            Resolved(
                name=str(canonicalize_name(meta.get("name", ""))),
                version=str(meta.get("version", "")),
                url=str(info.get("url", "")),
                sha256=_sha256(info.get("archive_info", {})),
                direct=bool(item.get("is_direct")),
            )
        )
    return Resolution(ok=True, installs=tuple(out))


def _sha256(archive_info: dict[str, object]) -> str | None:
    """The sha256 of a report item: `hashes` (pip 23.0+) or the older `hash: "sha256=…"`."""
    hashes = archive_info.get("hashes")
    if isinstance(hashes, dict) and isinstance(hashes.get("sha256"), str):
        return str(hashes["sha256"])
    algorithm, _, value = str(archive_info.get("hash", "")).partition("=")
    return (value or None) if algorithm == "sha256" else None
