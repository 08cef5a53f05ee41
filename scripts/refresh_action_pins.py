#!/usr/bin/env python3
"""Refresh src/relforge/resources/action_pins.yaml: the commit each pinned tag points at.

    python scripts/refresh_action_pins.py                       # re-resolve every recorded tag
    python scripts/refresh_action_pins.py actions/checkout=v4.2.3  # move one action to a new tag

Each tag is resolved with `git ls-remote` (an annotated tag is peeled to its commit).  The file
is rewritten only when something changed; review the diff, then regenerate the workflows.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import yaml

PINS = (
    Path(__file__).resolve().parent.parent / "src" / "relforge" / "resources" / "action_pins.yaml"
)


def resolve(base_url: str, action: str, tag: str) -> str:
    """The commit SHA `tag` of the action's repository points at."""
    owner_repo = "/".join(action.split("/")[:2])  # owner/repo/sub/path → owner/repo
    url = f"{base_url.rstrip('/')}/{owner_repo}"
    done = subprocess.run(
        ["git", "ls-remote", "--tags", url, f"refs/tags/{tag}", f"refs/tags/{tag}^{{}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{action}: git ls-remote {url} failed: {done.stderr.strip()}")
    refs: dict[str, str] = {}
    for line in done.stdout.splitlines():
        commit, tab, ref = line.partition("\t")
        if tab:
            refs[ref] = commit
    sha = refs.get(f"refs/tags/{tag}^{{}}") or refs.get(f"refs/tags/{tag}")
    if not sha:
        raise SystemExit(f"{action}: no tag {tag} in {url}")
    return sha


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bumps", nargs="*", metavar="ACTION=TAG", help="move ACTION to TAG")
    parser.add_argument("--pins", type=Path, default=PINS, help="pins file to refresh")
    parser.add_argument("--base-url", default="https://github.com", help="where repositories are")
    args = parser.parse_args(argv)

    text = args.pins.read_text(encoding="utf-8")
    header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    pins = yaml.safe_load(text) or {}
    for bump in args.bumps:
        action, _, tag = bump.partition("=")
        if not tag:
            parser.error(f"{bump!r}: expected ACTION=TAG")
        pins.setdefault(action, {})["tag"] = tag
    refreshed = {
        action: {"tag": entry["tag"], "sha": resolve(args.base_url, action, entry["tag"])}
        for action, entry in pins.items()
    }
    changed = [a for a in refreshed if pins[a].get("sha") != refreshed[a]["sha"]]
    if not changed:
        print(f"{args.pins}: every pin is current")
        return 0
    body = "".join(
        f"{action}:\n  tag: {entry['tag']}\n  sha: {entry['sha']}\n"
        for action, entry in refreshed.items()
    )
    args.pins.write_text(header + body, encoding="utf-8")
    for action in changed:
        print(f"{action}: {refreshed[action]['tag']} → {refreshed[action]['sha']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
