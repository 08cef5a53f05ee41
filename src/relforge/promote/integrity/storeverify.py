"""`relforge verify`: a channel in a store (the main one or a mirror) against the manifests
stored in the main store, and its index pages against both.

Findings:
    missing   a manifest vouches for the object, the store lacks it
    extra     the store holds a file of the project that no manifest vouches for
    drifted   the object's bytes (hashed here, see relforge.stores.content) differ from the
              manifest's sha256/size
    sidecar   the `.whl.metadata` is missing or differs from the manifest's metadata digest
              (or, when the manifest has none, from the wheel's own METADATA); an archive's
              `.sha256` file is missing or names another sha256 (archivecheck.py)
    page      a page links a file the store lacks, gives a hash other than the manifest's,
              leaves out a vouched file, or is missing
    parity    a mirror's stored manifests differ from the main store's
    unfinished  a multipart upload left open in a folder of the channel (leftovers.py)

Nightly folders are pruned to the newest `publishing.nightly_keep` versions of each project:
an older vouched version may be absent without a finding.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from packaging.version import InvalidVersion, Version

from relforge.errors import RefusedError
from relforge.manifest import ManifestEntry
from relforge.matrix.schema import ChannelName
from relforge.matrixstores import MAIN, NamedStore
from relforge.promote.archives import archive_folders
from relforge.promote.channel import MANIFESTS, place, stored_manifests, wheel_folders
from relforge.promote.channelview import channel_view
from relforge.promote.index.folder import SIDECAR, canonical, parse_dist
from relforge.promote.integrity.archivecheck import archive_findings
from relforge.promote.integrity.findings import (
    FindingKind,
    IntegrityFinding,
    IntegrityReport,
    StoreReport,
)
from relforge.promote.integrity.leftovers import unfinished_findings
from relforge.promote.integrity.pagecheck import Want, check_project_pages, check_root_pages
from relforge.promote.integrity.rootcheck import check_channel_root
from relforge.promote.publishing import ChannelContext
from relforge.promote.rootspec import RootSpec
from relforge.promote.yanked import read_yanked
from relforge.stores.content import Content, read_content
from relforge.stores.objectstore import ObjectInfo, ObjectStore, sha256_bytes


@dataclass(frozen=True, kw_only=True)
class Vouched:
    """An object a stored manifest vouches for, at its key in the channel."""

    key: str
    entry: ManifestEntry
    version: str  # public version, as stored manifests are grouped
    project: str
    release: str

    @property
    def folder(self) -> str:
        return self.key.rsplit("/", 1)[0]

    @property
    def is_wheel(self) -> bool:
        return self.key.endswith(".whl")


@dataclass(frozen=True, kw_only=True)
class Truth:
    """What the manifests stored in the main store say a channel holds."""

    channel: ChannelName
    project: str
    vouched: dict[str, Vouched]
    folders: tuple[str, ...]
    retired: frozenset[str]  # nightly keys past retention: absence is no finding
    main: ObjectStore  # where the manifests are (the root of trust)
    manifest_keys: tuple[str, ...]
    root: RootSpec | None = None  # the channel-root pages (relforge.promote.index.rootpages)
    archive_folders: tuple[str, ...] = ()  # native archives: no index pages there
    yanked: Mapping[str, str] = field(default_factory=dict)  # key → reason (the yank record)


def channel_truth(here: ChannelContext) -> Truth:
    """What the manifests stored in the main store say the channel holds."""
    matrix, main, channel = here.matrix, here.store, here.name
    project = matrix.project.name
    prefix = f"{MANIFESTS}/{channel}/{project}/"
    listed = list(main.list(prefix))
    versions = sorted({info.key[len(prefix) :].split("/", 1)[0] for info in listed})
    vouched: dict[str, Vouched] = {}
    for version in versions:
        for stored in stored_manifests(main, channel, project, version, here.trust):
            manifest = stored.manifest
            where = f"{main.url}/{prefix}{version}/"
            for p in place(here.cells, manifest, where=where):
                known = vouched.get(p.key)
                if known is not None and known.entry.sha256 != p.entry.sha256:
                    raise RefusedError(
                        f"two manifests stored under {where} vouch for different bytes at "
                        f"{p.key} ({known.entry.sha256[:12]}…, {p.entry.sha256[:12]}…)",
                        hint="a file name is forever; find which manifest was written by hand",
                    )
                vouched[p.key] = Vouched(
                    key=p.key,
                    entry=p.entry,
                    version=version,
                    project=project,
                    release=manifest.release,
                )
    archives = archive_folders(here.cells)
    folders = sorted(
        {v.folder for v in vouched.values()} | set(wheel_folders(here.cells)) | set(archives)
    )
    retired = _retired(vouched, matrix.publishing.nightly_keep) if channel == "nightly" else set()
    return Truth(
        channel=channel,
        project=project,
        vouched=vouched,
        folders=tuple(folders),
        retired=frozenset(retired),
        main=main,
        manifest_keys=tuple(info.key for info in listed),
        root=here.root,
        archive_folders=tuple(archives),
        yanked=read_yanked(main, channel),
    )


def _retired(vouched: dict[str, Vouched], keep: int) -> set[str]:
    """Keys of vouched nightly files older than the newest `keep` versions in their folder
    (publish prunes those)."""
    groups: dict[tuple[str, str], list[tuple[Version, str]]] = defaultdict(list)
    for v in vouched.values():
        try:
            groups[(v.folder, v.project)].append((Version(v.entry.version), v.key))
        except InvalidVersion:
            continue
    out = set()
    for found in groups.values():
        kept = sorted({ver for ver, _ in found}, reverse=True)[:keep]
        out |= {key for ver, key in found if ver not in kept}
    return out


def verify_store(
    truth: Truth,
    named: NamedStore,
    *,
    workers: int = 32,
    trust_service: bool = False,
    withheld: frozenset[str] = frozenset(),
) -> StoreReport:
    """Check one store's copy of a channel against what the stored manifests vouch for: every
    vouched object and sidecar hashed, every file of the project vouched for, every page right.
    `withheld`: versions not whole in the channel, which the pages must not list."""
    store, name = named.store, named.name
    own = canonical(truth.project)
    files: dict[str, ObjectInfo] = {}
    for folder in truth.folders:
        for info in store.list(folder + "/"):
            if "/" not in info.key[len(folder) + 1 :]:
                files[info.key] = info
    findings = _Findings(store=name)
    observed = _hash_vouched(store, truth, files, workers=workers, trust_service=trust_service)
    want = _check_vouched(truth, observed, findings, withheld)
    ours = _check_unvouched(store, truth, files, own, findings)
    findings.items.extend(
        archive_findings(truth.vouched, truth.archive_folders, files, store, name, truth.retired)
    )
    findings.items.extend(unfinished_findings(store, name, truth.folders, set(files)))
    pages = _check_pages(store, truth, own, want, ours, findings)
    return StoreReport(
        name=name,
        url=store.url,
        findings=tuple(findings.items),
        objects_checked=len(observed),
        pages_checked=pages,
        observed=observed,
    )


@dataclass(frozen=True, kw_only=True)
class _Findings:
    """The findings of one store, in the order they are made."""

    store: str
    items: list[IntegrityFinding] = field(default_factory=list)

    def add(self, kind: FindingKind, v: Vouched | None, key: str, message: str, **kw: Any) -> None:
        folder = key.rsplit("/", 1)[0]
        cell = v.entry.cell_id if v else None
        self.items.append(
            IntegrityFinding(
                kind=kind,
                store=self.store,
                key=key,
                message=message,
                cell_id=cell,
                folder=folder,
                **kw,
            )
        )


def _hash_vouched(
    store: ObjectStore,
    truth: Truth,
    files: dict[str, ObjectInfo],
    *,
    workers: int,
    trust_service: bool,
) -> dict[str, Content]:
    """Hash every vouched object the store holds, and the sidecars of wheels (key → content)."""
    jobs: list[tuple[str, bool]] = []
    for key, v in truth.vouched.items():
        if key in files:
            need_meta = v.is_wheel and v.entry.metadata_sha256 is None and key + SIDECAR in files
            jobs.append((key, need_meta))
            if v.is_wheel and key + SIDECAR in files:
                jobs.append((key + SIDECAR, False))

    def hash_one(job: tuple[str, bool]) -> Content | None:
        key, meta = job
        return read_content(
            store, key, wheel_metadata=meta, trust_service=trust_service and not meta
        )

    with ThreadPoolExecutor(max(1, min(workers, len(jobs)))) as pool:
        return {job[0]: c for job, c in zip(jobs, pool.map(hash_one, jobs), strict=True) if c}


def _check_vouched(
    truth: Truth,
    observed: dict[str, Content],
    findings: _Findings,
    withheld: frozenset[str] = frozenset(),
) -> dict[str, dict[str, Want]]:
    """Missing, drifted and sidecar findings of the vouched objects; returns what the pages of
    each folder must say (folder → filename → want), leaving out the `withheld` versions."""
    want: dict[str, dict[str, Want]] = defaultdict(dict)
    for key, v in sorted(truth.vouched.items()):
        e = v.entry
        content = observed.get(key)
        filename = key.rsplit("/", 1)[1]
        if content is None:
            if key not in truth.retired:
                findings.add(
                    "missing",
                    v,
                    key,
                    f"{e.cell_id}: the manifest vouches for it, the store does not hold it",
                    expected_sha256=e.sha256,
                )
            if v.is_wheel and v.version not in withheld:
                want[v.folder][filename] = Want(
                    sha256=e.sha256,
                    metadata_sha256=e.metadata_sha256,
                    yanked=truth.yanked.get(key),
                )
            continue
        intact = content.sha256 == e.sha256 and content.size == e.size
        if not intact:
            findings.add(
                "drifted",
                v,
                key,
                f"{e.cell_id}: {content.size} B with sha256 "
                f"{content.sha256}, the manifest says {e.size} B {e.sha256}",
                expected_sha256=e.sha256,
                found_sha256=content.sha256,
            )
        meta_want = e.metadata_sha256
        if meta_want is None and intact and content.metadata is not None:
            meta_want = sha256_bytes(content.metadata)
        if v.is_wheel:
            car = observed.get(key + SIDECAR)
            if car is None:
                findings.add(
                    "sidecar",
                    v,
                    key + SIDECAR,
                    f"{e.cell_id}: the core metadata (PEP 658) sidecar is missing",
                    expected_sha256=meta_want,
                )
            elif meta_want is not None and car.sha256 != meta_want:
                source = (
                    "the manifest's metadata digest"
                    if e.metadata_sha256
                    else "the wheel's own METADATA"
                )
                findings.add(
                    "sidecar",
                    v,
                    key + SIDECAR,
                    f"{e.cell_id}: sha256 {car.sha256}, {source} is {meta_want}",
                    expected_sha256=meta_want,
                    found_sha256=car.sha256,
                )
        if v.is_wheel and v.version not in withheld:
            want[v.folder][filename] = Want(
                sha256=e.sha256, metadata_sha256=meta_want, yanked=truth.yanked.get(key)
            )
    return want


def _check_unvouched(
    store: ObjectStore,
    truth: Truth,
    files: dict[str, ObjectInfo],
    own: str,
    findings: _Findings,
) -> dict[str, set[str]]:
    """An "extra" finding for each file of the project no manifest vouches for; returns the
    project's files each folder holds (folder → filenames, sidecars left out)."""
    ours: dict[str, set[str]] = defaultdict(set)
    for key in sorted(files):
        folder, _, filename = key.rpartition("/")
        base = key.removesuffix(SIDECAR)
        parsed = parse_dist(base.rsplit("/", 1)[1])
        if parsed is None or parsed[0] != own:
            continue
        if not key.endswith(SIDECAR):
            ours[folder].add(filename)
        if base not in truth.vouched:
            content = read_content(store, key)
            findings.add(
                "extra",
                None,
                key,
                "no stored manifest vouches for this file",
                found_sha256=content.sha256 if content else None,
            )
    return ours


def _check_pages(
    store: ObjectStore,
    truth: Truth,
    own: str,
    want: dict[str, dict[str, Want]],
    ours: dict[str, set[str]],
    findings: _Findings,
) -> int:
    """Page findings of each folder that holds or should hold the project; returns how many
    folders' pages were read."""
    pages = 0
    for folder in truth.folders:
        if not (want.get(folder) or ours.get(folder)):
            continue
        present = ours.get(folder, set())
        vouched_here = bool(want.get(folder))
        problems = check_project_pages(
            store, folder, own, want.get(folder, {}), present, required=vouched_here
        )
        if vouched_here:  # nothing vouched here: the folder page need not list the project
            problems += check_root_pages(store, folder, own)
        pages += 1
        for problem in problems:
            findings.items.append(
                IntegrityFinding(
                    kind="page",
                    store=findings.store,
                    key=problem.key,
                    message=problem.message,
                    folder=folder,
                )
            )
    if truth.root is not None:
        root = truth.root
        for problem in check_channel_root(store, root, own, want, ours):
            findings.items.append(
                IntegrityFinding(
                    kind="page",
                    store=findings.store,
                    key=problem.key,
                    message=problem.message,
                    folder=root.prefix,
                )
            )
        pages += 1
    return pages


def parity(truth: Truth, named: NamedStore) -> list[IntegrityFinding]:
    """A mirror must hold the main store's manifests of the channel, byte for byte."""
    prefix = f"{MANIFESTS}/{truth.channel}/{truth.project}/"
    theirs = {i.key for i in named.store.list(prefix)}
    ours = {}
    for key in truth.manifest_keys:
        content = read_content(truth.main, key)
        if content is not None:
            ours[key] = content.sha256
    out = []
    for key, sha in sorted(ours.items()):
        got = read_content(named.store, key) if key in theirs else None
        if got is None:
            out.append(
                IntegrityFinding(
                    kind="parity",
                    store=named.name,
                    key=key,
                    message="the main store's manifest is missing here",
                    expected_sha256=sha,
                )
            )
        elif got.sha256 != sha:
            out.append(
                IntegrityFinding(
                    kind="parity",
                    store=named.name,
                    key=key,
                    message="differs from the main store's manifest",
                    expected_sha256=sha,
                    found_sha256=got.sha256,
                )
            )
    for key in sorted(theirs - set(ours)):
        out.append(
            IntegrityFinding(
                kind="parity",
                store=named.name,
                key=key,
                message="a manifest the main store does not hold",
            )
        )
    return out


def verify_channel(
    here: ChannelContext,
    truth: Truth,
    stores: Sequence[NamedStore],
    *,
    workers: int = 32,
    trust_service: bool = False,
) -> IntegrityReport:
    reports = []
    completeness = channel_view(here, store=truth.main).completeness
    versions = {v.version for v in truth.vouched.values()}
    for named in stores:
        exposed = completeness.exposed(named.store, versions)
        report = verify_store(
            truth,
            named,
            workers=workers,
            trust_service=trust_service,
            withheld=frozenset(versions - exposed),
        )
        if named.name != MAIN:
            extra = tuple(parity(truth, named))
            report = StoreReport(
                name=report.name,
                url=report.url,
                findings=report.findings + extra,
                objects_checked=report.objects_checked,
                pages_checked=report.pages_checked,
                observed=report.observed,
            )
        reports.append(report)
    return IntegrityReport(channel=truth.channel, stores=tuple(reports))
