"""Nightly pruning: the wheels (and their PEP 658 sidecars) of nightlies older than the newest
`publishing.nightly_keep` whole ones.

`publish` prunes as it re-indexes; `publish --no-index` (the generated workflows' per-cell
upload) leaves it to `relforge index`, since its pages still list those files until the index
job rebuilds them.  Either way the files are left off the pages first and deleted after them
(relforge.promote.plans.storeplan.execute, channelindex.py): no page links a deleted file.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence, Set

from packaging.utils import canonicalize_name
from packaging.version import Version

from relforge.matrix.schema import Matrix
from relforge.promote.completeness import Completeness
from relforge.promote.index.folder import SIDECAR, list_folder, parse_dist
from relforge.stores.objectstore import ObjectInfo, ObjectStore


def nightly_prune(
    store: ObjectStore,
    folders: list[str],
    new_keys: set[str],
    keep: int,
    complete: Callable[[str], bool] = lambda version: True,
    *,
    projects: Set[str] = frozenset(),
    infos: Mapping[str, Sequence[ObjectInfo]] | None = None,
) -> list[str]:
    """Keys of nightly files older than the newest `keep` complete versions of their project
    (with their sidecars); files being published now are never pruned, nor a version newer
    than the oldest kept complete one (a nightly still arriving), and only the projects being
    published (or named in `projects`) are pruned (a folder may also serve dependencies that
    are not ours).  `infos`: folders already listed (`index.read_folder`)."""
    doomed = []
    for folder in folders:
        listing = list_folder(store, folder, infos=(infos or {}).get(folder))
        versions: dict[str, set[Version]] = defaultdict(set)
        files: dict[str, list[tuple[Version, str]]] = defaultdict(list)
        ours = set(projects) | {
            parsed[0]
            for key in new_keys
            if key.rsplit("/", 1)[0] == folder and (parsed := parse_dist(key.rsplit("/", 1)[1]))
        }
        for project, listed in listing.projects.items():
            if project not in ours:
                continue
            for info in listed:
                parsed = parse_dist(info.key.rsplit("/", 1)[1])
                assert parsed is not None
                files[project].append((parsed[1], info.key))
        for key in new_keys:
            if key.rsplit("/", 1)[0] == folder and (parsed := parse_dist(key.rsplit("/", 1)[1])):
                files[parsed[0]].append((parsed[1], key))
        for project, found in files.items():
            ordered = sorted({v for v, _ in found}, reverse=True)
            versions[project] = kept_versions(ordered, keep, complete)
            for version, key in found:
                if version not in versions[project] and key not in new_keys:
                    doomed.append(key)
                    if key + SIDECAR in listing.sidecars:
                        doomed.append(key + SIDECAR)
    return sorted(set(doomed))


def kept_versions(
    ordered: list[Version], keep: int, complete: Callable[[str], bool]
) -> set[Version]:
    """Of versions newest first: the newest `keep` complete ones and every version newer than
    the oldest of those (all of them while fewer than `keep` are complete)."""
    done = [v for v in ordered if complete(v.public)][:keep]
    if len(done) < keep:
        return set(ordered)
    return {v for v in ordered if v >= done[-1]}


def channel_prune(
    matrix: Matrix,
    store: ObjectStore,
    completeness: Completeness,
    infos: Mapping[str, Sequence[ObjectInfo]],
) -> tuple[str, ...]:
    """What `relforge index` of the nightly channel prunes: the matrix's own project's older
    nightlies in the folders `infos` lists, judged whole by the channel's completeness
    judgement (as the pages are)."""
    project = frozenset({canonicalize_name(matrix.project.name)})
    keep = matrix.publishing.nightly_keep

    def exposed(version: str) -> bool:
        return completeness.state(store, version).exposed

    found = nightly_prune(store, list(infos), set(), keep, exposed, projects=project, infos=infos)
    return tuple(found)
