"""The channel-root pages at the end of a run, converging when another run races this one.

The root pages are built from the variant folders' committed pages.  When a folder's page is
not the one its marker committed — another writer replaced the page or the marker between
this run's folder commit and its root build — the folder is planned again: commitcheck.py
finds the page another run's (rebuilt from the stored manifests, a new marker committed) or
changed by hand (refused, exit 5), and the root is built again after a random pause (two runs
settling one folder would otherwise rebuild it in turn).  A few rounds at most: a run still
losing the race after them refuses (exit 5), and its rerun finishes the work.
"""

from __future__ import annotations

import random
import time
from collections.abc import Set

from relforge.promote.channelview import ChannelView
from relforge.promote.index.folder import FolderPlan, apply_folder, plan_folder, refuse_drift
from relforge.promote.index.rootpages import RootPlan, UncommittedPage, refresh_root
from relforge.stores.objectstore import ObjectStore

ROUNDS = 4
PAUSE = 0.25  # seconds: the longest pause before the first new round, doubled each round


def settle_root(
    store: ObjectStore,
    view: ChannelView,
    *,
    workers: int = 16,
    absent: Set[str] = frozenset(),
    rounds: int = ROUNDS,
) -> tuple[RootPlan | None, tuple[FolderPlan, ...]]:
    """`refresh_root`, rebuilding any folder whose committed page another run replaced
    (`absent`: keys about to be deleted, which no page may list).  The root's plan and the
    folders rebuilt on the way."""
    rebuilt: list[FolderPlan] = []
    for round_ in range(rounds):
        try:
            return refresh_root(store, view.root, workers=workers), tuple(rebuilt)
        except UncommittedPage as exc:
            if round_ == rounds - 1:
                raise
            # two runs settling the same folder at once would rebuild it in turn: a random
            # pause lets one of them finish first
            time.sleep(random.uniform(0, PAUSE * 2**round_))
            # the manifests stored now (the other run's too), read and judged anew
            plan = plan_folder(store, exc.folder, view.fresh(), workers=workers, absent=absent)
            refuse_drift([plan], store)  # a page changed by hand is refused here
            if plan.changed:
                apply_folder(store, plan, workers=workers)
                rebuilt.append(plan)
    raise AssertionError("unreachable")  # pragma: no cover
