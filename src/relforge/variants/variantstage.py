"""Stage one built wheel as a variant wheel: the local version goes (the variant label takes
its place), `*.dist-info/variant.json` comes in, RECORD follows, and every other member is
copied with its compressed bytes as they are (relforge.wheelversion, as `wheel strip-local`
does)."""

from __future__ import annotations

from pathlib import Path

from relforge.errors import ConfigError, RefusedError
from relforge.matrix.variants import DIST_INFO_FILE, LABEL
from relforge.record import record_hash
from relforge.variants.labelcheck import split_variant_name
from relforge.wheelformat import WheelName
from relforge.wheelversion import (
    Rewritten,
    metadata_with_version,
    new_record,
    read_info,
    write_rewritten,
)


def variant_name(wheel_name: str, label: str) -> str:
    """`torch-2.9.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl` + `cu128` →
    `torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64-cu128.whl`."""
    if not LABEL.match(label):
        raise ConfigError(f"variant label {label!r} must be 0-9, a-z, '_' and '.'")
    name = WheelName.parse(wheel_name)
    return f"{name.distribution}-{name.public_version}-{name.rest.removesuffix('.whl')}-{label}.whl"


def stage_variant_wheel(
    wheel: Path, out_dir: Path, *, label: str, variant_json: bytes
) -> Rewritten:
    """Write the variant wheel of `wheel` into `out_dir`; an identical file there is kept, a
    different one is refused."""
    if split_variant_name(wheel.name) is not None:
        raise RefusedError(f"{wheel.name}: it is a variant wheel already")
    public = WheelName.parse(wheel.name).public_version
    target = out_dir / variant_name(wheel.name, label)
    info = read_info(wheel)
    if f"{info.info_dir}/{DIST_INFO_FILE}" in info.names:
        raise RefusedError(f"{wheel}: it is a variant wheel already")
    rename = info.renamer(public)
    record_name = info.record_name
    new_metadata = metadata_with_version(info.metadata, public)
    replace = {f"{info.info_dir}/METADATA": new_metadata.encode("utf-8")}
    added = {rename(f"{info.info_dir}/{DIST_INFO_FILE}"): variant_json}
    record = new_record(info.record, rename, replace, record_name)
    record = _with_rows(record, added, rename(record_name))
    replace[record_name] = record.encode("utf-8")
    sha, size, written = write_rewritten(
        wheel,
        target,
        hint="remove it, or stage into another folder",
        rename=rename,
        replace=replace,
        add=added,
        add_before=record_name,
    )
    changes = (f"{wheel.name} → {target.name}", f"added {rename(info.info_dir)}/{DIST_INFO_FILE}")
    return Rewritten(
        path=target, source=wheel, sha256=sha, size=size, changes=changes, written=written
    )


def _with_rows(record: str, added: dict[str, bytes], record_name: str) -> str:
    """RECORD with rows for the added members, kept before RECORD's own row."""
    rows = [line for line in record.splitlines() if line]
    own = [r for r in rows if r.split(",", 1)[0] == record_name]
    rest = [r for r in rows if r.split(",", 1)[0] != record_name]
    new = [f"{name},{record_hash(data)},{len(data)}" for name, data in added.items()]
    return "\n".join([*rest, *new, *own]) + "\n"
