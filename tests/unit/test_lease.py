"""The writer lease (relforge.stores.lease) on a real local store: conditional create, replace
and delete; one holder at a time; waiting with the holder named; refusing at once; taking over
an expired or unreadable lease (exactly one of several takers); renewal and a lease lost while
writing.  The same races on S3 (moto): tests/integration/test_lease_s3.py."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from relforge.errors import RefusedError
from relforge.promote.channellease import LeaseScope, lease_key
from relforge.stores.lease import Holder, LeasePolicy, acquire, holding
from relforge.stores.local import LocalStore

KEY = lease_key("test")
WHAT = "the test channel's lease"


def quiet(ttl: float = 60.0, wait: float = 0.0, lines: list[str] | None = None) -> LeasePolicy:
    said = lines if lines is not None else []
    return LeasePolicy(ttl=ttl, wait=wait, say=said.append, poll=0.01)


def dead_holder(store: LocalStore, expired_ago: float, key: str = KEY) -> str:
    """The lease a killed writer left: expired `expired_ago` seconds ago; its ETag."""
    now = time.time()
    record = Holder(
        holder="ci@runner-3",
        host="runner-3",
        pid=4242,
        command="relforge promote",
        token="f" * 32,
        acquired=now - 120,
        expires=now - expired_ago,
    )
    etag = store.create(key, record.to_bytes(), "application/json")
    assert etag is not None
    return etag


def test_conditional_writes_of_the_local_store(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    first = store.create("relforge/leases/x.json", b"one", "application/json")
    assert first is not None
    assert store.create("relforge/leases/x.json", b"two", "application/json") is None
    assert store.get("relforge/leases/x.json") == b"one"
    # a replace on a stale ETag changes nothing; on the current one it replaces
    second = store.replace_if("relforge/leases/x.json", b"two", "application/json", first)
    assert second is not None and second != first
    assert store.replace_if("relforge/leases/x.json", b"three", "application/json", first) is None
    assert store.get("relforge/leases/x.json") == b"two"
    # the same bytes again still give a new ETag (a renewal is always seen)
    third = store.replace_if("relforge/leases/x.json", b"two", "application/json", second)
    assert third is not None and third != second
    assert not store.delete_if("relforge/leases/x.json", second)
    assert store.get("relforge/leases/x.json") == b"two"
    assert store.delete_if("relforge/leases/x.json", third)
    assert store.head("relforge/leases/x.json") is None
    assert not store.delete_if("relforge/leases/x.json", third)
    assert store.replace_if("relforge/leases/x.json", b"x", "application/json", third) is None


def test_of_many_creates_at_once_exactly_one_wins(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    barrier = threading.Barrier(8)

    def create(i: int) -> str | None:
        barrier.wait()
        return store.create("k.json", f"{i}".encode(), "application/json")

    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(create, range(8)))
    winners = [i for i, etag in enumerate(got) if etag is not None]
    assert len(winners) == 1
    assert store.get("k.json") == str(winners[0]).encode()


def test_of_many_replaces_on_one_etag_exactly_one_wins(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    etag = store.create("k.json", b"old", "application/json")
    assert etag is not None
    barrier = threading.Barrier(8)

    def replace(i: int) -> str | None:
        barrier.wait()
        return store.replace_if("k.json", f"{i}".encode(), "application/json", etag)

    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(replace, range(8)))
    winners = [i for i, new in enumerate(got) if new is not None]
    assert len(winners) == 1
    assert store.get("k.json") == str(winners[0]).encode()


def test_a_second_writer_refuses_at_once_naming_the_holder(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    with holding(store, KEY, what=WHAT, command="relforge promote", policy=quiet()) as held:
        record = json.loads(store.get(KEY))
        assert record["pid"] == held.record.pid and record["command"] == "relforge promote"
        assert record["expires"] - record["acquired"] == pytest.approx(60.0)
        with pytest.raises(RefusedError) as caught:
            acquire(store, KEY, what=WHAT, command="relforge yank", policy=quiet())
    assert caught.value.exit_code == 5
    assert caught.value.key == "--no-wait"
    text = str(caught.value)
    assert f"{WHAT} in {store.url} is held by {held.record.holder} pid {held.record.pid}" in text
    assert "(relforge promote), expires in" in text
    assert store.head(KEY) is None  # released at the end of the block
    # and free again: the next writer takes it at once
    with holding(store, KEY, what=WHAT, command="relforge index", policy=quiet()):
        assert json.loads(store.get(KEY))["command"] == "relforge index"


def test_a_second_writer_waits_saying_who_holds_it_then_takes_it(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    first = acquire(store, KEY, what=WHAT, command="relforge promote", policy=quiet())
    lines: list[str] = []

    def say(line: str) -> None:
        lines.append(line)
        first.release()  # the holder finishes once the waiter has said it waits

    policy = LeasePolicy(ttl=60, wait=600, say=say, poll=0.01)
    second = acquire(store, KEY, what=WHAT, command="relforge index", policy=policy)
    try:
        assert lines[0].startswith(f"waiting for {WHAT}: held by {first.record.holder} pid ")
        assert "(relforge promote), expires in " in lines[0]
        assert json.loads(store.get(KEY))["token"] == second.record.token
    finally:
        second.release()
    assert store.head(KEY) is None


def test_waiting_is_bounded_then_refused(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    lines: list[str] = []
    policy = quiet(wait=0.2, lines=lines)
    with (
        holding(store, KEY, what=WHAT, command="relforge promote", policy=quiet()),
        pytest.raises(RefusedError) as caught,
    ):
        acquire(store, KEY, what=WHAT, command="relforge index", policy=policy)
    assert caught.value.key == "--lease-wait"
    assert "held by" in str(caught.value) and "(waited 0 s); another writer" in str(caught.value)
    assert lines and all(line.startswith(f"waiting for {WHAT}: held by") for line in lines)


def test_an_expired_lease_is_taken_over_and_said(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    old = dead_holder(store, expired_ago=12)
    lines: list[str] = []
    lease = acquire(store, KEY, what=WHAT, command="relforge index", policy=quiet(lines=lines))
    try:
        assert lines == [
            f"took over {WHAT} in {store.url} from ci@runner-3 pid 4242 "
            "(relforge promote), expired 12 s ago"
        ]
        assert lease.took_over == lines[0]
        # the dead holder's own release (a conditional delete on its ETag) removes nothing
        assert not store.delete_if(KEY, old)
        assert json.loads(store.get(KEY))["token"] == lease.record.token
    finally:
        lease.release()


def test_a_live_lease_is_never_taken_over(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    dead_holder(store, expired_ago=-30)  # expires in 30 s
    with pytest.raises(RefusedError, match=r"ci@runner-3 pid 4242 .*expires in (29|30) s"):
        acquire(store, KEY, what=WHAT, command="relforge index", policy=quiet())


def test_an_unreadable_lease_is_taken_over(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    assert store.create(KEY, b"{not json", "application/json") is not None
    lines: list[str] = []
    with holding(store, KEY, what=WHAT, command="relforge index", policy=quiet(lines=lines)):
        assert lines == [f"took over {WHAT} in {store.url} from an unreadable lease"]


def test_of_several_takers_of_an_expired_lease_exactly_one_wins(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    dead_holder(store, expired_ago=5)
    barrier = threading.Barrier(6)

    def take(i: int) -> str:
        barrier.wait()
        try:
            lease = acquire(store, KEY, what=WHAT, command=f"writer {i}", policy=quiet())
        except RefusedError as exc:
            return str(exc)
        return f"won {lease.record.token}"

    with ThreadPoolExecutor(6) as pool:
        got = list(pool.map(take, range(6)))
    won = [g for g in got if g.startswith("won ")]
    assert len(won) == 1, got
    holder = json.loads(store.get(KEY))
    assert won[0] == f"won {holder['token']}"
    # every loser names the winner (not the dead holder)
    assert all(f"({holder['command']})" in g for g in got if not g.startswith("won "))


def test_renewal_pushes_the_expiry_and_a_lost_lease_is_refused_at_the_end(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    with (
        pytest.raises(RefusedError) as caught,
        holding(store, KEY, what=WHAT, command="relforge promote", policy=quiet()) as lease,
    ):
        before = json.loads(store.get(KEY))["expires"]
        assert lease.renew()
        assert json.loads(store.get(KEY))["expires"] >= before
        # this writer stalled past its expiry and another took the lease over
        info = store.head(KEY)
        assert info is not None
        taker = Holder.parse(store.get(KEY))
        assert taker is not None
        other = Holder(**{**taker.__dict__, "token": "a" * 32, "pid": 99})
        assert store.replace_if(KEY, other.to_bytes(), "application/json", info.etag)
        assert not lease.renew()
    assert "was taken over (held by" in str(caught.value)
    assert "pid 99" in str(caught.value)
    assert json.loads(store.get(KEY))["token"] == "a" * 32  # the taker's lease is kept


def test_the_renewal_thread_keeps_a_short_lease_alive(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    ticks = threading.Event()
    renewed: list[float] = []
    with holding(store, KEY, what=WHAT, command="relforge promote", policy=quiet(ttl=0.3)) as held:
        first = held.record.expires
        for _ in range(400):  # the thread renews every 0.1 s; give up after 20 s
            if ticks.wait(0.05):
                break
            expires = json.loads(store.get(KEY))["expires"]
            if expires > first:
                renewed.append(expires)
                ticks.set()
        # a second writer meanwhile finds it live (never expired while renewed)
        with pytest.raises(RefusedError):
            acquire(store, KEY, what=WHAT, command="relforge index", policy=quiet(ttl=0.3))
    assert renewed


def test_a_dry_run_scope_takes_no_lease(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    with LeaseScope("promote", None) as scope:
        scope.take(store, ["test"])
        assert store.head(KEY) is None and scope.held == {}
    with LeaseScope("yank", quiet()) as scope:
        scope.take(store, ["test", "release", "test"])
        assert sorted(scope.held) == ["release", "test"]
        assert store.head(lease_key("release")) is not None
    assert store.head(KEY) is None and store.head(lease_key("release")) is None


class Landed:
    """A local store whose conditional writes land but answer as refused, as a write retried
    after its first attempt landed does on S3 (the retry meets the condition it just broke)."""

    def __init__(self, store: LocalStore) -> None:
        self.inner = store

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def create(self, key: str, data: bytes, content_type: str) -> str | None:
        self.inner.create(key, data, content_type)
        return None

    def replace_if(self, key: str, data: bytes, content_type: str, etag: str) -> str | None:
        self.inner.replace_if(key, data, content_type, etag)
        return None


def test_a_lease_write_that_landed_but_answered_refused_is_still_ours(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    landed: Any = Landed(store)
    lease = acquire(landed, KEY, what=WHAT, command="relforge index", policy=quiet())
    try:
        assert json.loads(store.get(KEY))["token"] == lease.record.token
        assert lease.renew() and lease.renew()  # each renewal landed: its ETag is taken up
        assert lease.lost is None
    finally:
        lease.release()
    assert store.head(KEY) is None  # so the release (on the current ETag) removed it
    dead_holder(store, expired_ago=3)
    taker = acquire(landed, KEY, what=WHAT, command="relforge yank", policy=quiet())
    try:  # a takeover that landed: recognised by its token, not waited for
        assert json.loads(store.get(KEY))["token"] == taker.record.token
        assert taker.took_over is None
    finally:
        taker.release()
