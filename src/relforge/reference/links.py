"""Where a check's or lint rule's reference entry is, for error hints: it imports nothing, so
the CLI links a finding to its docs without loading the registries."""

from __future__ import annotations

import re

CHECKS_PAGE = "docs/reference/checks.md"
LINT_PAGE = "docs/reference/lint.md"


def anchor(text: str) -> str:
    """A stable anchor: lower case, runs of anything but letters and digits become one `-`."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def explained(check_id: str) -> str:
    """The words an error hint ends with: `RF-V043 is explained at docs/reference/…#rf-v043`."""
    return f"{check_id} is explained at {check_link(check_id)}"


def check_link(check_id: str) -> str:
    """The reference entry of a check (`RF-V043`) or lint rule (`RF-L001`):
    `docs/reference/checks.md#rf-v043`."""
    page = LINT_PAGE if check_id.startswith("RF-L") else CHECKS_PAGE
    return f"{page}#{anchor(check_id)}"
