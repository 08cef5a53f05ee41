"""The artifact manifest: what was built for which cell, with hashes, build facts and verdicts.

One JSON file (`relforge-manifest.json`, schema_version 1) that travels between stages:
`relforge build` writes or merges entries (and notes the cells it skipped), `relforge validate`
adds verdicts, `relforge publish` and `promote` refuse files whose entry is not validated.
Artifact paths are relative to the manifest's directory.

    {"schema_version": 1, "project": "torch", "release": "2.9", "channel": "test",
     "entries": {"<cell id>": {"cell_id": …, "file": "dist/torch-2.9.0+cu128-….whl", "size": …,
                               "sha256": …, "version": …, "build": {…}, "verdicts": [...]}}}
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from relforge.atomic import replacing
from relforge.errors import ConfigError, Span, UsageError

SCHEMA_VERSION = 1
MANIFEST_NAME = "relforge-manifest.json"
VerdictStatus = Literal["pass", "fail", "skip", "warn"]  # warn: reported, never blocks


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """The outcome of one check (stable ID, e.g. RF-W001) on one artifact."""

    check: str
    status: VerdictStatus
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, kw_only=True)
class ProvenGpu:
    """A GPU a cell's kernel ran on in a validation (`relforge validate --runtime`, RF-R006)."""

    name: str  # NVIDIA H200
    sm: str  # sm_90

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, kw_only=True)
class ManifestEntry:
    cell_id: str
    file: str = field(metadata={"doc": "path relative to the manifest's directory"})
    size: int
    sha256: str
    version: str
    package_type: str
    variant: str
    upload_subfolder: str
    platform_tag: str | None = None
    python: str | None = None
    metadata_sha256: str | None = field(
        default=None,
        metadata={"doc": "sha256 of the wheel's own METADATA, served as the PEP 658 sidecar"},
    )
    metadata_size: int | None = None
    requires_python: str | None = field(
        default=None,
        metadata={"doc": "the METADATA's Requires-Python (recorded with metadata_sha256)"},
    )
    build: Mapping[str, Any] = field(
        default_factory=dict,
        metadata={
            "doc": "builder, image, seconds, log, cached, source_digest, relforge_version, …"
        },
    )
    verdicts: tuple[Verdict, ...] = ()
    proven_on: tuple[ProvenGpu, ...] = field(
        default=(),
        metadata={"doc": "GPUs the cell's GPU smoke ran a kernel on, over every validation"},
    )

    @property
    def validated(self) -> bool:
        """Passed at least one check, and no check failed (a skipped check checked nothing)."""
        return any(v.status == "pass" for v in self.verdicts) and not self.failed

    @property
    def failed(self) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if v.status == "fail")

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["build"] = dict(self.build)
        data["verdicts"] = [v.to_json() for v in self.verdicts]
        data["proven_on"] = [g.to_json() for g in self.proven_on]
        if not self.proven_on:  # the key appears once a kernel ran (older readers never saw it)
            del data["proven_on"]
        return data


@dataclass(frozen=True, kw_only=True)
class ArtifactManifest:
    project: str
    release: str
    channel: str
    entries: Mapping[str, ManifestEntry] = field(default_factory=dict)
    skipped: Mapping[str, str] = field(
        default_factory=dict,
        metadata={"doc": "cell id → why the build skipped it (no artifact; validate reports "
                  "it as skipped); the key appears only when a cell was skipped"},
    )  # fmt: skip
    schema_version: int = SCHEMA_VERSION

    def with_entries(self, entries: Iterable[ManifestEntry]) -> ArtifactManifest:
        """A copy where each given entry replaces the one of its cell (or is added)."""
        merged = dict(self.entries)
        for entry in entries:
            merged[entry.cell_id] = entry
        skipped = {k: v for k, v in self.skipped.items() if k not in merged}
        return dataclasses.replace(self, entries=merged, skipped=skipped)

    def with_skipped(self, reasons: Mapping[str, str]) -> ArtifactManifest:
        """A copy recording these cells as skipped by the build (their entries go)."""
        entries = {k: e for k, e in self.entries.items() if k not in reasons}
        return dataclasses.replace(self, entries=entries, skipped={**self.skipped, **reasons})

    def with_verdicts(self, cell_id: str, verdicts: Iterable[Verdict]) -> ArtifactManifest:
        """A copy whose entry for `cell_id` carries these verdicts (replacing same-ID ones)."""
        entry = self.entries[cell_id]
        fresh = list(verdicts)
        kept = [v for v in entry.verdicts if v.check not in {f.check for f in fresh}]
        return self.with_entries([dataclasses.replace(entry, verdicts=(*kept, *fresh))])

    def with_validation(
        self, cell_id: str, verdicts: Iterable[Verdict], proven: Iterable[ProvenGpu] = ()
    ) -> ArtifactManifest:
        """A copy whose entry for `cell_id` carries exactly the verdicts of its latest
        validation: every earlier verdict goes, whatever its kind (a runtime failure of an
        earlier run, e.g. a dependency its index lacked, never outlives a clean rerun).  The
        GPUs its kernels ran on add to those of earlier runs (other machines proved others)."""
        entry = self.entries[cell_id]
        ran = tuple(dict.fromkeys((*entry.proven_on, *proven)))
        return self.with_entries(
            [dataclasses.replace(entry, verdicts=tuple(verdicts), proven_on=ran)]
        )

    def merge(self, other: ArtifactManifest) -> ArtifactManifest:
        """Entries of `other` replace ours; both must describe the same project/release/channel."""
        for key in ("project", "release", "channel"):
            if getattr(self, key) != getattr(other, key):
                raise ConfigError(
                    f"cannot merge manifests of different {key}s: "
                    f"{getattr(self, key)!r} and {getattr(other, key)!r}"
                )
        return self.with_entries(other.entries.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "project": self.project,
            "release": self.release,
            "channel": self.channel,
            "entries": {k: e.to_json() for k, e in sorted(self.entries.items())},
            **({"skipped": dict(sorted(self.skipped.items()))} if self.skipped else {}),
        }

    def save(self, path: Path) -> None:
        """Write atomically: a reader never sees a half-written manifest."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with replacing(path) as tmp:
            tmp.write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")


def manifest_target(
    manifest: ArtifactManifest,
    path: Path,
    *,
    release: str | None,
    channel: str | None,
    matrix_file: str = "FILE",
) -> tuple[str, str]:
    """The release and channel a command works on for a manifest: the manifest's own when no
    `--release`/`--channel` is given; a given one that differs is a UsageError (exit 2) naming
    the manifest's and how to build for the other."""
    for key, given, own in (("--release", release, manifest.release),
                            ("--channel", channel, manifest.channel)):  # fmt: skip
        if given is not None and given != own:
            wanted_release = release or manifest.release
            wanted_channel = channel or manifest.channel
            raise UsageError(
                f"{path} is for release {manifest.release} on {manifest.channel}, not "
                f"{wanted_release} on {wanted_channel}",
                key=key,
                hint=f"drop {key} to take the manifest's ({own}), or build for {given}: "
                f"relforge build {matrix_file} --release {wanted_release} --channel "
                f"{wanted_channel}",
            )
    return manifest.release, manifest.channel


def load_manifest(path: Path) -> ArtifactManifest:
    """Read a manifest; any problem is a ConfigError naming the file and key."""
    where = Span(str(path))
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(
            "no such manifest", where=where, hint="`relforge build` writes relforge-manifest.json"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read the manifest: {exc}", where=where) from None
    return parse_manifest(data, str(path))


def parse_manifest(data: bytes, where: str) -> ArtifactManifest:
    """A manifest from its bytes; any problem is a ConfigError naming `where` and the key."""
    try:
        raw = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"cannot read the manifest: {exc}", where=Span(where)) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"not JSON: {exc.msg}", where=Span(where, exc.lineno, exc.colno)
        ) from None
    try:
        return _from_json(raw)
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"not a relforge manifest: {exc}", where=Span(where)) from None


_STRINGS = ("cell_id", "file", "sha256", "version", "package_type", "variant", "upload_subfolder")
_OPTIONAL_STRINGS = ("platform_tag", "python", "metadata_sha256", "requires_python")
_STATUSES = ("pass", "fail", "skip", "warn")


def _from_json(data: Any) -> ArtifactManifest:
    if not isinstance(data, dict):
        raise TypeError("top level is not an object")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(
            f"schema_version {data.get('schema_version')!r}, expected {SCHEMA_VERSION}"
        )
    for key in ("project", "release", "channel"):
        if not isinstance(data[key], str):
            raise TypeError(f"{key} is {data[key]!r}, not a string")
    if not isinstance(data["entries"], dict):
        raise TypeError(f"entries is {type(data['entries']).__name__}, not an object")
    entries = {}
    for cell_id, raw in data["entries"].items():
        entry = _entry(f"entries.{cell_id}", raw)
        if entry.cell_id != cell_id:
            raise ValueError(f"entries.{cell_id} has cell_id {entry.cell_id!r}")
        entries[cell_id] = entry
    skipped = data.get("skipped", {})
    if not isinstance(skipped, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in skipped.items()
    ):
        raise TypeError(f"skipped is {skipped!r}, not an object of cell id → reason")
    return ArtifactManifest(
        project=data["project"],
        release=data["release"],
        channel=data["channel"],
        entries=entries,
        skipped=skipped,
    )


def _entry(where: str, raw: Any) -> ManifestEntry:
    """One entry, each field checked for its type (a hand-edited file must not crash a stage)."""
    if not isinstance(raw, dict):
        raise TypeError(f"{where} is not an object")
    names = {f.name for f in dataclasses.fields(ManifestEntry)}
    unknown = set(raw) - names
    if unknown:
        raise KeyError(f"{where}: unknown keys {sorted(unknown)}")
    missing = [k for k in (*_STRINGS, "size") if k not in raw]
    if missing:
        raise KeyError(f"{where}: missing keys {missing}")
    for key in _STRINGS:
        if not isinstance(raw[key], str) or not raw[key]:
            raise TypeError(f"{where}.{key} is {raw[key]!r}, not a non-empty string")
    for key in _OPTIONAL_STRINGS:
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise TypeError(f"{where}.{key} is {raw[key]!r}, not a string")
    size = raw["size"]
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise TypeError(f"{where}.size is {size!r}, not a byte count")
    meta_size = raw.get("metadata_size")
    if meta_size is not None and (
        not isinstance(meta_size, int) or isinstance(meta_size, bool) or meta_size < 0
    ):
        raise TypeError(f"{where}.metadata_size is {meta_size!r}, not a byte count")
    if not isinstance(raw.get("build", {}), dict):
        raise TypeError(f"{where}.build is not an object")
    verdicts = raw.get("verdicts", [])
    if not isinstance(verdicts, list):
        raise TypeError(f"{where}.verdicts is not a list")
    for i, v in enumerate(verdicts):
        if (
            not isinstance(v, dict)
            or set(v) - {"check", "status", "message"}
            or not isinstance(v.get("check"), str)
            or v.get("status") not in _STATUSES
            or not isinstance(v.get("message", ""), str)
        ):
            raise TypeError(
                f"{where}.verdicts[{i}] is {v!r}, not {{check, status: pass|fail|skip, message}}"
            )
    proven = raw.get("proven_on", [])
    if not isinstance(proven, list) or not all(
        isinstance(g, dict)
        and set(g) == {"name", "sm"}
        and all(isinstance(x, str) and x for x in g.values())
        for g in proven
    ):
        raise TypeError(f"{where}.proven_on is {proven!r}, not a list of {{name, sm}}")
    return ManifestEntry(
        **{
            **raw,
            "verdicts": tuple(Verdict(**v) for v in verdicts),
            "proven_on": tuple(ProvenGpu(**g) for g in proven),
        }
    )


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()
