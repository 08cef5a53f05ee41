"""The variant metadata format: labels, properties, `variant.json` and `*-variants.json`.

The format is a draft (PEP 825); relforge writes what the reference reader, variantlib 0.2.2,
reads: `$schema`, `default-priorities.namespace`, one `providers` entry per namespace and the
`variants` mapping label → namespace → feature → [values].  The version is pinned here only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from relforge.errors import ConfigError
from relforge.matrix.cell import Cell
from relforge.matrix.schema import Release, VariantLabelRule, WheelVariants
from relforge.matrix.selector import selector_from_match

SCHEMA_URL = "https://variants-schema.wheelnext.dev/v0.2.0.json"  # the one pinned version
DIST_INFO_FILE = "variant.json"
NULL_LABEL = "null"
LABEL = re.compile(r"[0-9a-z._]+\Z")
_NAME = re.compile(r"[a-z0-9_]+\Z")
_VALUE = re.compile(r"[a-z0-9_.]+\Z")
_PLUGIN_API = re.compile(r"[\w.]+(?:\s*:\s*[\w.]+)?\Z")  # variantlib's pattern

Property = tuple[str, str, str]


@dataclass(frozen=True, kw_only=True)
class VariantSpec:
    """What one cell's variant wheel is: its label and its properties."""

    label: str
    properties: tuple[Property, ...]

    def as_json(self) -> dict[str, dict[str, list[str]]]:
        out: dict[str, dict[str, list[str]]] = {}
        for namespace, feature, value in self.properties:
            out.setdefault(namespace, {}).setdefault(feature, []).append(value)
        return out


def parse_property(text: str) -> Property:
    """`nvidia :: cuda_version_lower_bound :: 12.8` → its three parts; ValueError if malformed."""
    parts = [p.strip() for p in text.split("::")]
    if len(parts) != 3 or not (
        _NAME.match(parts[0]) and _NAME.match(parts[1]) and _VALUE.match(parts[2])
    ):
        raise ValueError(
            f"{text!r} is not `namespace :: feature :: value` (namespace and feature: a-z, 0-9, "
            "_; value: also '.')"
        )
    return parts[0], parts[1], parts[2]


def check_wheel_variants(release: Release) -> None:
    """Load-time checks of a release's `variants:`."""
    spec = release.variants
    if spec is None:
        return
    path = f"releases.{release.name}.variants"
    for namespace in spec.providers:
        if not _NAME.match(namespace):
            raise ConfigError(
                f"namespace {namespace!r} must be a-z, 0-9 and _",
                where=spec.at("providers"),
                key=f"{path}.providers.{namespace}",
            )
    for namespace, provider in spec.providers.items():
        if provider.plugin_api and not _PLUGIN_API.match(provider.plugin_api):
            raise ConfigError(
                f"{provider.plugin_api!r} is not `module` or `module:attribute`",
                where=spec.at("providers"),
                key=f"{path}.providers.{namespace}.plugin_api",
            )
    if not spec.providers:
        raise ConfigError(
            "name at least one provider (namespace → requires)",
            where=spec.at("providers"),
            key=f"{path}.providers",
        )
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", spec.folder):
        raise ConfigError("must name one folder", where=spec.at("folder"), key=f"{path}.folder")
    seen: dict[str, frozenset[Property]] = {}
    for i, rule in enumerate(spec.wheels):
        rpath = f"{path}.wheels[{i}]"
        try:
            selector_from_match(rule.match, release.axes)
            props = frozenset(parse_property(p) for p in rule.properties)
        except ValueError as exc:
            raise ConfigError(str(exc), where=rule.span, key=rpath) from None
        _check_label(rule, props, rpath)
        listed = [p.strip() for p in rule.properties]
        twice = sorted({p for p in listed if listed.count(p) > 1})
        if twice:
            raise ConfigError(
                f"property {twice[0]!r} is listed twice (variantlib refuses the variant)",
                where=rule.at("properties"),
                key=f"{rpath}.properties",
            )
        for namespace, _, _ in props:
            if namespace not in spec.providers:
                raise ConfigError(
                    f"namespace {namespace!r} has no provider",
                    where=rule.at("properties"),
                    key=f"{rpath}.properties",
                    hint=f"add it under {path}.providers",
                )
        if seen.setdefault(rule.label, props) != props:
            raise ConfigError(
                f"label {rule.label!r} is given two different sets of properties",
                where=rule.at("label"),
                key=f"{rpath}.label",
                hint="a variant label names exactly one set of properties",
            )


def _check_label(rule: VariantLabelRule, props: frozenset[Property], path: str) -> None:
    if not LABEL.match(rule.label):
        raise ConfigError(
            f"variant label {rule.label!r} must be 0-9, a-z, '_' and '.'",
            where=rule.at("label"),
            key=f"{path}.label",
        )
    if (rule.label == NULL_LABEL) != (not props):
        raise ConfigError(
            "the null label has no properties, and only the null label has none",
            where=rule.at("label"),
            key=f"{path}.label",
        )


def variant_for(cell: Cell, release: Release) -> VariantSpec | None:
    """The variant wheel a (wheel) cell becomes, or None when no rule matches it."""
    spec = release.variants
    if spec is None or cell.package_type != "wheel":
        return None
    for rule in spec.wheels:
        if selector_from_match(rule.match, release.axes).matches(cell):
            props = tuple(sorted(parse_property(p) for p in rule.properties))
            return VariantSpec(label=rule.label, properties=props)
    return None


def _providers(spec: WheelVariants) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for namespace, provider in spec.providers.items():
        entry: dict[str, Any] = {"requires": list(provider.requires)}
        if provider.plugin_api:
            entry["plugin-api"] = provider.plugin_api
        out[namespace] = entry
    return out


def document(
    spec: WheelVariants,
    variants: Mapping[str, VariantSpec],
    published: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """`variant.json` (one label) or `{name}-{version}-variants.json` (every label).  Both
    carry the priorities and providers of every namespace of the release, so that the null
    variant's file and every wheel's agree with the index-level one.  `published` (the
    providers of a variants.json being merged into) keeps the namespaces this release no
    longer names, after its own: their labels stay in the document and need them."""
    providers = _providers(spec)
    for namespace, provider in (published or {}).items():
        providers.setdefault(namespace, provider)
    return {
        "$schema": SCHEMA_URL,
        "default-priorities": {"namespace": list(providers)},
        "providers": providers,
        "variants": {label: v.as_json() for label, v in sorted(variants.items())},
    }


def read_providers(data: bytes, where: str) -> dict[str, Any]:
    """namespace → provider entry of a variant.json or variants.json, in its priority order;
    ValueError for what variantlib refuses: no providers, `default-priorities.namespace` not
    listing exactly the providers, or a namespace of the variants without a provider."""
    doc = json.loads(data)
    providers = doc.get("providers") if isinstance(doc, dict) else None
    if not isinstance(providers, dict) or not all(isinstance(p, dict) for p in providers.values()):
        raise ValueError(f"{where}: no `providers` mapping")
    defaults = doc.get("default-priorities")
    priorities = defaults.get("namespace") if isinstance(defaults, dict) else None
    if (
        not isinstance(priorities, list)
        or not all(isinstance(ns, str) for ns in priorities)
        or not priorities
        or set(priorities) != set(providers)
        or len(set(priorities)) != len(priorities)
    ):
        raise ValueError(
            f"{where}: default-priorities.namespace must list each provider's namespace once "
            f"(providers: {', '.join(sorted(providers)) or 'none'})"
        )
    used = {ns for namespaces in doc["variants"].values() for ns in namespaces}
    missing = sorted(used - set(providers))
    if missing:
        raise ValueError(f"{where}: namespace(s) {', '.join(missing)} have no provider")
    return {ns: providers[ns] for ns in priorities}


def dumps(data: Mapping[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()


def read_variants(data: bytes, where: str) -> dict[str, frozenset[Property]]:
    """label → properties of a variant.json or variants.json; ValueError when malformed."""
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{where}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("$schema") != SCHEMA_URL:
        raise ValueError(f"{where}: $schema is not {SCHEMA_URL}")
    variants = doc.get("variants")
    if not isinstance(variants, dict):
        raise ValueError(f"{where}: no `variants` mapping")
    out: dict[str, frozenset[Property]] = {}
    for label, namespaces in variants.items():
        if not LABEL.match(label):
            raise ValueError(f"{where}: {label!r} is not a variant label (0-9, a-z, '_', '.')")
        if not isinstance(namespaces, dict):
            raise ValueError(f"{where}: variants.{label} is not a mapping")
        props = set()
        for ns, features in namespaces.items():
            if not isinstance(features, dict):
                raise ValueError(f"{where}: variants.{label}.{ns} is not a mapping")
            for feature, values in features.items():
                at = f"variants.{label}.{ns}.{feature}"
                if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                    raise ValueError(f"{where}: {at} is not a list of strings")
                for value in values:
                    try:
                        props.add(parse_property(f"{ns} :: {feature} :: {value}"))
                    except ValueError as exc:
                        raise ValueError(f"{where}: {at}: {exc}") from None
        out[label] = frozenset(props)
    return out


def check_variant_names(release: Release, cells: Iterable[Cell], taken: Iterable[str] = ()) -> None:
    """Two cells must not become one variant wheel file name (the label replaces the local
    version, so axis values need labels of their own), and the variant folder must not be an
    index folder of the channel (`taken`: other releases' variants; this one's cells count),
    whose pages publishing the variant wheels would rewrite."""
    spec = release.variants
    if spec is None:
        return
    cells = list(cells)
    folders = {*taken, *(c.upload_subfolder for c in cells)}
    if spec.folder in folders:
        raise ConfigError(
            f"the variant folder {spec.folder!r} is also an index folder {spec.folder} of "
            "ordinary wheels; publishing variant wheels would rewrite its pages",
            where=spec.at("folder"),
            key=f"releases.{release.name}.variants.folder",
            hint="keep the default `variant`, or name a folder no variant uses",
        )
    seen: dict[tuple[str, str, str], Cell] = {}
    for cell in cells:
        variant = variant_for(cell, release)
        if variant is None:
            continue
        key = (variant.label, cell.abi_tag or "", cell.platform_tag or "")
        other = seen.setdefault(key, cell)
        if other is not cell:
            raise ConfigError(
                f"cells {other.id} and {cell.id} both become the variant wheel "
                f"…-{cell.abi_tag}-{cell.platform_tag}-{variant.label}.whl",
                where=spec.at("wheels"),
                key=f"releases.{release.name}.variants.wheels",
                hint="give each axis value its own label (match on the axis, e.g. "
                "{variant: cpu, numpy: '2.x'})",
            )
