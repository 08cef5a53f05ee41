"""The reference of every matrix key, rendered from the matrix's JSON Schema (matrixschema.py),
so the page, the schema editors use and the loader all read the same dataclasses."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from relforge.reference.matrixschema import PATCH, matrix_json_schema
from relforge.reference.pageparts import anchor, banner, cell

Schema = dict[str, Any]


def _def_name(node: Schema) -> str | None:
    ref = node.get("$ref")
    return ref.rpartition("/")[2] if isinstance(ref, str) else None


def _type_text(node: Schema) -> str:
    name = _def_name(node)
    if name is not None:
        return f"[{name}](#{anchor(name)})" if name != "Match" else "[match](#match)"
    if "if" in node:
        return _type_text(node["else"])
    if "anyOf" in node:
        inner = [n for n in node["anyOf"] if n != {"type": "null"}]
        return " or ".join(_type_text(n) for n in inner) + " or null"
    if "enum" in node:
        return "one of " + ", ".join(f"`{v}`" for v in node["enum"])
    kind = node.get("type")
    if kind == "array":
        return "list of " + _type_text(node["items"])
    if kind == "object":
        keys = "name"
        if "propertyNames" in node and "enum" in node["propertyNames"]:
            keys = " / ".join(f"`{k}`" for k in node["propertyNames"]["enum"])
        elif "propertyNames" in node:
            keys = "`X.Y`"
        return f"mapping {keys} → {_type_text(node['additionalProperties'])}"
    if isinstance(kind, list):
        return str(node.get("title", "string"))
    if node.get("format") == "date":
        return "date (YYYY-MM-DD)"
    return str(kind)


def _children(node: Schema, path: str) -> Iterator[tuple[str, Schema]]:
    """(path, schema) of the values inside a non-object-definition node."""
    if "if" in node:
        yield from _children(node["else"], path)
    elif "anyOf" in node:
        for n in node["anyOf"]:
            yield from _children(n, path)
    elif "$ref" in node:
        yield path, node
    elif node.get("type") == "array":
        yield from _children(node["items"], f"{path}[]")
    elif node.get("type") == "object" and "additionalProperties" in node:
        key = (
            "<X.Y>" if "propertyNames" in node and "pattern" in node["propertyNames"] else "<name>"
        )
        yield from _children(node["additionalProperties"], f"{path}.{key}")


def _places(schema: Schema) -> dict[str, list[str]]:
    """Definition name → the key paths where it appears, breadth first from the top."""
    defs = schema["$defs"]
    places: dict[str, list[str]] = {"Matrix": ["(top level)"]}
    queue: list[tuple[str, Schema]] = [("", schema)]
    seen: set[str] = set()
    while queue:
        path, obj = queue.pop(0)
        for key, prop in obj.get("properties", {}).items():
            sub = f"{path}.{key}" if path else key
            for place, ref in _children(prop, sub):
                name = _def_name(ref)
                assert name is not None
                places.setdefault(name, []).append(place)
                if name not in seen:
                    seen.add(name)
                    queue.append((place, defs[name]))
    return places


def _table(obj: Schema) -> list[str]:
    required = set(obj.get("required", ()))
    lines = ["| key | type | required / default | description |", "| --- | --- | --- | --- |"]
    for key, prop in obj["properties"].items():
        if key in required:
            need = "required"
        elif "default" in prop:
            need = f"`{prop['default']}`".replace("'", '"')
        else:
            need = ""
        lines.append(
            f"| `{key}` | {cell(_type_text(prop))} | {need} | {cell(prop.get('description', ''))} |"
        )
    return lines


def matrix_keys_page() -> str:
    schema = matrix_json_schema()
    places = _places(schema)
    lines = [
        banner("matrixkeys.py"),
        "# Matrix keys",
        "",
        "Every key of a matrix file, read from the schema dataclasses "
        "(`relforge.matrix.schema`) that the loader fills.  The loader refuses an unknown key, "
        "a missing required key and a value of the wrong type, naming `file:line:column` and "
        "the key path.  The same facts are published as a JSON Schema: "
        "[matrix.schema.json](matrix.schema.json) (see [Editor support](#editor-support)).",
        "",
        "A release that `extends` another inherits its keys (not `version`, `date` or "
        "`notes`); mappings merge key by key, anything else is replaced, and a null deletes an "
        "inherited key.",
        "",
        "## Editor support",
        "",
        "Editors that use the YAML language server (VS Code's YAML extension, and others) "
        "complete and check a matrix when its first line names the schema, by a path relative "
        "to the matrix file (here from `matrix/`) or by the URL of the file in your copy of "
        "relforge:",
        "",
        "```yaml",
        "# yaml-language-server: $schema=../docs/reference/matrix.schema.json",
        "schema_version: 1",
        "```",
        "",
        "A release with `extends` is checked as a patch: any key may be left out, and a null "
        "deletes one.  The schema checks shape: keys, types, choices.  What only the loader "
        "can judge (a PEP 440 version, a variant named on a platform that does not exist) is "
        "checked by `relforge matrix check FILE`.",
        "",
    ]
    order = ["Matrix", *[n for n in places if n != "Matrix"]]
    for name in order:
        if name.endswith(PATCH):
            continue
        obj = schema if name == "Matrix" else schema["$defs"][name]
        title = "match" if name == "Match" else name
        lines += [f"## {title} {{#{anchor(title)}}}", ""]
        where = ", ".join(f"`{p}`" for p in dict.fromkeys(places[name]))
        lines += [f"At: {where}.", ""]
        if obj.get("description"):
            lines += [cell(obj["description"]), ""]
        if name == "Match":
            lines += [
                "A mapping of cell fields (`python`, `platform`, `variant`, `accelerator`, "
                "`package_type`, an axis name, …) to a value or a list of values; a cell "
                "matches when every field has one of its values.",
                "",
            ]
            continue
        lines += [*_table(obj), ""]
    return "\n".join(lines).rstrip() + "\n"
