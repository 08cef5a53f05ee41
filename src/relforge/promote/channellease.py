"""The writer lease of a channel: `relforge/leases/<channel>.json` in the main store.

Every command that changes a channel (publish, promote, yank, index) holds its channel's lease
from before it reads the channel to plan until it has applied the plan, so two writers of one
channel take turns and each plans on what the other finished (relforge.stores.lease says how a
lease is taken, renewed, waited for and taken over).  Dry runs and read-only commands never
take it.  The key is outside every wheel folder, so no index page lists it, and outside the
manifests and records verify reads, so it is never a finding.  The lease lives in the main
store only: the mirrors are written by the same runs, under the same lease.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from types import TracebackType

from relforge.stores.lease import Lease, LeasePolicy, holding
from relforge.stores.objectstore import ObjectStore

LEASES = "relforge/leases"


def lease_key(channel: str) -> str:
    return f"{LEASES}/{channel}.json"


class LeaseScope:
    """The leases one command run holds (none with policy None: a dry run).  A plan function
    calls `take` as soon as it knows its store and channels, before it reads them; the leases
    are released when the scope ends (after the plan was applied)."""

    def __init__(self, command: str, policy: LeasePolicy | None) -> None:
        self.command = command
        self.policy = policy
        self.held: dict[str, Lease] = {}
        self._stack = contextlib.ExitStack()

    def take(self, store: ObjectStore, channels: Iterable[str]) -> None:
        """Hold the lease of each channel, taken in name order (two writers of the same
        channels never wait on each other crosswise)."""
        if self.policy is None:
            return
        for channel in sorted(set(channels) - set(self.held)):
            self.held[channel] = self._stack.enter_context(
                holding(
                    store,
                    lease_key(channel),
                    what=f"the {channel} channel's lease",
                    command=f"relforge {self.command}",
                    policy=self.policy,
                )
            )

    def __enter__(self) -> LeaseScope:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return self._stack.__exit__(kind, exc, tb)


def lease_scope(command: str, policy: LeasePolicy | None) -> LeaseScope:
    return LeaseScope(command, policy)
