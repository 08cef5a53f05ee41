"""Publish variant wheels: stage a manifest's validated wheels as variant wheels and put them,
with `{name}-{version}-variants.json`, into one index folder of the channel (`whl/test/variant/`)
whose project pages link the wheels and the variants.json.  Dry run by default; a rerun is a
no-op; an existing variants.json is merged (PEP 825 lets it grow as variants are added)."""

from __future__ import annotations

import html
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from packaging.utils import canonicalize_name

from relforge.errors import (
    ConfigError,
    NothingToDoError,
    RefusedError,
    UsageError,
    ValidationFailed,
)
from relforge.manifest import ArtifactManifest, ManifestEntry, sha256_file
from relforge.matrix.expand import expand_cells
from relforge.matrix.schema import ChannelName, Matrix, WheelVariants
from relforge.matrix.variants import (
    VariantSpec,
    document,
    dumps,
    read_providers,
    read_variants,
    variant_for,
)
from relforge.output import in_place
from relforge.stores import content_types
from relforge.stores.objectstore import ObjectStore, sha256_bytes
from relforge.variants.labelcheck import check_variant_wheel
from relforge.variants.variantstage import stage_variant_wheel


@dataclass(frozen=True, kw_only=True)
class Staged:
    cell_id: str
    path: Path
    key: str
    sha256: str
    spec: VariantSpec
    exists: bool  # the same bytes are in the store already


@dataclass(kw_only=True)
class VariantPlan:
    folder: str  # store key prefix, e.g. whl/test/variant
    project: str
    wheels: list[Staged] = field(default_factory=list)
    documents: dict[str, bytes] = field(default_factory=dict)  # key → variants.json
    unchanged: set[str] = field(default_factory=set)  # documents already as planned

    @property
    def changes(self) -> int:
        writes = [w for w in self.wheels if not w.exists]
        return len(writes) + len(set(self.documents) - self.unchanged)

    def summary(self, written: int) -> str:
        """What applying the plan did, in one line (`written`: objects apply wrote)."""
        return in_place(
            f"variant publish: {written} object(s) written to {self.folder}/", written == 0
        )

    def lines(self) -> Iterator[str]:
        for w in self.wheels:
            verb = "keep  " if w.exists else "upload"
            yield f"  {verb}  {w.key}  sha256={w.sha256[:12]}… [{w.cell_id}, label {w.spec.label}]"
        for key in self.documents:
            yield f"  {'keep  ' if key in self.unchanged else 'write '}  {key}"
        yield f"then re-index {self.folder}/{self.project}/ (links the wheels and variants.json)"


@dataclass(frozen=True, kw_only=True)
class VariantRequest:
    """What `relforge variant publish` asks for: the validated wheels of `manifest` (its
    files in `dist`), of `release` of `matrix`, as variant wheels of `channel`."""

    matrix: Matrix
    release: str
    channel: ChannelName
    manifest: ArtifactManifest
    dist: Path


def plan_variants(store: ObjectStore, workdir: Path, request: VariantRequest) -> VariantPlan:
    """Stage every validated wheel whose cell has a variant into `workdir`; nothing is
    written to the store."""
    matrix, release, channel = request.matrix, request.release, request.channel
    manifest, dist = request.manifest, request.dist
    rel = matrix.release(release)
    spec = rel.variants
    if spec is None:
        raise NothingToDoError(
            f"release {release} declares no `variants:`",
            key=f"releases.{release}.variants",
            hint="map cells to variant labels and properties under `variants: wheels:`",
        )
    if manifest.channel != channel:
        raise UsageError(
            f"the manifest holds wheels built for the {manifest.channel!r} channel, not {channel}",
            key="--channel",
            hint=f"pass --channel {manifest.channel}, or build for {channel}",
        )
    prefix = matrix.channels.get(channel).prefix.strip("/")
    plan = VariantPlan(
        folder=f"{prefix}/{spec.folder}", project=canonicalize_name(manifest.project)
    )
    cells = {c.id: c for c in expand_cells(matrix, release, channel=channel)}
    by_version: dict[str, dict[str, VariantSpec]] = {}
    for cell_id, entry in sorted(manifest.entries.items()):
        cell = cells.get(cell_id)
        variant = variant_for(cell, rel) if cell is not None else None
        if variant is None:
            continue
        source = _validated_source(dist, entry)
        plan.wheels.append(_stage_one(source, entry, variant, spec, plan.folder, store, workdir))
        public = entry.version.partition("+")[0]
        labels = by_version.setdefault(public, {})
        if labels.setdefault(variant.label, variant) != variant:  # pragma: no cover - load check
            raise ConfigError(f"label {variant.label} has two meanings")
    if not plan.wheels:
        raise NothingToDoError(
            f"no validated wheel of {manifest.project} {release} matches a `variants:` rule",
            key="--manifest",
        )
    for version, labels in by_version.items():
        key = f"{plan.folder}/{plan.project.replace('-', '_')}-{version}-variants.json"
        text = _variants_document(store, key, spec, labels)
        if store.head(key) is not None and store.get(key) == text:
            plan.unchanged.add(key)
        plan.documents[key] = text
    return plan


def _validated_source(dist: Path, entry: ManifestEntry) -> Path:
    """The wheel of a manifest entry, refused unless it is validated and has its bytes."""
    cell_id = entry.cell_id
    if not entry.validated:
        raise RefusedError(
            f"{entry.file} ({cell_id}) is not validated; variant wheels are made from "
            "validated wheels only",
            hint="run relforge validate --manifest first",
        )
    source = dist / entry.file
    try:
        have_sha = sha256_file(source)
    except OSError as exc:
        raise ConfigError(
            f"cannot read {source} ({cell_id}): {exc.strerror or exc}", key="--manifest"
        ) from None
    if have_sha != entry.sha256:
        raise RefusedError(
            f"{entry.file} ({cell_id}) has sha256 {have_sha[:12]}…, the manifest "
            f"{entry.sha256[:12]}…: it is not the wheel that was validated",
            key="--manifest",
            hint="rebuild and validate, or restore the validated file",
        )
    return source


def _stage_one(
    source: Path,
    entry: ManifestEntry,
    variant: VariantSpec,
    spec: WheelVariants,
    folder: str,
    store: ObjectStore,
    workdir: Path,
) -> Staged:
    """Stage one wheel as a variant wheel under `workdir`, checked, and compare it with the
    store's copy (never replaced)."""
    own = dumps(document(spec, {variant.label: variant}))
    staged = stage_variant_wheel(source, workdir, label=variant.label, variant_json=own)
    problems = check_variant_wheel(staged.path, {variant.label: frozenset(variant.properties)})
    if problems:
        raise ValidationFailed(f"{staged.path.name}: " + "; ".join(problems))
    key = f"{folder}/{staged.path.name}"
    have = store.sha256(key)
    if have is not None and have != staged.sha256:
        raise RefusedError(
            f"{key} exists with other bytes; a published variant wheel is never replaced",
            hint="publish a new version instead",
        )
    return Staged(
        cell_id=entry.cell_id,
        path=staged.path,
        key=key,
        sha256=staged.sha256,
        spec=variant,
        exists=have is not None,
    )


def _variants_document(
    store: ObjectStore, key: str, spec: WheelVariants, labels: dict[str, VariantSpec]
) -> bytes:
    """The {name}-{version}-variants.json at `key`: these labels merged into the published
    one (a published label must keep its properties)."""
    merged = dict(labels)
    providers: dict[str, Any] = {}
    if store.head(key) is not None:
        data = store.get(key)
        try:
            published = read_variants(data, key)
            providers = read_providers(data, key)
        except ValueError as exc:
            raise RefusedError(
                f"{exc}; the published file is not replaced",
                key=key,
                hint="repair or remove it in the store (it is the index of the variant "
                "wheels already published), then rerun",
            ) from None
        for label, props in published.items():
            mine = merged.get(label)
            if mine is not None and frozenset(mine.properties) != props:
                raise RefusedError(
                    f"{key} gives label {label} other properties than this matrix",
                    hint="a label must keep its meaning; choose a new label",
                )
            merged.setdefault(label, VariantSpec(label=label, properties=tuple(sorted(props))))
    return dumps(document(spec, merged, providers))


def apply_variants(store: ObjectStore, plan: VariantPlan) -> int:
    """Upload the wheels, then the variants.json files, then the pages (links last)."""
    written = 0
    for wheel in plan.wheels:
        if not wheel.exists and store.put_if_absent(
            wheel.key, wheel.path, wheel.sha256, content_types.OCTET_STREAM
        ):
            written += 1
    for key, data in plan.documents.items():
        if key not in plan.unchanged:
            store.write(key, data, content_types.JSON)
            written += 1
    write_pages(store, plan.folder, plan.project)
    return written


def write_pages(store: ObjectStore, folder: str, project: str) -> None:
    """The project page (every variant wheel and variants.json of the project, with sha256)
    and the folder page, rebuilt from what the store holds."""
    stem = project.replace("-", "_")
    rows = []
    for info in store.list(f"{folder}/{stem}-"):
        name = info.key.rsplit("/", 1)[1]
        if info.key.count("/") != folder.count("/") + 1:
            continue
        if not name.endswith((".whl", "-variants.json")):
            continue
        sha = store.sha256(info.key) or sha256_bytes(store.get(info.key))
        rows.append(f'    <a href="../{quote(name)}#sha256={sha}">{html.escape(name)}</a><br>')
    page = _page(f"Links for {project}", rows)
    _write_changed(store, f"{folder}/{project}/index.html", page)
    projects = sorted(
        {i.key.split("/")[-2] for i in store.list(f"{folder}/") if i.key.endswith("/index.html")}
        - {folder.rsplit("/", 1)[-1]}
    )
    links = [f'    <a href="{quote(p)}/">{html.escape(p)}</a><br>' for p in projects]
    _write_changed(store, f"{folder}/index.html", _page("Variant wheels", links))
    if store.directory_pages:
        _write_changed(store, f"{folder}/{project}/", page)


def _write_changed(store: ObjectStore, key: str, page: bytes) -> None:
    """Replace a page only when its bytes change, so that a rerun writes nothing."""
    if store.head(key) is None or store.get(key) != page:
        store.write(key, page, content_types.HTML)


def _page(title: str, rows: list[str]) -> bytes:
    head = (
        "<!DOCTYPE html>\n<html>\n  <head>\n"
        f"    <title>{html.escape(title)}</title>\n  </head>\n  <body>\n"
        f"    <h1>{html.escape(title)}</h1>\n"
    )
    return (head + "".join(r + "\n" for r in rows) + "  </body>\n</html>\n").encode()


@contextmanager
def staging_dir(root: Path) -> Iterator[Path]:
    """A private folder under `root` for the staged wheels, removed afterwards together with
    every parent folder this made (a dry run leaves the working directory as it was)."""
    made = [p for p in (root, *root.parents) if not p.exists()]
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="variants-", dir=root))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)
        for folder in made:  # deepest first
            try:
                folder.rmdir()
            except OSError:
                break  # not empty (another run's work) or gone: leave it
