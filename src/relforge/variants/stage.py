"""Stage one built wheel as a variant wheel: the local version goes (the variant label takes
its place), `*.dist-info/variant.json` comes in, RECORD follows, and every other member is
copied with its compressed bytes as they are (promote.zipcopy, as `wheel strip-local` does)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from relforge.errors import ConfigError, RefusedError
from relforge.promote.wheels import Rewritten, _new_record, write_rewritten
from relforge.record import record_hash
from relforge.variants.check import UNREADABLE, split_variant_name
from relforge.variants.format import DIST_INFO_FILE, LABEL
from relforge.wheelformat import WheelName, dist_info_dir


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
    name = WheelName.parse(wheel.name)
    public = name.public_version
    target = out_dir / variant_name(wheel.name, label)
    try:
        with zipfile.ZipFile(wheel) as zf:
            names = zf.namelist()
            info_dir = dist_info_dir(names, str(wheel))
            metadata = zf.read(f"{info_dir}/METADATA").decode("utf-8")
            record_name = f"{info_dir}/RECORD"
            record = zf.read(record_name).decode("utf-8")
    except (*UNREADABLE, KeyError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{wheel}: not a readable wheel ({exc})") from None
    if any(n.startswith(f"{info_dir}/RECORD.") for n in names):
        raise RefusedError(f"{wheel}: a signed wheel (RECORD.jws/RECORD.p7s) cannot be rewritten")
    if f"{info_dir}/{DIST_INFO_FILE}" in names:
        raise RefusedError(f"{wheel}: it is a variant wheel already")
    dist, _, info_version = info_dir.removesuffix(".dist-info").rpartition("-")

    def rename(member: str) -> str:
        for suffix in (".dist-info/", ".data/"):
            old = f"{dist}-{info_version}{suffix}"
            if member.startswith(old):
                return f"{dist}-{public}{suffix}{member[len(old) :]}"
        return member

    head, sep, body = metadata.partition("\n\n")
    lines = [
        f"Version: {public}" if line.lower().startswith("version:") else line
        for line in head.split("\n")
    ]
    new_metadata = "\n".join(lines) + sep + body
    replace = {f"{info_dir}/METADATA": new_metadata.encode("utf-8")}
    added = {rename(f"{info_dir}/{DIST_INFO_FILE}"): variant_json}
    new_record = _new_record(record, rename, replace, record_name)
    new_record = _with_rows(new_record, added, rename(record_name))
    replace[record_name] = new_record.encode("utf-8")
    sha, size, written = write_rewritten(
        wheel,
        target,
        hint="remove it, or stage into another folder",
        rename=rename,
        replace=replace,
        add=added,
        add_before=record_name,
    )
    changes = (f"{wheel.name} → {target.name}", f"added {rename(info_dir)}/{DIST_INFO_FILE}")
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
