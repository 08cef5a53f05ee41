"""Consistency of variant wheels: the label in the file name, the `variant.json` inside (its
label and properties, listed in RECORD with the right hash) and the `*-variants.json` beside."""

from __future__ import annotations

import csv
import io
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from relforge.matrix.variants import (
    DIST_INFO_FILE,
    LABEL,
    Property,
    read_providers,
    read_variants,
)
from relforge.record import record_hash

# What reading a hostile archive raises: a broken zip, encrypted members (RuntimeError), an
# unknown compression method (NotImplementedError), corrupt deflate data (zlib.error).
UNREADABLE = (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError, zlib.error)


def split_variant_name(filename: str) -> tuple[str, str] | None:
    """`x-1.0-cp312-cp312-linux_x86_64-cu128.whl` → (the wheel name without label, label)."""
    if not filename.endswith(".whl"):
        return None
    stem, _, label = filename.removesuffix(".whl").rpartition("-")
    if stem.count("-") != 4 or not LABEL.match(label):
        return None
    try:
        parse_wheel_filename(f"{stem}.whl")
    except InvalidWheelFilename:
        return None
    return f"{stem}.whl", label


def check_variant_wheel(path: Path, expected: Mapping[str, frozenset[Property]]) -> list[str]:
    """What is wrong with one variant wheel, given label → properties (from variants.json)."""
    split = split_variant_name(path.name)
    if split is None:
        return [f"{path.name} is not a variant wheel name (…-platform-label.whl)"]
    _, label = split
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            found = [
                n for n in names if n.count("/") == 1 and n.endswith(f".dist-info/{DIST_INFO_FILE}")
            ]
            if len(found) != 1:
                return [f"expected one *.dist-info/{DIST_INFO_FILE}, found {len(found)}"]
            data = zf.read(found[0])
            record_name = found[0].replace(DIST_INFO_FILE, "RECORD")
            record = zf.read(record_name).decode("utf-8")
            problems = record_problems(zf, record, record_name)
    except (*UNREADABLE, KeyError, UnicodeDecodeError) as exc:
        return [f"not a readable wheel ({exc})"]
    try:
        inside = read_variants(data, found[0])
        read_providers(data, found[0])
    except ValueError as exc:
        return [*problems, str(exc)]
    if list(inside) != [label]:
        problems.append(f"{DIST_INFO_FILE} holds labels {sorted(inside)}, the file name {label}")
    elif label not in expected:
        problems.append(f"label {label} is not in the variants.json")
    elif inside[label] != expected[label]:
        problems.append(
            f"label {label}: {DIST_INFO_FILE} says {_show(inside[label])}, variants.json says "
            f"{_show(expected[label])}"
        )
    return problems


def record_problems(zf: zipfile.ZipFile, record: str, record_name: str) -> list[str]:
    """Every member against its RECORD row (hash and size), and every row against a member:
    a changed, added or dropped file is caught, not only a changed variant.json."""
    try:
        rows = [r for r in csv.reader(io.StringIO(record)) if r]
    except csv.Error as exc:
        return [f"RECORD is not CSV ({exc})"]
    listed: dict[str, list[str]] = {}
    for row in rows:
        if len(row) != 3:
            return [f"RECORD does not list {row[0]} with its hash and size (a row of {len(row)})"]
        listed[row[0]] = row
    problems = []
    members = [i for i in zf.infolist() if not i.is_dir()]
    for info in members:
        name = info.filename
        if name == record_name:
            continue
        if name not in listed:
            problems.append(f"RECORD does not list {name}")
            continue
        data = zf.read(info)
        _, digest, size = listed[name]
        if digest != record_hash(data) or size != str(len(data)):
            problems.append(f"RECORD does not list {name} with its hash and size")
    present = {i.filename for i in members}
    problems += [f"RECORD lists {n}, which is not in the wheel" for n in listed if n not in present]
    return problems


def check_variant_folder(folder: Path) -> dict[str, list[str]]:
    """Every variant wheel of a folder against the variants.json of its name and version."""
    out: dict[str, list[str]] = {}
    documents: dict[str, dict[str, frozenset[Property]]] = {}
    for doc in sorted(folder.glob("*-variants.json")):
        try:
            data = doc.read_bytes()
            documents[doc.name.removesuffix("-variants.json")] = read_variants(data, doc.name)
            read_providers(data, doc.name)
        except ValueError as exc:
            out[doc.name] = [str(exc)]
        except OSError as exc:
            out[doc.name] = [f"cannot read it ({exc.strerror or exc})"]
    for wheel in sorted(folder.glob("*.whl")):
        split = split_variant_name(wheel.name)
        if split is None:
            continue
        name, version = wheel.name.split("-")[:2]
        expected = documents.get(f"{name}-{version}")
        if expected is None:
            out[wheel.name] = [f"no {name}-{version}-variants.json beside it"]
            continue
        out[wheel.name] = check_variant_wheel(wheel, expected)
    return out


def _show(props: frozenset[Property]) -> str:
    return "{" + ", ".join(" :: ".join(p) for p in sorted(props)) + "}"
