"""Small edits of a built wheel: add Requires-Dist lines to its METADATA (RECORD updated).

The wheel is rewritten into a temporary file that replaces it, so a failure never leaves half a
wheel behind; every member but METADATA and RECORD keeps its compressed bytes (relforge.zipcopy:
a CUDA extension's wheel of hundreds of MB is not inflated and deflated again).
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from relforge.atomic import replacing
from relforge.wheelformat import (
    METADATA,
    WheelError,
    metadata_headers,
    parse_headers,
    read_info_file,
)
from relforge.wheelversion import new_record
from relforge.zipcopy import rewrite_zip


def requires_dist(wheel: Path) -> list[str]:
    """The Requires-Dist lines of the wheel's METADATA."""
    return metadata_headers(wheel).get_all("Requires-Dist") or []


def add_requires_dist(wheel: Path, requirements: Sequence[str]) -> list[str]:
    """Declare `requirements` in the wheel's METADATA; returns those that were not there yet."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            info_dir, data = read_info_file(zf, wheel.name, METADATA)
            headers, problems = parse_headers(data, f"{info_dir}/{METADATA}")
            if problems:  # rewriting it would change bytes nobody declared
                raise WheelError(f"{wheel.name}: {problems[0]}")
            metadata = data.decode("utf-8")
            have = {str(Requirement(r)) for r in headers.get_all("Requires-Dist") or []}
            added = [r for r in requirements if str(Requirement(r)) not in have]
            if not added:
                return []
            new_metadata = _with_headers(metadata, [f"Requires-Dist: {r}" for r in added])
            record_name = f"{info_dir}/RECORD"
            record = zf.read(record_name).decode("utf-8")
        _rewrite(wheel, record, record_name, {f"{info_dir}/{METADATA}": new_metadata.encode()})
    except (zipfile.BadZipFile, KeyError, UnicodeDecodeError, InvalidRequirement) as exc:
        raise WheelError(f"{wheel.name}: {exc}") from None
    return added


def _with_headers(metadata: str, lines: list[str]) -> str:
    """Append header lines at the end of the header block (before the description body)."""
    head, sep, body = metadata.partition("\n\n")
    return head.rstrip("\n") + "\n" + "\n".join(lines) + "\n" + (sep[1:] + body if sep else "")


def _rewrite(wheel: Path, record: str, record_name: str, changed: dict[str, bytes]) -> None:
    changed = {**changed}
    changed[record_name] = new_record(record, str, changed, record_name).encode("utf-8")
    with replacing(wheel) as tmp:
        rewrite_zip(wheel, tmp, rename=str, replace=changed)
