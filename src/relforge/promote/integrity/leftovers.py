"""Writes a store began and never finished — S3 multipart uploads still open — as findings of
`relforge verify` (kind `unfinished`): their parts take space and are billed, and nothing but a
rerun of the interrupted command (which resumes them) or an abort ever removes them.
"""

from __future__ import annotations

from collections.abc import Iterable

from relforge.promote.integrity.findings import IntegrityFinding
from relforge.stores.objectstore import ObjectStore


def unfinished_findings(
    store: ObjectStore, name: str, folders: Iterable[str], present: set[str]
) -> list[IntegrityFinding]:
    """A finding per upload left open in one of `folders` (directly, not in a subfolder);
    `present`: the keys the store holds, whose uploads can never complete."""
    out = []
    for folder in folders:
        for upload in store.unfinished(folder + "/"):
            if "/" in upload.key[len(folder) + 1 :]:
                continue
            began = f", begun {upload.started}" if upload.started else ""
            if upload.key in present:
                why = "the key already holds its object, so it can never complete"
            else:
                why = "rerun the command that started it to resume it"
            out.append(
                IntegrityFinding(
                    kind="unfinished",
                    store=name,
                    key=upload.key,
                    folder=folder,
                    message=f"an unfinished multipart upload (id {upload.upload_id[:20]}…{began})"
                    f": {why}, or abort it with `relforge verify --repair --execute`",
                )
            )
    return out
