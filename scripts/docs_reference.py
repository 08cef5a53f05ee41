"""Regenerate docs/reference/ from the code (`make docs`): matrix keys and JSON Schema, checks,
lint rules, every command's --help, exit codes.  Prints the pages that changed."""

from __future__ import annotations

import sys
from pathlib import Path

from relforge.cli import cli
from relforge.reference import write_reference

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "reference"
    for path in write_reference(out, cli):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
