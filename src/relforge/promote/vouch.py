"""What the manifests stored in a channel vouch for: object key → sha256 and size of the
artifact and of its PEP 658 sidecar.  The index takes every hash it advertises from here (or
from its own previous page for an object that did not change), never from unknown bytes.

Manifests are read lazily, one version folder at a time, each verified (digest against its
key, signature when keys are configured) and read once per run.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from relforge.deps.mirrorrecord import PREFIX as DEPS_PREFIX
from relforge.deps.mirrorrecord import read_record, record_key
from relforge.errors import RefusedError
from relforge.manifest import ManifestEntry
from relforge.promote.channel import MANIFESTS, StoredManifest, read_manifests
from relforge.promote.rootspec import RootSpec
from relforge.promote.yanked import read_yanked
from relforge.signing import SIGNATURE_SUFFIX, Trust
from relforge.stores.objectstore import ObjectStore


@dataclass(frozen=True, kw_only=True)
class Vouch:
    key: str
    sha256: str
    size: int
    metadata_sha256: str | None
    metadata_size: int | None
    requires_python: str | None
    manifest: str  # the key of the stored manifest that vouches
    cell: str = ""  # the matrix cell the manifest entry was built for
    release: str = ""  # the release of the manifest that vouches
    archive: bool = False  # a native archive (on no page; it counts towards a whole version)


class Vouchers:
    """The stored manifests of one project in one channel, as a lookup by object key.

    `prefix` is the channel's wheel prefix (`whl/test`): an entry vouches for
    `<prefix>/<upload_subfolder>/<file name>`.  Which versions are whole is judged from these,
    never held by them (relforge.promote.channelview)."""

    def __init__(
        self,
        store: ObjectStore,
        *,
        channel: str,
        project: str,
        prefix: str,
        trust: Trust,
        workers: int = 16,
        root: RootSpec | None = None,
        archive_prefix: str = "",
    ) -> None:
        self.store = store
        self.root = root  # the channel-root pages written after the variant pages
        self.channel = channel
        self.project = project
        self.prefix = prefix.strip("/")
        # where the channel's native archives are (`libtorch_prefix`; default: the wheels')
        self.archive_prefix = archive_prefix.strip("/") or self.prefix
        self.trust = trust
        self.workers = workers
        self._base = f"{MANIFESTS}/{channel}/{project}/"
        self._listed: dict[str, list[str]] | None = None
        self._present: set[str] = set()
        self._loaded: dict[str, dict[str, Vouch]] = {}
        self._dependencies: dict[str, dict[str, Vouch]] = {}
        self._yanked: dict[str, str] | None = None
        self._lock = threading.Lock()

    def fresh(self) -> Vouchers:
        """The same reading of the same channel, with nothing read yet (a plan's judgement must
        read the manifests after the plan stored its own)."""
        return Vouchers(
            self.store,
            channel=self.channel,
            project=self.project,
            prefix=self.prefix,
            trust=self.trust,
            workers=self.workers,
            root=self.root,
            archive_prefix=self.archive_prefix,
        )

    def yanked(self) -> dict[str, str]:
        """Object key → reason of the channel's yanked files (its yank record, read once)."""
        with self._lock:
            if self._yanked is None:
                self._yanked = read_yanked(self.store, self.channel)
            return self._yanked

    def _listing(self) -> dict[str, list[str]]:
        with self._lock:
            if self._listed is None:
                by_version: dict[str, list[str]] = defaultdict(list)
                for info in self.store.list(self._base):
                    version, _, name = info.key[len(self._base) :].partition("/")
                    self._present.add(info.key)
                    if name.endswith(".json") and "/" not in name:
                        by_version[_normal(version)].append(info.key)
                self._listed = {v: sorted(keys) for v, keys in by_version.items()}
            return self._listed

    def manifest_keys(self, versions: Iterable[str]) -> tuple[str, ...]:
        """The stored manifests of these versions (their keys name their digests): what a
        page built from them depends on."""
        listed = self._listing()
        return tuple(k for v in sorted(set(versions)) for k in listed.get(v, ()))

    def still_stored(self, manifest_key: str) -> bool:
        if manifest_key.startswith(DEPS_PREFIX + "/"):  # a dependency record vouched
            return bool(
                self.dependencies(manifest_key[len(DEPS_PREFIX) + 1 :].removesuffix(".json"))
            )
        self._listing()
        return manifest_key in self._present

    def lookup(self, versions: Iterable[str], *, archives: bool = False) -> dict[str, Vouch]:
        """key → what the manifests of these versions vouch for (their wheels; `archives`: their
        native archives too); two manifests vouching for one key with different bytes are
        refused."""
        self._listing()
        wanted = sorted(set(versions))
        todo = [v for v in wanted if v not in self._loaded]
        if todo:
            with ThreadPoolExecutor(max(1, min(self.workers, len(todo)))) as pool:
                for version, found in zip(todo, pool.map(self._load, todo), strict=True):
                    with self._lock:
                        self._loaded[version] = found
        out: dict[str, Vouch] = {}
        for version in wanted:
            for vouch in self._loaded[version].values():
                if archives or not vouch.archive:
                    _add(out, vouch, self.store.url)
        return out

    def for_folder(self, folder: str, versions: Iterable[str]) -> dict[str, Vouch]:
        """`lookup(versions)` plus the dependency wheels `relforge deps mirror` recorded for
        the folder; a key both vouch for with different bytes is refused."""
        out = dict(self.lookup(versions))
        for vouch in self.dependencies(folder).values():
            _add(out, vouch, self.store.url)
        return out

    def dependencies(self, folder: str) -> dict[str, Vouch]:
        """What the folder's dependency record (relforge/deps/<folder>.json) vouches for: the
        wheels `relforge deps mirror` copied, checked against the upstream's published hashes."""
        folder = folder.strip("/")
        with self._lock:
            known = self._dependencies.get(folder)
        if known is not None:
            return known
        record = record_key(folder)
        found = {
            f"{folder}/{f.filename}": Vouch(
                key=f"{folder}/{f.filename}",
                sha256=f.sha256,
                size=f.size,
                metadata_sha256=f.metadata_sha256,
                metadata_size=f.metadata_size,
                requires_python=None,
                manifest=record,
            )
            for f in read_record(self.store, folder).values()
        }
        with self._lock:
            self._dependencies[folder] = found
            if found:
                self._present.add(record)
        return found

    def _load(self, version: str) -> dict[str, Vouch]:
        keys = self._listing().get(version, [])
        sigs = [k + SIGNATURE_SUFFIX for k in keys if k + SIGNATURE_SUFFIX in self._present]
        out: dict[str, Vouch] = {}
        for stored in read_manifests(self.store, "", self.trust, keys=[*keys, *sigs]):
            for vouch in self._vouches(stored):
                _add(out, vouch, self.store.url)
        return out

    def _vouches(self, stored: StoredManifest) -> list[Vouch]:
        out = []
        for entry in stored.manifest.entries.values():
            key = self.key_of(entry)
            out.append(
                Vouch(
                    key=key,
                    sha256=entry.sha256,
                    size=entry.size,
                    metadata_sha256=entry.metadata_sha256,
                    metadata_size=entry.metadata_size,
                    requires_python=entry.requires_python,
                    manifest=stored.key,
                    cell=entry.cell_id,
                    release=stored.manifest.release,
                    archive=entry.package_type != "wheel",
                )
            )
        return out

    def key_of(self, entry: ManifestEntry) -> str:
        prefix = self.prefix if entry.package_type == "wheel" else self.archive_prefix
        return f"{prefix}/{entry.upload_subfolder}/{Path(entry.file).name}"


def _normal(version: str) -> str:
    """A version folder's name as `packaging` spells the version (what file names parse to)."""
    try:
        return Version(version).public
    except InvalidVersion:
        return version


def _add(out: dict[str, Vouch], vouch: Vouch, url: str) -> None:
    mine = out.get(vouch.key)
    if mine is None:
        out[vouch.key] = vouch
        return
    if (mine.sha256, mine.size) != (vouch.sha256, vouch.size) or (
        mine.metadata_sha256
        and vouch.metadata_sha256
        and mine.metadata_sha256 != vouch.metadata_sha256
    ):
        raise RefusedError(
            f"{url}/{vouch.key}: two stored manifests vouch for different bytes "
            f"({mine.manifest}: {mine.sha256}, {vouch.manifest}: {vouch.sha256}); it is not "
            "advertised",
            hint="one of the manifests was stored outside relforge; remove the wrong one",
        )
    if mine.metadata_sha256 is None and vouch.metadata_sha256 is not None:
        out[vouch.key] = vouch
