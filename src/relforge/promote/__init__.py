"""Promotion: object stores, channel layout, package indexes, publish/promote plans, PyPI.

Release artifacts are promoted, never rebuilt: the bytes that were validated are the bytes
users install.  Every write is create-if-absent and carries its sha256; nothing is overwritten
except index pages, which are replaced atomically.

Entry points: `plan_publish` (relforge.promote.publish) and `plan_promote`
(relforge.promote.promote) plan the uploads and copies as a `Plan` that `render` prints and
`execute` (relforge.promote.plan) carries out; `plan_folder`/`apply_folder`
(relforge.promote.index.folder) rebuild index pages;
`plan_yank`/`apply_yank` (relforge.promote.yank) mark files yanked; `check_channel`
(relforge.promote.integrity.check) verifies a channel; `plan_stage` with `stage_wheels` and
`plan_pypi_upload` with `upload_release` (relforge.promote.pypi.flow) stage and upload to PyPI.
Stores implement the protocol of relforge.stores.store and are opened by URL with
`open_store` (relforge.stores.registry).

The names are imported on first use, so a command that needs one store module does not pay for
the rest of the package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from relforge.promote.integrity.check import check_channel
    from relforge.promote.plan import Plan, execute, render
    from relforge.promote.promote import plan_promote
    from relforge.promote.publish import plan_publish
    from relforge.promote.pypi.flow import plan_pypi_upload, stage_wheels, upload_release
    from relforge.promote.pypi.stage import plan_stage
    from relforge.promote.yank import apply_yank, plan_yank

_HOMES = {
    "check_channel": "relforge.promote.integrity.check",
    "Plan": "relforge.promote.plan",
    "execute": "relforge.promote.plan",
    "render": "relforge.promote.plan",
    "plan_promote": "relforge.promote.promote",
    "plan_publish": "relforge.promote.publish",
    "plan_stage": "relforge.promote.pypi.stage",
    "upload_release": "relforge.promote.pypi.flow",
    "plan_pypi_upload": "relforge.promote.pypi.flow",
    "stage_wheels": "relforge.promote.pypi.flow",
    "apply_yank": "relforge.promote.yank",
    "plan_yank": "relforge.promote.yank",
}

__all__ = [
    "Plan",
    "apply_yank",
    "check_channel",
    "execute",
    "plan_promote",
    "plan_publish",
    "plan_pypi_upload",
    "plan_stage",
    "plan_yank",
    "render",
    "stage_wheels",
    "upload_release",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
