"""Move an object's parts in parallel while hashing the whole object in order.

Each part is fetched (a local read, a ranged GET), handed to an action (send it as a part,
write it at its offset) and then fed to one sha256 in part order, so the caller learns the
sha256 of exactly the bytes that went through without holding the object.  The bytes in memory
are bounded by `slots`, a semaphore the store shares among all its transfers: a worker takes a
slot before it claims the next part and gives it back once the part is hashed, so a transfer's
earliest unhashed part always holds a slot and no transfer can starve another into a deadlock.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from relforge.promote.parts import Part

Fetch = Callable[[Part], bytes]
Act = Callable[[Part, bytes], object]


class _Order:
    """Which part is hashed next, and whether a worker failed (then everyone stops)."""

    def __init__(self) -> None:
        self.turn = threading.Condition()
        self.next = 0
        self.failed = False
        self.claimed = 0


def run_parts(
    parts: Sequence[Part],
    *,
    fetch: Fetch,
    act: Act | None,
    slots: threading.Semaphore,
    workers: int,
) -> str:
    """Fetch every part, hand it to `act` (when given) and return the sha256 of all the bytes
    fetched, in part order.  The first failure stops the other workers and is raised."""
    digest = hashlib.sha256()
    order = _Order()

    def claim() -> Part | None:
        with order.turn:
            if order.failed or order.claimed >= len(parts):
                return None
            part = parts[order.claimed]
            order.claimed += 1
            return part

    def work() -> None:
        while True:
            with slots:
                part = claim()
                if part is None:
                    return
                data = fetch(part)
                if act is not None:
                    act(part, data)
                with order.turn:
                    while order.next != part.index and not order.failed:
                        order.turn.wait()
                    if order.failed:
                        return
                    digest.update(data)
                    order.next += 1
                    order.turn.notify_all()

    def guarded() -> None:
        try:
            work()
        except BaseException:
            with order.turn:
                order.failed = True
                order.turn.notify_all()
            raise

    count = max(1, min(workers, len(parts)))
    with ThreadPoolExecutor(count, thread_name_prefix="relforge-part") as pool:
        futures = [pool.submit(guarded) for _ in range(count)]
    for future in futures:
        failure = future.exception()
        if failure is not None:
            raise failure
    return digest.hexdigest()


def run_each(
    parts: Sequence[Part], *, act: Callable[[Part], None], slots: threading.Semaphore, workers: int
) -> None:
    """`act` on every part in parallel (no bytes come back: server-side part copies), within
    the same slots; the first failure stops the rest and is raised."""

    def fetch(part: Part) -> bytes:
        act(part)
        return b""

    run_parts(parts, fetch=fetch, act=None, slots=slots, workers=workers)
