"""Bounded retries with full jitter for the transient faults of a remote store.

A store decides which exceptions are transient (a 5xx, throttling, a reset connection, a body
cut short or not matching its checksum); this module only runs a call again after a random
pause (`uniform(0, min(cap, base * 2**n))`, "full jitter", so parallel workers that failed
together do not retry together), at most `attempts` times, and counts every retry so a command's
summary can say how many there were.  The last failure is raised unchanged when the attempts
run out or the failure is not transient.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """How often and how patiently to try one request."""

    attempts: int = 8  # tries in all; 10% independent faults leave 1 in 10^8 requests failing
    base: float = 0.05  # seconds: the first pause is at most this long
    cap: float = 2.0  # seconds: no pause is longer

    def pause(self, retry: int, rng: random.Random) -> float:
        """The pause before retry number `retry` (0 for the first)."""
        return rng.uniform(0.0, min(self.cap, self.base * (2**retry)))


class RetryCounter:
    """How many retries a store made (thread-safe: transfers run in parallel)."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()

    def add(self) -> None:
        with self._lock:
            self._count += 1

    @property
    def count(self) -> int:
        with self._lock:
            return self._count


class TransientFault(Exception):
    """A fault found by relforge itself that another try may not have (a short body, bytes
    that do not match the checksum the service sent with them)."""


class DigestMismatch(TransientFault):
    """The bytes read do not have the sha256 the store records for them."""

    def __init__(self, *, expected: str, got: str) -> None:
        super().__init__(f"the bytes read have sha256 {got}, not the stored {expected}")
        self.expected = expected
        self.got = got


def call_with_retries(
    call: Callable[[], T],
    *,
    transient: Callable[[BaseException], bool],
    policy: RetryPolicy,
    counter: RetryCounter,
    on_retry: Callable[[BaseException], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> T:
    """`call()`, tried again after a jittered pause while it fails transiently."""
    rng = rng or random.Random()
    retry = 0
    while True:
        try:
            return call()
        except Exception as exc:
            if retry + 1 >= policy.attempts or not transient(exc):
                raise
            counter.add()
            if on_retry is not None:
                on_retry(exc)
            sleep(policy.pause(retry, rng))
            retry += 1


def total_retries(stores: Iterable[object]) -> int:
    """The retries made by the distinct stores among `stores` (a store without a counter, such
    as a local directory, made none)."""
    seen: dict[int, int] = {}
    for store in stores:
        seen[id(store)] = int(getattr(store, "retries", 0))
    return sum(seen.values())
