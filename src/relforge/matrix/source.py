"""Read YAML into a tree of located nodes: every value remembers its file, line and column (and
where it ends, for edits of the text in place).

The loader is strict where YAML is lenient: duplicate keys, non-string keys, merge keys (`<<`) and
recursive aliases are errors.  Keys keep their source text, so `3.10:` stays "3.10" (YAML would
read the float 3.1).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.constructor import SafeConstructor

from relforge.errors import NOWHERE, ConfigError, Span

try:  # libyaml is ~10x faster; PyYAML wheels ship it, fall back to pure Python otherwise
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

_MAX_NODES = 200_000  # guards against alias bombs ("billion laughs")


@dataclass(frozen=True, eq=False)
class Node:
    span: Span
    # Just past the node's text (YAML's end mark); a block collection's end is where the next
    # token starts, so the last line of its content is its last item's.
    end: Span = field(default=NOWHERE, kw_only=True)


@dataclass(frozen=True, eq=False)
class Scalar(Node):
    value: Any
    text: str
    quoted: bool = False

    @property
    def is_null(self) -> bool:
        return self.value is None


@dataclass(frozen=True, eq=False)
class Seq(Node):
    items: tuple[Node, ...]
    flow: bool = field(default=False, kw_only=True)  # written `[a, b]`


@dataclass(frozen=True, eq=False)
class Entry:
    key: str
    key_span: Span
    value: Node


@dataclass(frozen=True, eq=False)
class Map(Node):
    entries: dict[str, Entry] = field(default_factory=dict)
    flow: bool = field(default=False, kw_only=True)  # written `{a: 1}`

    def get(self, key: str) -> Node | None:
        entry = self.entries.get(key)
        return entry.value if entry else None

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries.values())


def kind_of(node: Node) -> str:
    """A short human name for what the node holds, for error messages."""
    if isinstance(node, Map):
        return "a mapping"
    if isinstance(node, Seq):
        return "a list"
    assert isinstance(node, Scalar)
    value = node.value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {node.text!r}"
    if isinstance(value, int | float):
        return f"the number {node.text}"
    return f"the string {node.text!r}"


def parse_yaml(text: str, file: str) -> Node:
    """Parse one YAML document into located nodes, or raise ConfigError."""
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = Span(file, mark.line + 1, mark.column + 1) if mark else Span(file)
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigError(f"invalid YAML: {problem}", where=where) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", where=Span(file)) from None
    except (ValueError, UnicodeError) as exc:  # e.g. "found unhashable key", bad encodings
        raise ConfigError(f"invalid YAML: {exc}", where=Span(file)) from None
    if root is None:
        raise ConfigError("the file is empty", where=Span(file))
    return _Builder(file).build(root)


class _Builder:
    def __init__(self, file: str) -> None:
        self.file = file
        self.constructor = SafeConstructor()
        self.count = 0
        self.active: set[int] = set()

    def span(self, node: yaml.Node) -> Span:
        mark = node.start_mark
        return Span(self.file, mark.line + 1, mark.column + 1)

    def end(self, node: yaml.Node) -> Span:
        mark = node.end_mark
        return Span(self.file, mark.line + 1, mark.column + 1)

    def build(self, node: yaml.Node, path: str = "") -> Node:
        self.count += 1
        if self.count > _MAX_NODES:
            raise ConfigError(
                f"the document expands to more than {_MAX_NODES} values (alias expansion?)",
                where=self.span(node),
            )
        if id(node) in self.active:
            raise ConfigError("recursive YAML alias", where=self.span(node))
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.MappingNode):
                return self.build_map(node, path)
            if isinstance(node, yaml.SequenceNode):
                return Seq(
                    self.span(node),
                    tuple(self.build(item, f"{path}[{i}]") for i, item in enumerate(node.value)),
                    end=self.end(node),
                    flow=bool(node.flow_style),
                )
            assert isinstance(node, yaml.ScalarNode)
            return self.build_scalar(node)
        finally:
            self.active.discard(id(node))

    def build_scalar(self, node: yaml.ScalarNode) -> Scalar:
        try:
            value = self.constructor.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
            raise ConfigError(
                f"cannot read the value {node.value!r}: {exc}", where=self.span(node)
            ) from None
        return Scalar(
            self.span(node),
            value,
            str(node.value),
            quoted=node.style in ("'", '"'),
            end=self.end(node),
        )

    def build_map(self, node: yaml.MappingNode, path: str) -> Map:
        entries: dict[str, Entry] = {}
        for key_node, value_node in node.value:
            key_span = self.span(key_node)
            if not isinstance(key_node, yaml.ScalarNode):
                raise ConfigError("mapping keys must be plain strings", where=key_span)
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise ConfigError(
                    "YAML merge keys (<<) are not supported",
                    where=key_span,
                    hint="use `extends:` between releases, or repeat the values",
                )
            key = str(key_node.value)
            sub = f"{path}.{key}" if path else key
            if key in entries:
                first = entries[key].key_span
                raise ConfigError(
                    f"duplicate key {key!r} (first defined on line {first.line})",
                    where=key_span,
                    key=sub,
                )
            entries[key] = Entry(key, key_span, self.build(value_node, sub))
        return Map(self.span(node), entries, end=self.end(node), flow=bool(node.flow_style))


def merge(base: Node, over: Node, *, path: str = "", base_name: str = "") -> Node:
    """Deep-merge `over` onto `base`: mappings merge key by key, anything else is replaced,
    and a null value in `over` deletes the key.  Deleting a key `base` does not have is an
    error: it is almost always a misspelt name (`cu1299: null`) that leaves the real one in."""
    if not (isinstance(base, Map) and isinstance(over, Map)):
        return over
    entries = dict(base.entries)
    for entry in over:
        value = entry.value
        sub = f"{path}.{entry.key}" if path else entry.key
        if isinstance(value, Scalar) and value.is_null:
            if entries.pop(entry.key, None) is None:
                raise ConfigError(
                    f"removes {entry.key!r}, which "
                    + (f"release {base_name}" if base_name else "the base")
                    + " does not have",
                    where=entry.key_span,
                    key=sub,
                    hint=("defined: " + ", ".join(base.entries)) if base.entries else None,
                )
        elif entry.key in entries:
            merged = merge(entries[entry.key].value, value, path=sub, base_name=base_name)
            entries[entry.key] = Entry(entry.key, entry.key_span, merged)
        else:
            entries[entry.key] = entry
    return Map(over.span, entries)


def without(node: Map, *keys: str) -> Map:
    """The mapping minus some keys."""
    return Map(node.span, {k: e for k, e in node.entries.items() if k not in keys})
