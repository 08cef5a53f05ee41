"""Stopping running builds when the user interrupts: every build process group and container
registers how to kill it, and an interrupt kills them all (compilers started in their own
sessions would otherwise run on)."""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable, Iterator

_lock = threading.Lock()
_kills: dict[int, Callable[[], None]] = {}
_ids = itertools.count()
_requested = threading.Event()


def reset() -> None:
    """A new run starts: forget an earlier interrupt."""
    _requested.clear()


def requested() -> bool:
    return _requested.is_set()


@contextlib.contextmanager
def cancellable(kill: Callable[[], None]) -> Iterator[None]:
    """While the block runs, `cancel_all()` calls `kill`."""
    with _lock:
        key = next(_ids)
        _kills[key] = kill
    if _requested.is_set():  # the interrupt came while this process was starting
        with contextlib.suppress(Exception):
            kill()
    try:
        yield
    finally:
        with _lock:
            _kills.pop(key, None)


def cancel_all() -> None:
    _requested.set()  # and no new process starts
    with _lock:
        kills = list(_kills.values())
    for kill in kills:
        with contextlib.suppress(Exception):
            kill()
