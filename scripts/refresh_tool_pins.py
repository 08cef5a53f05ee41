#!/usr/bin/env python3
"""Refresh src/relforge/resources/tool_pins.yaml: the sha256 of every wheel of each pinned tool.

    python scripts/refresh_tool_pins.py            # re-read the recorded versions' wheels
    python scripts/refresh_tool_pins.py uv=0.14.0  # move a tool to another version

The digests come from the index's JSON simple API (PEP 691; PyPI by default); each is written
with its wheel's platform tag as a comment.  Review the diff, then regenerate the workflows.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from pathlib import Path

import yaml
from packaging.utils import parse_wheel_filename
from packaging.version import Version

PINS = Path(__file__).resolve().parent.parent / "src" / "relforge" / "resources" / "tool_pins.yaml"
JSON_SIMPLE = "application/vnd.pypi.simple.v1+json"


def wheels(index: str, name: str, version: str) -> list[tuple[str, str]]:
    """(sha256, platform tag) of each wheel of `name` `version`, sorted by file name."""
    request = urllib.request.Request(
        f"{index.rstrip('/')}/{name}/", headers={"Accept": JSON_SIMPLE}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        files = json.load(response)["files"]
    found = []
    for entry in files:
        filename = entry["filename"]
        if not filename.endswith(".whl"):
            continue
        _, wheel_version, _, tags = parse_wheel_filename(filename)
        if wheel_version == Version(version) and "sha256" in entry.get("hashes", {}):
            platform = ".".join(sorted({tag.platform for tag in tags}))
            found.append((filename, entry["hashes"]["sha256"], platform))
    if not found:
        raise SystemExit(f"{name} {version}: no wheel on {index}")
    return [(digest, platform) for _, digest, platform in sorted(found)]


def render(header: str, pins: dict[str, dict[str, object]], index: str) -> str:
    lines = [header.rstrip("\n")]
    for name, entry in pins.items():
        comment = entry.get("comment", "")
        lines.append(f"{name}:{f'  # {comment}' if comment else ''}")
        lines.append(f"  version: {entry['version']}")
        lines.append("  sha256:")
        for digest, platform in wheels(index, name, str(entry["version"])):
            lines.append(f"    - {digest}  # {platform}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bumps", nargs="*", metavar="TOOL=VERSION", help="move TOOL to VERSION")
    parser.add_argument("--pins", type=Path, default=PINS, help="pins file to refresh")
    parser.add_argument("--index", default="https://pypi.org/simple", help="a PEP 691 index")
    args = parser.parse_args(argv)

    text = args.pins.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    header = "".join(line for line in lines if line.startswith("#"))
    comments = {
        line.split(":", 1)[0]: line.split("#", 1)[1].strip()
        for line in lines
        if line[:1].isalnum() and "#" in line
    }
    pins = {
        name: {"version": entry["version"], "comment": comments.get(name, "")}
        for name, entry in (yaml.safe_load(text) or {}).items()
    }
    for bump in args.bumps:
        name, _, version = bump.partition("=")
        if not version or name not in pins:
            raise SystemExit(f"{bump!r}: expected TOOL=VERSION for one of {', '.join(pins)}")
        pins[name]["version"] = version
    new = render(header, pins, args.index)
    if new != text:
        args.pins.write_text(new, encoding="utf-8")
        print(f"{args.pins}: updated")
    else:
        print(f"{args.pins}: unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
