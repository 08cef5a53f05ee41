"""Where the release itself writes what upstream decides: its own YAML nodes (not the values
`extends` brought in from another release) and every `==` pin of its variants and runtime rules,
each with the node it can be edited at, or the place it is inherited from."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.utils import canonicalize_name
from packaging.version import Version

from relforge.errors import Span
from relforge.matrix.expand import candidates
from relforge.matrix.schema import Matrix, Release
from relforge.matrix.selector import selector_from_match
from relforge.matrix.source import Map, Node, Scalar, Seq
from relforge.matrix.values import parse_requirement, pinned_version


def child(node: Node | None, *path: str | int) -> Node | None:
    """The node at `path` below `node` (keys of mappings, indexes of lists), or None."""
    for step in path:
        if isinstance(step, int) and isinstance(node, Seq) and 0 <= step < len(node.items):
            node = node.items[step]
        elif isinstance(step, str) and isinstance(node, Map):
            node = node.get(step)
        else:
            return None
    return node


def own_release(root: Node, release: str) -> Map | None:
    """The release's own mapping in the file (before `extends` is applied)."""
    found = child(root, "releases", release)
    return found if isinstance(found, Map) else None


@dataclass(frozen=True, kw_only=True)
class PinSite:
    """One `name==version` requirement the release declares."""

    text: str
    name: str  # canonical
    version: Version
    variants: frozenset[str]  # the variants whose wheels declare it
    key: str  # its key path, for messages
    where: Span
    node: Scalar | None  # the release's own scalar; None when inherited from another release


def pin_sites(matrix: Matrix, release: Release, own: Map | None) -> list[PinSite]:
    """Every exact pin of the release's variants and runtime_requires rules, in file order."""
    base = f"releases.{release.name}"
    sites = []
    for vname, variant in release.accelerators.items():
        items = child(own, "accelerators", vname, "extra_install_requires")
        for i, text in enumerate(variant.extra_install_requires):
            key = f"{base}.accelerators.{vname}.extra_install_requires[{i}]"
            node = _own_scalar(items, i, text)
            where = node.span if node else variant.at("extra_install_requires")
            site = _site(text, frozenset({vname}), key, where, node)
            if site is not None:
                sites.append(site)
    cells = [c.cell for c in candidates(matrix, release) if c.built]
    rules = child(own, "runtime_requires")
    for i, rule in enumerate(release.runtime_requires):
        selector = selector_from_match(rule.match, tuple(release.axes))
        matched = frozenset(c.variant for c in cells if selector.matches(c))
        for j, text in enumerate(rule.add):
            key = f"{base}.runtime_requires[{i}].add[{j}]"
            node = _own_scalar(child(rules, i, "add"), j, text)
            site = _site(text, matched, key, node.span if node else rule.at("add"), node)
            if site is not None:
                sites.append(site)
    return sites


def _own_scalar(items: Node | None, index: int, text: str) -> Scalar | None:
    node = child(items, index)
    if isinstance(node, Scalar) and node.value == text:
        return node
    return None


def _site(
    text: str, variants: frozenset[str], key: str, where: Span, node: Scalar | None
) -> PinSite | None:
    version = pinned_version(text)
    if version is None:
        return None
    name = str(canonicalize_name(parse_requirement(text).name))
    return PinSite(
        text=text, name=name, version=version, variants=variants, key=key, where=where, node=node
    )
