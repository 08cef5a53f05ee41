"""pip's resolver for another machine: `pip install --dry-run --ignore-installed --report` with
a cell's `--platform/--python-version/--abi`, against one index only (`--isolated`, no
configured extra sources, no PIP_* variables).  Returns what pip would install, or the names
pip could not find.
"""

from __future__ import annotations

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

from relforge.deps.targets import Target
from relforge.errors import EnvironmentFault

TIMEOUT = 600  # seconds for one resolution
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


def pip_resolve(target: Target, requirements: Sequence[str], index_url: str) -> Resolution:
    """Resolve `requirements` (requirement strings or wheel paths) for the target from
    `index_url` alone."""
    with tempfile.TemporaryDirectory(prefix="relforge-resolve-") as tmp:
        report = Path(tmp) / "report.json"
        argv = [sys.executable, "-m", "pip", "--isolated", "--disable-pip-version-check"]
        argv += ["install", "--dry-run", "--ignore-installed", "--quiet", "--no-cache-dir"]
        argv += ["--report", str(report), "--index-url", index_url, *target.pip_options()]
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
                f"pip did not resolve {target.cell.id} from {redact(index_url)} within {TIMEOUT} s",
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
        hashes = info.get("archive_info", {}).get("hashes", {})
        meta = item.get("metadata", {})
        out.append(
            Resolved(
                name=str(canonicalize_name(meta.get("name", ""))),
                version=str(meta.get("version", "")),
                url=str(info.get("url", "")),
                sha256=hashes.get("sha256"),
                direct=bool(item.get("is_direct")),
            )
        )
    return Resolution(ok=True, installs=tuple(out))
