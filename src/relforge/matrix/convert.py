"""Turn located YAML nodes into the typed dataclasses of `relforge.matrix.schema`, strictly.

The conversion is driven by the dataclasses' type hints: unknown keys, missing required keys and
values of the wrong type all raise ConfigError at the offending line, with the key path.
"""

from __future__ import annotations

import dataclasses
import datetime
import difflib
import functools
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from relforge.errors import ConfigError
from relforge.matrix import schema
from relforge.matrix.relforgepin import parse_pinned_relforge
from relforge.matrix.source import Map, Node, Scalar, Seq, kind_of
from relforge.matrix.values import (
    LimitedApi,
    PythonVersion,
    check_platform_tag,
    parse_requirement,
)


def _version(text: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        raise ValueError(f"{text!r} is not a PEP 440 version") from None


def _specifier(text: str) -> SpecifierSet:
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise ValueError(f"{text!r} is not a PEP 440 version specifier (e.g. '>=3.10')") from None


def _requirement(text: str) -> schema.Requirement508:
    # spaces and tabs around it only: str.strip() also drops control characters such as
    # U+001F ("0\x1f" would have become the requirement "0")
    text = text.strip(" \t")
    parse_requirement(text)
    return schema.Requirement508(text)


def _platform_tag(text: str) -> schema.PlatformTag:
    return schema.PlatformTag(check_platform_tag(text))


def _ed25519_key(text: str) -> schema.Ed25519Key:
    import base64

    from relforge.signing import parse_public_key

    return schema.Ed25519Key(base64.b64encode(parse_public_key(text)).decode("ascii"))


def _date(text: str) -> datetime.date:
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a date like 2025-10-15") from None


# Types read from the text of a scalar; the parser raises ValueError with a readable message.
_TEXT_PARSERS: dict[Any, Callable[[str], Any]] = {
    Version: _version,
    SpecifierSet: _specifier,
    PythonVersion: PythonVersion.parse,
    LimitedApi: LimitedApi.parse,
    schema.Requirement508: _requirement,
    schema.PlatformTag: _platform_tag,
    schema.Ed25519Key: _ed25519_key,
    schema.PinnedRelforge: parse_pinned_relforge,
}


def convert(node: Node, tp: Any, path: str, **extra: Any) -> Any:
    """Convert `node` to the type `tp`; `path` is the dotted key path used in messages."""
    if tp in _TEXT_PARSERS:
        return _parse(node, path, _TEXT_PARSERS[tp], "a string")
    if dataclasses.is_dataclass(tp):
        return _dataclass(node, typing.cast(type, tp), path, extra)
    if tp is schema.Match:
        return _match(node, path)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if isinstance(node, Scalar) and node.is_null and len(inner) < len(args):
            return None
        assert len(inner) == 1, f"unsupported union {tp}"
        return convert(node, inner[0], path)
    if origin is typing.Literal:
        text = _scalar_text(node, path, "one of " + ", ".join(map(str, args)))
        for choice in args:
            if str(choice) == text:
                return choice
        raise ConfigError(
            f"{text!r} is not one of: {', '.join(map(str, args))}",
            where=node.span,
            key=path,
            hint=_closest(text, map(str, args)),
        )
    if origin is tuple:
        if not isinstance(node, Seq):
            raise _wrong_type(node, path, "a list")
        return tuple(convert(item, args[0], f"{path}[{i}]") for i, item in enumerate(node.items))
    if origin in (dict, Mapping):
        if not isinstance(node, Map):
            raise _wrong_type(node, path, "a mapping")
        key_type = args[0]
        out = {}
        for entry in node:
            key = convert(Scalar(entry.key_span, entry.key, entry.key), key_type, path)
            out[key] = convert(entry.value, args[1], f"{path}.{entry.key}")
        return out
    if tp is str:
        return _scalar_text(node, path, "a string")
    if tp is bool:
        if isinstance(node, Scalar) and isinstance(node.value, bool):
            return node.value
        raise _wrong_type(node, path, "true or false")
    if tp is int:
        if (
            isinstance(node, Scalar)
            and isinstance(node.value, int)
            and not isinstance(node.value, bool)
        ):
            return node.value
        raise _wrong_type(node, path, "an integer")
    if tp is datetime.date:
        if (
            isinstance(node, Scalar)
            and isinstance(node.value, datetime.date)
            and not isinstance(node.value, datetime.datetime)
        ):
            return node.value
        return _parse(node, path, _date, "a date like 2025-10-15")
    raise TypeError(f"no conversion to {tp!r}")  # pragma: no cover - a schema bug


def _scalar_text(node: Node, path: str, expected: str) -> str:
    """The text of a string-like scalar. Unquoted numbers keep their text (3.10 stays "3.10")."""
    if not isinstance(node, Scalar) or node.is_null or isinstance(node.value, bool):
        raise _wrong_type(node, path, expected)
    if isinstance(node.value, datetime.date | str | int | float):
        return node.text
    raise _wrong_type(node, path, expected)  # pragma: no cover - YAML has no other scalars


def _parse(node: Node, path: str, parser: Callable[[str], Any], expected: str) -> Any:
    text = _scalar_text(node, path, expected)
    try:
        return parser(text)
    except ValueError as exc:  # a parser may say how to fix it (`hint`)
        hint = getattr(exc, "hint", None)
        raise ConfigError(str(exc), where=node.span, key=path, hint=hint) from None


def _wrong_type(node: Node, path: str, expected: str) -> ConfigError:
    hint = None
    if isinstance(node, Scalar) and isinstance(node.value, bool) and "string" in expected:
        hint = f"YAML reads {node.text} as a boolean; quote it: '{node.text}'"
    return ConfigError(
        f"expected {expected}, got {kind_of(node)}", where=node.span, key=path, hint=hint
    )


def _closest(word: str, choices: typing.Iterable[str]) -> str | None:
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"did you mean {found[0]!r}?" if found else None


@functools.cache
def _fields(cls: type) -> tuple[dict[str, Any], dict[str, dataclasses.Field[Any]]]:
    hints = typing.get_type_hints(cls)
    keyed = {
        f.name: f
        for f in dataclasses.fields(cls)
        if f.name not in ("span", "spans") and not f.metadata.get("internal")
    }
    return hints, keyed


def _dataclass(node: Node, cls: type, path: str, extra: dict[str, Any]) -> Any:
    if not isinstance(node, Map):
        raise _wrong_type(node, path, "a mapping")
    hints, keyed = _fields(cls)
    values: dict[str, Any] = dict(extra)
    spans = {}
    for entry in node:
        sub = f"{path}.{entry.key}" if path else entry.key
        if entry.key not in keyed:
            allowed = ", ".join(sorted(keyed))
            raise ConfigError(
                f"unknown key {entry.key!r}",
                where=entry.key_span,
                key=sub,
                hint=_closest(entry.key, keyed) or f"allowed keys: {allowed}",
            )
        spans[entry.key] = entry.key_span
        values[entry.key] = convert(entry.value, hints[entry.key], sub)
    for name, f in keyed.items():
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if required and name not in values:
            where = f"{path}: " if path else ""
            raise ConfigError(f"{where}missing required key {name!r}", where=node.span)
    return cls(span=node.span, spans=spans, **values)


def _match(node: Node, path: str) -> schema.Match:
    """A rule condition: `field: value` or `field: [value, value]`; values keep their text."""
    if not isinstance(node, Map) or not node.entries:
        raise _wrong_type(node, path, "a non-empty mapping of cell fields to values")
    out = schema.Match()
    for entry in node:
        sub = f"{path}.{entry.key}"
        items = entry.value.items if isinstance(entry.value, Seq) else (entry.value,)
        texts = []
        for item in items:
            if not isinstance(item, Scalar) or item.is_null:
                raise _wrong_type(item, sub, "a value or a list of values")
            texts.append(str(item.value).lower() if isinstance(item.value, bool) else item.text)
        if not texts:
            raise ConfigError("empty list of values", where=entry.value.span, key=sub)
        out[entry.key] = tuple(texts)
    return out
