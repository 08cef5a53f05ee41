"""Stand-ins for a build tool and a reporter, for tests that run the build executor without a
compiler (tests/unit/test_build_cache.py, test_repair_policies.py): the builder writes the
cell's wheel itself, named with the cell's tags, with a valid RECORD; the reporter is silent."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from relforge.builders.backends.base import BuilderName, BuildJob
from relforge.builders.executor import CellResult
from relforge.matrix.cell import Cell


def write_wheel(path: Path) -> Path:
    """A wheel with no binaries at `path`, its WHEEL tag and RECORD from the file's name."""
    name, version, *tags = path.name.removesuffix(".whl").split("-")
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": b"x = 1\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": (
            f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {'-'.join(tags)}\n".encode()
        ),
    }
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for member, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        writer.writerow([member, f"sha256={digest}", len(data)])
    writer.writerow([f"{info}/RECORD", "", ""])
    with zipfile.ZipFile(path, "w") as zf:
        for member, data in files.items():
            zf.writestr(member, data)
        zf.writestr(f"{info}/RECORD", record.getvalue())
    return path


class RecordingBuilder:
    """Builds on any OS by writing the cell's wheel itself (no repair runs); keeps each job."""

    name: BuilderName = "host"

    def __init__(self) -> None:
        self.jobs: list[BuildJob] = []

    def check(self, cells: Sequence[Cell]) -> None:
        pass

    def unsatisfied(self, cell: Cell) -> str | None:
        return None

    def identity(self, cell: Cell) -> Mapping[str, str]:
        return {"host": "test"}

    def build(self, job: BuildJob) -> None:
        self.jobs.append(job)
        cell = job.cell
        tags = f"{cell.python_tag}-{cell.abi_tag}-{cell.platform_tag}"
        write_wheel(job.out / f"demo-{cell.version}-{tags}.whl")


class Quiet:
    """A reporter that says nothing."""

    def started(self, cell: Cell, builder: str) -> None:
        pass

    def phase(self, cell: Cell, name: str) -> None:
        pass

    def finished(self, result: CellResult) -> None:
        pass
