"""The JSON Schema (draft 2020-12) of a matrix file, read from the schema dataclasses.

It follows `relforge.matrix.convert` rule for rule, so an editor that checks a file against it
refuses what the loader refuses for its shape: unknown keys, missing required keys, a list
where a mapping belongs, a string where `true`/`false` belongs.  What only the loader can judge
(a PEP 440 version, a release that contradicts itself) stays the loader's.  A release with
`extends` is a patch of another: its keys are all optional and a null deletes one, so it gets
the `…Patch` twin of each definition.
"""

from __future__ import annotations

import dataclasses
import datetime
import types
import typing
from collections.abc import Mapping
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from relforge.matrix import schema
from relforge.matrix.values import LimitedApi, PythonVersion

DIALECT = "https://json-schema.org/draft/2020-12/schema"
PATCH = "Patch"

# Scalars the loader parses from their text; YAML may read them as numbers (3.10, 2.9) and the
# loader keeps the text, so a number is accepted too.
_TEXT_TYPES: dict[Any, str] = {
    Version: "PEP 440 version (12.8.1)",
    SpecifierSet: "PEP 440 version specifier (>=3.10)",
    PythonVersion: "CPython X.Y, t for free-threaded (3.13, 3.13t)",
    LimitedApi: "limited-API floor X.Y (3.9)",
    schema.Requirement508: "PEP 508 requirement (numpy>=2)",
    schema.PlatformTag: "wheel platform tag (manylinux_2_28_x86_64)",
    schema.Ed25519Key: "Ed25519 public key (base64 of the 32 raw bytes, or PEM)",
    schema.PinnedRelforge: "relforge==X.Y.Z or relforge @ URL#sha256=…",
}
_SCALAR_TEXT = ["string", "number", "integer"]  # what `_scalar_text` accepts


def matrix_json_schema() -> dict[str, Any]:
    """The whole schema: the `Matrix` dataclass at the top, `releases` keyed by X.Y names."""
    defs: dict[str, dict[str, Any]] = {}
    top = _object(schema.Matrix, defs, patch=False)
    top["properties"]["releases"] = {
        "description": "release name (X.Y, quoted) → release; a release with `extends` "
        "inherits another's keys and may override or delete (null) them",
        "type": "object",
        "minProperties": 1,
        "propertyNames": {"pattern": r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$"},
        "additionalProperties": {
            "if": {"type": "object", "required": ["extends"]},
            "then": _ref(schema.Release, defs, patch=True),
            "else": _ref(schema.Release, defs, patch=False),
        },
    }
    top["required"] = sorted({*top.get("required", ()), "releases"})
    return {
        "$schema": DIALECT,
        "title": "relforge build matrix",
        **top,
        "$defs": dict(sorted(defs.items())),
    }


def _doc(cls: type) -> str:
    """The first paragraph of a class docstring, on one line."""
    text = (cls.__doc__ or "").strip()
    if not text or text.startswith(cls.__name__ + "("):  # dataclass's generated signature
        return ""
    return " ".join(text.split("\n\n")[0].split())


def _keyed_fields(cls: type) -> list[dataclasses.Field[Any]]:
    """The fields a YAML file may set (the loader's `_fields`: not spans, not internal)."""
    return [
        f
        for f in dataclasses.fields(cls)
        if f.name not in ("span", "spans") and not f.metadata.get("internal")
    ]


def _ref(cls: type, defs: dict[str, dict[str, Any]], *, patch: bool) -> dict[str, Any]:
    name = cls.__name__ + (PATCH if patch else "")
    if name not in defs:
        defs[name] = {}  # placeholder: a class may refer to itself through its fields
        defs[name] = _object(cls, defs, patch=patch)
    return {"$ref": f"#/$defs/{name}"}


def _object(cls: type, defs: dict[str, dict[str, Any]], *, patch: bool) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    properties: dict[str, Any] = {}
    required = []
    for f in _keyed_fields(cls):
        value = _type(hints[f.name], defs, patch=patch)
        if patch and {"type": "null"} not in value.get("anyOf", ()):
            value = {"anyOf": [value, {"type": "null"}]}  # a null deletes an inherited key
        prop: dict[str, Any] = {}
        doc = f.metadata.get("doc")
        if doc:
            prop["description"] = doc
        prop.update(value)
        default = _json_default(f)
        if default is not None:
            prop["default"] = default
        properties[f.name] = prop
        missing = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if missing and not patch:
            required.append(f.name)
    out: dict[str, Any] = {"type": "object"}
    doc = _doc(cls)
    if doc:
        out["description"] = doc
    out["properties"] = properties
    out["additionalProperties"] = False
    if required:
        out["required"] = required
    return out


def _json_default(f: dataclasses.Field[Any]) -> Any:
    """A default worth showing in an editor: plain strings, numbers, booleans and their lists."""
    value = f.default
    if value is dataclasses.MISSING or value is None:
        return None
    if isinstance(value, tuple):
        return list(value) if all(isinstance(v, str) for v in value) and value else None
    if isinstance(value, str | int | bool) and value != "":
        return value
    return None


def _type(tp: Any, defs: dict[str, dict[str, Any]], *, patch: bool) -> dict[str, Any]:
    """The schema of one value, following `relforge.matrix.convert.convert` case by case."""
    if tp in _TEXT_TYPES:
        return {"type": _SCALAR_TEXT, "title": _TEXT_TYPES[tp]}
    if dataclasses.is_dataclass(tp):
        return _ref(typing.cast(type, tp), defs, patch=patch)
    if tp is schema.Match:
        return {"$ref": f"#/$defs/{_match(defs)}"}
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        assert len(inner) == 1, f"unsupported union {tp}"
        return {"anyOf": [_type(inner[0], defs, patch=patch), {"type": "null"}]}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin is tuple:
        return {"type": "array", "items": _type(args[0], defs, patch=patch)}
    if origin in (dict, Mapping):
        value = _type(args[1], defs, patch=patch)
        if patch:  # merge: a null in a patch deletes the key it inherited
            value = {"anyOf": [value, {"type": "null"}]}
        out: dict[str, Any] = {"type": "object", "additionalProperties": value}
        if typing.get_origin(args[0]) is typing.Literal:
            out["propertyNames"] = {"enum": list(typing.get_args(args[0]))}
        return out
    if tp is str:
        return {"type": _SCALAR_TEXT}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is datetime.date:
        return {"type": "string", "format": "date"}
    raise TypeError(f"no JSON Schema for {tp!r}")  # a new type in the schema: add it here


def _match(defs: dict[str, dict[str, Any]]) -> str:
    name = "Match"
    scalar = {"type": ["string", "number", "integer", "boolean"]}
    defs[name] = {
        "description": _doc(schema.Match),
        "type": "object",
        "minProperties": 1,
        "additionalProperties": {
            "anyOf": [scalar, {"type": "array", "items": scalar, "minItems": 1}]
        },
    }
    return name
