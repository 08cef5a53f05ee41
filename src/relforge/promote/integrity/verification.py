"""The entry point of `relforge verify`: verify a channel in its stores, optionally plan a
repair, optionally apply it and verify again."""

from __future__ import annotations

from dataclasses import dataclass

from relforge.errors import NothingToDoError
from relforge.matrix.schema import ChannelName, Matrix
from relforge.promote.channelview import channel_view
from relforge.promote.integrity.repair import execute_repair, plan_repair
from relforge.promote.integrity.storeverify import channel_truth, verify_channel
from relforge.promote.integrity.verifyoutcome import VerifyOutcome
from relforge.promote.mirrors import select_stores
from relforge.promote.publishing import open_publishing


@dataclass(frozen=True, kw_only=True)
class VerifyRequest:
    """What `relforge verify` asks for: `channel` of `matrix` compared with its manifests
    and pages in the store named `store_name` (default: every store); `repair`: the repair
    planned, `execute`: applied; `trust_service`: the store's own checksums taken for hashing."""

    matrix: Matrix
    channel: ChannelName
    store_name: str | None = None
    repair: bool = False
    execute: bool = False
    workers: int = 32
    trust_service: bool = False


def check_channel(request: VerifyRequest) -> VerifyOutcome:
    """Verify (and with `repair`, plan; with `execute`, apply and verify again)."""
    matrix, channel, store_name = request.matrix, request.channel, request.store_name
    repair, execute = request.repair, request.execute
    workers, trust_service = request.workers, request.trust_service
    publishing = open_publishing(matrix)
    here = publishing.channel(channel)
    stores = publishing.named_stores()
    chosen = select_stores(stores, store_name, matrix.file)
    truth = channel_truth(here)
    before = verify_channel(here, truth, chosen, workers=workers, trust_service=trust_service)
    if not truth.vouched and not before.findings:
        raise NothingToDoError(
            f"no manifest of {matrix.project.name} is stored in the {channel} channel of "
            f"{stores[0].store.url}, and no file of it is there",
            key="--channel",
            hint="publish (or promote) to the channel first",
        )
    if not repair:
        return VerifyOutcome(before=before)
    plan = plan_repair(publishing, truth, before, stores)
    if not execute or not plan.actions:
        return VerifyOutcome(before=before, repair=plan)
    view = channel_view(here, workers=min(workers, 16))
    done = execute_repair(plan, channel, view, workers=workers)
    after = verify_channel(here, truth, chosen, workers=workers, trust_service=trust_service)
    return VerifyOutcome(before=before, repair=plan, executed=done, after=after)
