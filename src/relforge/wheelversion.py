"""A wheel under another version: its `.dist-info` and `.data` folders renamed, METADATA's
Version set, RECORD rewritten to match and the file renamed, while every other member keeps its
compressed bytes (relforge.zipcopy).  The builder stamps a wheel with its cell's version this
way, publishing drops the local version for PyPI, variants swap it for a label.
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relforge.errors import ConfigError, RefusedError
from relforge.manifest import sha256_file
from relforge.record import record_hash
from relforge.wheelformat import METADATA, RECORD, WheelName, dist_info_dir, record_rows
from relforge.zipcopy import rewrite_zip

_UNREADABLE = (
    zipfile.BadZipFile, KeyError, OSError, EOFError, RuntimeError, NotImplementedError,
    zlib.error, UnicodeDecodeError,
)  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Rewritten:
    path: Path
    source: Path
    sha256: str
    size: int
    changes: tuple[str, ...]
    written: bool  # False when an identical file was already there


@dataclass(frozen=True, kw_only=True)
class WheelInfo:
    """What a version rewrite reads of a wheel: its `.dist-info`, METADATA and RECORD."""

    names: tuple[str, ...]
    info_dir: str
    dist: str  # the distribution as the `.dist-info` folder spells it
    version: str  # the version as the `.dist-info` folder spells it
    metadata: str
    record: str

    @property
    def record_name(self) -> str:
        return f"{self.info_dir}/{RECORD}"

    def renamer(self, version: str) -> Callable[[str], str]:
        """Member name → its name in the wheel of `version`."""
        olds = [f"{self.dist}-{self.version}{suffix}" for suffix in (".dist-info/", ".data/")]

        def rename(member: str) -> str:
            for old in olds:
                if member.startswith(old):
                    suffix = old[len(self.dist) + len(self.version) + 1 :]
                    return f"{self.dist}-{version}{suffix}{member[len(old) :]}"
            return member

        return rename


def read_info(wheel: Path) -> WheelInfo:
    """The wheel's `.dist-info` facts; ConfigError when it is unreadable or its folder and file
    name disagree, RefusedError when it is signed (a rewrite would break the signature)."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            names = tuple(zf.namelist())
            info_dir = dist_info_dir(names, str(wheel))
            metadata = zf.read(f"{info_dir}/{METADATA}").decode("utf-8")
            record = zf.read(f"{info_dir}/{RECORD}").decode("utf-8")
    except _UNREADABLE as exc:
        raise ConfigError(f"{wheel}: not a readable wheel ({exc})") from None
    dist, _, version = info_dir.removesuffix(".dist-info").rpartition("-")
    if version != WheelName.parse(wheel.name).version:
        raise ConfigError(f"{wheel}: {info_dir} does not match the file name's version")
    if any(n.startswith(f"{info_dir}/{RECORD}.") for n in names):
        raise RefusedError(
            f"{wheel}: a signed wheel (RECORD.jws/RECORD.p7s) cannot be rewritten",
            hint="sign after the rewrite, not before",
        )
    return WheelInfo(
        names=names, info_dir=info_dir, dist=dist, version=version, metadata=metadata, record=record
    )


def metadata_with_version(text: str, version: str) -> str:
    """METADATA with its Version header set to `version` (the description body untouched)."""
    head, sep, body = text.partition("\n\n")
    lines = [
        f"Version: {version}" if line.lower().startswith("version:") else line
        for line in head.split("\n")
    ]
    return "\n".join(lines) + sep + body


def with_version(
    wheel: Path,
    target: Path,
    version: str,
    *,
    hint: str,
    metadata: Callable[[str], tuple[str, list[str]]] | None = None,
) -> Rewritten:
    """Write `wheel` as version `version` to `target` (`metadata` edits METADATA further and
    says what it changed); an identical file there is kept, another one refused."""
    info = read_info(wheel)
    rename = info.renamer(version)
    if metadata is None:
        new_metadata, changes = metadata_with_version(info.metadata, version), []
        if info.version != version:
            changes.append(f"Version: {info.version} → {version}")
    else:
        new_metadata, changes = metadata(info.metadata)
    if rename(f"{info.info_dir}/") != f"{info.info_dir}/":
        changes.insert(0, f"{info.info_dir} → {rename(info.info_dir + '/').rstrip('/')}")
    if target.name != wheel.name:
        changes.insert(0, f"{wheel.name} → {target.name}")
    replace = {f"{info.info_dir}/{METADATA}": new_metadata.encode("utf-8")}
    replace[info.record_name] = new_record(info.record, rename, replace, info.record_name).encode(
        "utf-8"
    )
    sha, size, written = write_rewritten(wheel, target, hint=hint, rename=rename, replace=replace)
    return Rewritten(
        path=target, source=wheel, sha256=sha, size=size, changes=tuple(changes), written=written
    )


def renamed(wheel_name: str, version: str) -> str:
    """The file name of the wheel `wheel_name` under `version`."""
    name = WheelName.parse(wheel_name)
    return WheelName(distribution=name.distribution, version=version, rest=name.rest).filename


def write_rewritten(
    wheel: Path, target: Path, *, hint: str, **rewrite: Any
) -> tuple[str, int, bool]:
    """Rewrite `wheel` (`rewrite_zip` with `rewrite`) into `target`: through a temporary file
    beside it, so no half-written wheel is ever visible; an existing target with the same bytes
    is kept, one with other bytes refused.  Returns (sha256, size, written)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        sha = rewrite_zip(wheel, tmp, **rewrite)
        size = tmp.stat().st_size
        written = not target.exists()
        if not written and sha256_file(target) != sha:
            raise RefusedError(
                f"{target} exists with different content; it was not overwritten", hint=hint
            )
        if written:
            tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    return sha, size, written


def new_record(
    record: str, rename: Callable[[str], str], replace: dict[str, bytes], record_name: str
) -> str:
    """RECORD with every path renamed and the replaced members' hashes and sizes."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in record_rows(record, record_name):
        if not row:
            continue
        path = row[0]
        if path == record_name:
            writer.writerow([rename(path), "", ""])
        elif path in replace:
            data = replace[path]
            writer.writerow([rename(path), record_hash(data), str(len(data))])
        else:
            writer.writerow([rename(path), *row[1:]])
    return out.getvalue()
