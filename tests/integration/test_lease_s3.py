"""The writer lease on S3 (a moto server): conditional create (`IfNoneMatch: *`), replace and
delete on the ETag (`IfMatch`), races between threads (exactly one create, one replace, one
taker of an expired lease wins), and a second writer refused naming the holder.  The same on a
local store: tests/unit/test_lease.py."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from relforge.errors import RefusedError
from relforge.promote.channellease import lease_key
from relforge.stores.lease import Holder, LeasePolicy, acquire, holding
from relforge.stores.s3 import S3Store
from tests.integration.conftest import S3

KEY = lease_key("test")
WHAT = "the test channel's lease"
JSON = "application/json"


def store(s3: S3) -> S3Store:
    return S3Store(bucket=s3.bucket, prefix="dl", endpoint_url=s3.endpoint)


def quiet(lines: list[str] | None = None) -> LeasePolicy:
    said = lines if lines is not None else []
    return LeasePolicy(ttl=60, wait=0, say=said.append, poll=0.01)


def test_conditional_writes_on_s3(s3: S3) -> None:
    st = store(s3)
    first = st.create("relforge/leases/x.json", b"one", JSON)
    assert first is not None
    assert st.create("relforge/leases/x.json", b"two", JSON) is None
    assert st.get("relforge/leases/x.json") == b"one"
    second = st.replace_if("relforge/leases/x.json", b"two", JSON, first)
    assert second is not None and second != first
    assert st.replace_if("relforge/leases/x.json", b"three", JSON, first) is None
    assert st.get("relforge/leases/x.json") == b"two"
    assert not st.delete_if("relforge/leases/x.json", first)
    assert st.get("relforge/leases/x.json") == b"two"
    assert st.delete_if("relforge/leases/x.json", second)
    assert st.head("relforge/leases/x.json") is None
    assert not st.delete_if("relforge/leases/x.json", second)
    assert st.replace_if("relforge/leases/x.json", b"x", JSON, second) is None
    # the store's prefix holds it
    assert st.create("relforge/leases/y.json", b"y", JSON) is not None
    listed = s3.client().list_objects_v2(Bucket=s3.bucket, Prefix="dl/relforge/leases/")
    assert [o["Key"] for o in listed["Contents"]] == ["dl/relforge/leases/y.json"]


def test_of_many_creates_on_s3_exactly_one_wins(s3: S3) -> None:
    st = store(s3)
    barrier = threading.Barrier(8)

    def create(i: int) -> str | None:
        barrier.wait()
        return st.create("race.json", f"{i}".encode(), JSON)

    for _ in range(3):
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(create, range(8)))
        winners = [i for i, etag in enumerate(got) if etag is not None]
        assert len(winners) == 1, got
        assert st.get("race.json") == str(winners[0]).encode()
        info = st.head("race.json")
        assert info is not None and st.delete_if("race.json", info.etag)


def test_a_second_writer_on_s3_is_refused_naming_the_holder(s3: S3) -> None:
    st = store(s3)
    with holding(st, KEY, what=WHAT, command="relforge promote", policy=quiet()) as held:
        with pytest.raises(RefusedError) as caught:
            acquire(st, KEY, what=WHAT, command="relforge index", policy=quiet())
        assert caught.value.exit_code == 5
        assert f"held by {held.record.holder} pid {held.record.pid} (relforge promote)" in str(
            caught.value
        )
        assert held.renew()
    assert st.head(KEY) is None


def test_of_several_takers_of_an_expired_lease_on_s3_exactly_one_wins(s3: S3) -> None:
    st = store(s3)
    now = time.time()
    dead = Holder(
        holder="ci@runner-3",
        host="runner-3",
        pid=4242,
        command="relforge promote",
        token="f" * 32,
        acquired=now - 120,
        expires=now - 5,
    )
    old = st.create(KEY, dead.to_bytes(), JSON)
    assert old is not None
    barrier = threading.Barrier(6)
    lines: list[str] = []

    def take(i: int) -> str:
        barrier.wait()
        try:
            lease = acquire(st, KEY, what=WHAT, command=f"writer {i}", policy=quiet(lines))
        except RefusedError as exc:
            return str(exc)
        return f"won {lease.record.token}"

    with ThreadPoolExecutor(6) as pool:
        got = list(pool.map(take, range(6)))
    won = [g for g in got if g.startswith("won ")]
    assert len(won) == 1, got
    holder = json.loads(st.get(KEY))
    assert won[0] == f"won {holder['token']}"
    assert len(lines) == 1 and "from ci@runner-3 pid 4242" in lines[0]
    assert not st.delete_if(KEY, old)  # the dead holder's ETag no longer removes it
