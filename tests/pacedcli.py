"""relforge's CLI with slow store writes, for tests that kill or race a run part-way through.

    python tests/pacedcli.py [--transfer-delay S] [--page-delay S] [--delete-delay S] -- ARGS

runs `relforge ARGS` in this process after registering, for the `file` and `s3` schemes of
`relforge.stores.registry.STORES`, factories that open the same store as a subclass of its
class (so every `isinstance` test in relforge sees what it sees without us) whose writes wait:

- `--transfer-delay`: before each object created from a file, bytes or another object
  (`put_if_absent`, `copy_if_absent`: promote's, publish's and the mirror's transfers);
- `--page-delay`: before each small object written or replaced (`write`: index pages and
  page-set markers);
- `--delete-delay`: after each object is deleted (`delete`: repair's removal of bad bytes).

Nothing in relforge knows about the pacing: the store registry is its seam.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from relforge.stores.content_types import OCTET_STREAM
from relforge.stores.local import LocalStore
from relforge.stores.objectstore import ObjectStore
from relforge.stores.registry import STORES, StoreOptions
from relforge.stores.s3 import S3Store

SCRIPT = Path(__file__).resolve()
# What a test adds to the command line of a run it is about to SIGKILL: the channel's lease then
# outlives the killed run by 3 s, not the default 60 s, and the rerun takes it over (saying so)
# instead of waiting out a minute in every kill test.  Renewed every second while the run lives.
KILLED_LEASE = ("--lease-ttl", "3")
# the rerun says on stderr: "took over the test channel's lease in …"
TOOK_OVER = "took over the "


def paced_relforge(
    *, transfer_delay: float = 0, page_delay: float = 0, delete_delay: float = 0
) -> list[str]:
    """The argv prefix that runs relforge with these delays (append relforge's arguments)."""
    return [
        sys.executable,
        str(SCRIPT),
        f"--transfer-delay={transfer_delay}",
        f"--page-delay={page_delay}",
        f"--delete-delay={delete_delay}",
        "--",
    ]


@dataclass(frozen=True, kw_only=True)
class Pacing:
    transfer: float = 0
    page: float = 0
    delete: float = 0


_pacing = Pacing()
_inside = threading.local()  # a transfer made of another (S3's copy from elsewhere: a put)


def _wait(seconds: float) -> None:
    if seconds > 0:
        threading.Event().wait(seconds)


@contextmanager
def _transfer() -> Iterator[None]:
    """Wait once per transfer, however many store calls it makes."""
    if getattr(_inside, "active", False):
        yield
        return
    _wait(_pacing.transfer)
    _inside.active = True
    try:
        yield
    finally:
        _inside.active = False


_Store = TypeVar("_Store", LocalStore, S3Store)


def _paced_kind(base: type[_Store]) -> type[_Store]:
    """`base` whose writes wait as `_pacing` says: one subclass per store class, so that every
    `isinstance` test in relforge sees the class it expects."""

    class Paced(base):  # type: ignore[valid-type,misc]  # a subclass of whichever store class
        def put_if_absent(
            self, key: str, source: Path | bytes, sha256: str, content_type: str = OCTET_STREAM
        ) -> bool:
            with _transfer():
                return bool(super().put_if_absent(key, source, sha256, content_type))

        def copy_if_absent(
            self, source: ObjectStore, src_key: str, key: str, sha256: str, size: int | None = None
        ) -> bool:
            with _transfer():
                return bool(super().copy_if_absent(source, src_key, key, sha256, size))

        def write(self, key: str, data: bytes, content_type: str) -> None:
            _wait(_pacing.page)
            super().write(key, data, content_type)

        def delete(self, key: str) -> None:
            super().delete(key)
            _wait(_pacing.delete)

    Paced.__name__ = Paced.__qualname__ = f"Paced{base.__name__}"
    return Paced


PacedLocalStore = _paced_kind(LocalStore)
PacedS3Store = _paced_kind(S3Store)


def _paced(
    opener: Callable[[str, StoreOptions], ObjectStore],
) -> Callable[[str, StoreOptions], ObjectStore]:
    def open_paced(url: str, options: StoreOptions) -> ObjectStore:
        store = opener(url, options)
        if isinstance(store, LocalStore):
            return PacedLocalStore(store.root)
        assert isinstance(store, S3Store), store
        return PacedS3Store(
            bucket=store.bucket,
            prefix=store.prefix.rstrip("/"),
            endpoint_url=store.endpoint_url,
            config_key=store.config_key,
            policy=store.policy,
            settings=store.settings,
            book=store.book,
        )

    return open_paced


def main(argv: list[str]) -> None:
    global _pacing
    parser = argparse.ArgumentParser(prog="pacedcli", description=__doc__)
    parser.add_argument("--transfer-delay", type=float, default=0)
    parser.add_argument("--page-delay", type=float, default=0)
    parser.add_argument("--delete-delay", type=float, default=0)
    parser.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)
    args = ns.args[1:] if ns.args[:1] == ["--"] else ns.args
    _pacing = Pacing(transfer=ns.transfer_delay, page=ns.page_delay, delete=ns.delete_delay)
    for scheme in ("file", "s3"):
        STORES[scheme] = _paced(STORES[scheme])

    from relforge.cli import main as relforge

    relforge(args)


if __name__ == "__main__":
    main(sys.argv[1:])
