"""The build owns the manifest of its output folder: it merges its cells' entries into the one
there for the same release and channel, replaces one of another release or channel (keeping a
copy when that one holds validated entries), drops the entries of cells the matrix no longer
has, records the cells it skipped, and removes the files no entry names any more."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from relforge.builders.buildplan import BuildPlan
from relforge.builders.executor import CellResult
from relforge.builders.progress import shown
from relforge.manifest import ArtifactManifest, ManifestEntry


@dataclass(frozen=True, kw_only=True)
class WrittenManifest:
    """The manifest the build left in its output folder, and what it says about the change
    (a replaced manifest, dropped entries) for the build's output."""

    manifest: ArtifactManifest
    notes: tuple[str, ...] = ()


def write_manifest(plan: BuildPlan, results: list[CellResult]) -> WrittenManifest:
    """Merge the entries of built and cached cells into the output folder's manifest.

    A cell whose build failed loses the entry (and the artifact) an earlier build left: what
    its current input makes is unknown, so nothing may validate or publish the old file.  A
    rebuilt cell's entry replaces its old one; entries of cells the release no longer has are
    dropped; cells skipped (and without an entry) are recorded as skipped."""
    base = plan.previous or ArtifactManifest(
        project=plan.matrix.project.name, release=plan.release.name, channel=plan.channel
    )
    failed = {r.cell.id for r in results if r.status == "failed"}
    gone = sorted(k for k in base.entries if k not in plan.release_cells)
    kept = {k: e for k, e in base.entries.items() if k not in failed and k not in gone}
    still_skipped = {
        k: v for k, v in base.skipped.items() if k in plan.release_cells and k not in failed
    }
    manifest = dataclasses.replace(base, entries=kept, skipped=still_skipped).with_entries(
        r.entry for r in results if r.entry is not None
    )
    manifest = manifest.with_skipped(
        {
            r.cell.id: r.reason
            for r in results
            if r.status == "skipped" and r.cell.id not in manifest.entries
        }
    )
    if plan.previous is None and not manifest.entries:
        return WrittenManifest(manifest=manifest)  # nothing built: leave the folder as it was
    notes = []
    old: list[ManifestEntry] = list(base.entries.values())
    replaced = plan.replaced
    if replaced is not None:
        was = replaced.manifest
        what = f"{was.project} {was.release} on {was.channel}"
        if replaced.keep is not None:
            was.save(replaced.keep)  # before the new one: nothing validated is ever lost
            validated = sum(e.validated for e in was.entries.values())
            notes.append(
                f"replaced {shown(plan.manifest_path)} ({what}): its validated entries "
                f"({validated}) are kept, with their files, in {shown(replaced.keep)}"
            )
        else:
            old += was.entries.values()
            notes.append(
                f"replaced {shown(plan.manifest_path)} ({what}): removed its entries "
                f"({len(was.entries)}) and their files"
            )
    manifest.save(plan.manifest_path)
    if gone:
        notes.append(
            f"dropped the entries of cells release {plan.release.name} no longer has (their "
            f"files removed): {', '.join(gone)}"
        )
    _remove_unnamed(plan.out, old, manifest.entries.values())
    return WrittenManifest(manifest=manifest, notes=tuple(notes))


def _remove_unnamed(out: Path, old: Iterable[ManifestEntry], new: Iterable[ManifestEntry]) -> None:
    """Remove the files of the output folder that old entries named and no entry names now (a
    failed cell's, a dropped cell's, a rebuilt cell's older file); never one outside it."""
    named = {e.file for e in new}
    for entry in old:
        stale = out / entry.file
        if entry.file not in named and stale.parent == out:
            stale.unlink(missing_ok=True)
