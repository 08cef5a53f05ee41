"""A writer lease: one small object in a store that says who may write a part of it now.

The holder creates the object with a conditional write (`ObjectStore.create`: `IfNoneMatch: *`
on S3 and R2, a hard link locally), so of two writers at once exactly one holds it.  The object
names the holder (user@host), its pid, its command, when it was taken and when it expires; a
thread renews it every third of its time to live with a conditional replace on its ETag, and
the holder deletes it at the end (a conditional delete on its ETag: a lease taken over is never
removed by the one that lost it).

A second writer waits, saying every few seconds who holds it, up to `LeasePolicy.wait` seconds
(0: not at all), then refuses (exit 5) naming the holder.  A lease past its expiry (its holder
died or hangs) is taken over with a conditional replace on the ETag just read: of two takers
exactly one wins, and the takeover is said.  Expiry is judged by the waiter's clock against the
time the holder wrote; hosts whose clocks disagree by more than the time to live could take
over a live lease early, so keep clocks in sync (NTP) or the time to live long.

A conditional write retried after an attempt that may have landed reads as refused; every
lease carries a random token, so a writer that finds its own token holds the lease.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import secrets
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from relforge.errors import RefusedError
from relforge.stores.objectstore import ObjectStore

Say = Callable[[str], None]
JSON = "application/json"
DEFAULT_TTL = 60.0
DEFAULT_WAIT = 600.0
PROGRESS_EVERY = 5.0  # seconds between two "waiting for" lines


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True, kw_only=True)
class LeasePolicy:
    """How a writer takes a lease: its time to live, how long to wait for another holder
    (0: refuse at once), and where the waiting and takeover lines go."""

    ttl: float = DEFAULT_TTL
    wait: float = DEFAULT_WAIT
    say: Say = _stderr
    poll: float = 1.0  # seconds between two looks at a held lease (with jitter)


@dataclass(frozen=True, kw_only=True)
class Holder:
    """What a lease object says."""

    holder: str  # user@host
    host: str
    pid: int
    command: str
    token: str
    acquired: float  # epoch seconds
    expires: float

    def to_bytes(self) -> bytes:
        return json.dumps(
            {
                "schema_version": 1,
                "holder": self.holder,
                "host": self.host,
                "pid": self.pid,
                "command": self.command,
                "token": self.token,
                "acquired": self.acquired,
                "expires": self.expires,
            },
            indent=1,
        ).encode()

    @classmethod
    def parse(cls, data: bytes) -> Holder | None:
        """None when the bytes are not a lease (written by hand, cut short): such an object
        is treated as expired, so it never blocks writers forever."""
        try:
            doc = json.loads(data)
            return cls(
                holder=str(doc["holder"]),
                host=str(doc["host"]),
                pid=int(doc["pid"]),
                command=str(doc["command"]),
                token=str(doc["token"]),
                acquired=float(doc["acquired"]),
                expires=float(doc["expires"]),
            )
        except (ValueError, KeyError, TypeError):
            return None

    def who(self, now: float) -> str:
        """`ci@runner-3 pid 4242 (relforge promote), expires in 41 s`"""
        left = self.expires - now
        when = f"expires in {left:.0f} s" if left >= 0 else f"expired {-left:.0f} s ago"
        return f"{self.holder} pid {self.pid} ({self.command}), {when}"

    def describe(self, now: float) -> str:
        return f"held by {self.who(now)}"


def me(command: str, ttl: float, now: float) -> Holder:
    host = socket.gethostname()
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return Holder(
        holder=f"{user}@{host}",
        host=host,
        pid=os.getpid(),
        command=command,
        token=secrets.token_hex(16),
        acquired=now,
        expires=now + ttl,
    )


@dataclass(kw_only=True)
class Lease:
    """A lease this process holds (from `acquire` to `release`)."""

    store: ObjectStore
    key: str
    what: str  # "the test channel's lease", for people
    policy: LeasePolicy
    record: Holder
    etag: str
    took_over: str | None = None  # whom it was taken from, when it was
    lost: str | None = None  # set when a renewal found the lease no longer ours
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def renew(self) -> bool:
        """Push the expiry out by one time to live; False (and `lost` said) when the lease is
        no longer ours (taken over after this holder stalled past its expiry)."""
        now = time.time()
        record = replace(self.record, expires=now + self.policy.ttl)
        etag = self.store.replace_if(self.key, record.to_bytes(), JSON, self.etag)
        if etag is None:
            current, seen = _read(self.store, self.key)
            if current is not None and seen is not None and current.token == self.record.token:
                self.record, self.etag = current, seen  # a retried replace landed: still ours
                return True
            holder = current.describe(now) if current else "gone"
            self.lost = f"{self.what} in {self.store.url} was taken over ({holder})"
            return False
        self.record, self.etag = record, etag
        return True

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.policy.ttl / 3):
            try:
                if not self.renew():
                    self.policy.say(f"warning: {self.lost}")
                    return
            except Exception as exc:  # a fault renewing: try again next time, said once
                self.policy.say(f"warning: could not renew {self.what}: {exc}")

    def start(self) -> None:
        self._thread = threading.Thread(target=self._renew_loop, name="lease-renew", daemon=True)
        self._thread.start()

    def release(self) -> None:
        """Stop renewing and delete the lease (only while it is still ours)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.lost is None:
            self.store.delete_if(self.key, self.etag)


def _read(store: ObjectStore, key: str) -> tuple[Holder | None, str | None]:
    """The lease's record and the ETag of exactly those bytes (None, None: no lease); an
    unreadable record comes back as (None, etag)."""
    for _ in range(5):
        before = store.head(key)
        if before is None:
            return None, None
        try:
            data = store.get(key)
        except Exception:
            again = store.head(key)
            if again is None or again.etag != before.etag:
                continue  # released (or released and taken again) between the requests
            raise
        after = store.head(key)
        if after is not None and after.etag == before.etag:
            return Holder.parse(data), before.etag
    return None, None  # it keeps changing: look again later


def acquire(store: ObjectStore, key: str, *, what: str, command: str, policy: LeasePolicy) -> Lease:
    """Take the lease at `key`: create it, take it over once expired, or wait (saying who
    holds it) up to `policy.wait` seconds and then refuse (RefusedError, exit 5)."""
    start = time.monotonic()
    said = -PROGRESS_EVERY
    looks = 0
    base = me(command, policy.ttl, time.time())  # one token for every try: a write of ours
    while True:  # retried after it landed is recognised by it
        now = time.time()
        mine = replace(base, acquired=now, expires=now + policy.ttl)
        etag = store.create(key, mine.to_bytes(), JSON)
        if etag is not None:
            return _held(store, key, what, policy, mine, etag, None)
        current, seen = _read(store, key)
        if seen is None:  # released meanwhile: create again
            time.sleep(min(policy.poll, 0.1))
            continue
        now = time.time()  # the reads may have taken a while
        if current is not None and current.token == mine.token:
            return _held(store, key, what, policy, current, seen, None)  # a retry that landed
        if current is None or current.expires < now:
            etag = store.replace_if(key, mine.to_bytes(), JSON, seen)
            if etag is not None:
                before = current.who(now) if current else "an unreadable lease"
                took = f"took over {what} in {store.url} from {before}"
                policy.say(took)
                return _held(store, key, what, policy, mine, etag, took)
            continue  # another taker won, or the holder renewed: look again
        waited = time.monotonic() - start
        if waited >= policy.wait:
            raise _refused(store, what, current, now, policy)
        if waited - said >= PROGRESS_EVERY:
            policy.say(f"waiting for {what}: {current.describe(now)}")
            said = waited
        looks += 1  # look less often the longer it is held: at most every 3 polls (jittered)
        pause = policy.poll * min(3.0, 0.5 + looks / 2) * (0.75 + secrets.randbelow(500) / 1000)
        time.sleep(min(policy.wait - waited, pause))


def _held(
    store: ObjectStore,
    key: str,
    what: str,
    policy: LeasePolicy,
    record: Holder,
    etag: str,
    took_over: str | None,
) -> Lease:
    lease = Lease(
        store=store,
        key=key,
        what=what,
        policy=policy,
        record=record,
        etag=etag,
        took_over=took_over,
    )
    lease.start()
    return lease


def _refused(
    store: ObjectStore, what: str, current: Holder, now: float, policy: LeasePolicy
) -> RefusedError:
    waited = "" if policy.wait <= 0 else f" (waited {policy.wait:.0f} s)"
    return RefusedError(
        f"{what} in {store.url} is {current.describe(now)}{waited}; another writer is changing "
        "the channel, nothing was written",
        key="--no-wait" if policy.wait <= 0 else "--lease-wait",
        hint="rerun once it is done (or with a longer --lease-wait); a holder that died is "
        "taken over once its lease expires",
    )


@contextlib.contextmanager
def holding(
    store: ObjectStore, key: str, *, what: str, command: str, policy: LeasePolicy
) -> Iterator[Lease]:
    """Hold the lease while the block runs; a lease lost on the way (this writer stalled
    past its expiry and another took it over) is refused at the end."""
    lease = acquire(store, key, what=what, command=command, policy=policy)
    try:
        yield lease
    finally:
        lease.release()
    if lease.lost is not None:
        raise RefusedError(
            f"{lease.lost} while this run was writing",
            hint="rerun the command (it finishes what it started), then `relforge verify`",
        )
