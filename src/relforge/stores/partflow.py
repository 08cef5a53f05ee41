"""Move an object's parts in parallel while hashing the whole object in order.

Each part is fetched into a buffer (a local read, a ranged GET), handed to an action (send it
as a part, write it at its offset) and then fed to one sha256 in part order, so the caller
learns the sha256 of exactly the bytes that went through without holding the object.

The buffers are shared by the stores of a process (`shared_buffers`): at most `count` parts are
in flight across all their transfers, and each buffer is allocated once and reused — a fresh
16 MiB object per part let the C allocator keep about twice the bytes in flight (measured:
8 × 16 MiB parts, 302 MiB peak RSS; reused buffers, 176 MiB).  A worker takes a buffer before
it claims the next part and gives it back once the part is hashed, so a transfer's earliest
unhashed part always holds one and no transfer can starve another into a deadlock.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

from relforge.stores.parts import Part

Fetch = Callable[[Part, memoryview], None]  # fills the view (exactly the part's length)
Act = Callable[[Part, memoryview], object]


class Buffers:
    """Part buffers shared by a store's transfers: `count` of them, each reused."""

    def __init__(self, count: int, size: int) -> None:
        self.count = count
        self.size = size
        self._turns = threading.BoundedSemaphore(count)
        self._free: list[bytearray] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def take(self, need: int) -> Iterator[bytearray]:
        """A buffer of at least `need` bytes (waits while all are in use; `need` 0: only a
        turn, for work that holds no bytes)."""
        with self._turns:
            with self._lock:
                buffer = self._free.pop() if self._free else bytearray()
            if len(buffer) < need:
                buffer = bytearray(max(need, self.size))  # once per buffer, or a grown part
            try:
                yield buffer
            finally:
                with self._lock:
                    self._free.append(buffer)


_SHARED: dict[tuple[int, int], Buffers] = {}
_SHARED_LOCK = threading.Lock()


def shared_buffers(count: int, size: int) -> Buffers:
    """The process's buffers for `count` parts of `size`: every store opened with the same
    settings (the main store, the backup, the mirrors) takes its turns from the same ones, so a
    command holds `count` part buffers however many stores it writes (measured: publishing to a
    store and a mirror with a pool each, 356 MiB peak RSS; sharing one, the single store's)."""
    with _SHARED_LOCK:
        return _SHARED.setdefault((count, size), Buffers(count, size))


def body(view: memoryview) -> bytes | bytearray:
    """The part's bytes as an HTTP body: the buffer itself when the part fills it (botocore
    takes bytes or bytearray, not a view), else a copy (an object's last, shorter part)."""
    whole = view.obj
    if isinstance(whole, bytearray) and len(whole) == view.nbytes:
        return whole
    return view.tobytes()


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
    buffers: Buffers,
    workers: int,
) -> str:
    """Fetch every part, hand it to `act` (when given) and return the sha256 of all the bytes
    fetched, in part order (once every part was acted on).  The first failure stops the other
    workers and is raised."""
    digest = hashlib.sha256()
    order = _Order()
    need = max((p.length for p in parts), default=0)

    def claim() -> Part | None:
        with order.turn:
            if order.failed or order.claimed >= len(parts):
                return None
            part = parts[order.claimed]
            order.claimed += 1
            return part

    def work() -> None:
        while True:
            with buffers.take(need) as buffer:
                part = claim()
                if part is None:
                    return
                view = memoryview(buffer)[: part.length]
                try:
                    fetch(part, view)
                    # hashed as soon as the parts before it are: a part waits for its
                    # predecessors' reads, never for their (slower) sends
                    with order.turn:
                        while order.next != part.index and not order.failed:
                            order.turn.wait()
                        if order.failed:
                            return
                        digest.update(view)
                        order.next += 1
                        order.turn.notify_all()
                    if act is not None:
                        act(part, view)
                finally:
                    view.release()

    def guarded() -> None:
        try:
            work()
        except BaseException:
            with order.turn:
                order.failed = True
                order.turn.notify_all()
            raise

    _in_workers(max(1, min(workers, len(parts))), guarded)
    return digest.hexdigest()


def run_each(
    parts: Sequence[Part], *, act: Callable[[Part], None], buffers: Buffers, workers: int
) -> None:
    """`act` on every part in parallel (server-side part copies: no bytes come here), taking
    the same turns; the first failure stops the rest and is raised."""
    lock = threading.Lock()
    todo = list(reversed(parts))
    failed: list[BaseException] = []

    def work() -> None:
        while True:
            with buffers.take(0):
                with lock:
                    if failed or not todo:
                        return
                    part = todo.pop()
                try:
                    act(part)
                except BaseException as exc:
                    with lock:
                        failed.append(exc)
                    raise

    _in_workers(max(1, min(workers, len(parts))), work)


def _in_workers(count: int, work: Callable[[], None]) -> None:
    """`work` in `count` threads at once; a failure is raised once all of them have stopped."""
    with ThreadPoolExecutor(count, thread_name_prefix="relforge-part") as pool:
        futures = [pool.submit(work) for _ in range(count)]
    for future in futures:
        failure = future.exception()
        if failure is not None:
            raise failure
