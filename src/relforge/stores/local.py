"""LocalStore: a directory as an object store (the embedded default, `.relforge/store`).

Objects are created with a hard link from a finished temporary file, so a key either holds the
whole verified object or nothing, and an existing key is never replaced.  Each object's sha256
sits in `.relforge-meta/<key>.json` with the size, inode and mtime it describes; when those no
longer match (or the record is missing) the file is hashed again.

A read-only, full or forbidden directory is an EnvironmentFault naming the store, the key and
the path; so is a damaged store (a file where a key needs a folder, a folder where it needs a
file: nothing relforge writes).  The temporary file of a failed write is removed, so no key ever
holds part of one.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from relforge.envfaults import LocalWriteFault, environment_fault, is_environment_fault, writing
from relforge.errors import EnvironmentFault, RefusedError, RelforgeError
from relforge.manifest import sha256_file
from relforge.stores.content_types import OCTET_STREAM
from relforge.stores.objectstore import ObjectInfo, ObjectStore, Unfinished, copy_stream

META_DIR = ".relforge-meta"
_TMP = ".relforge-tmp-"


class LocalStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def url(self) -> str:
        return f"file://{self.root}"

    @property
    def directory_pages(self) -> bool:
        return False  # a static file server maps a folder URL to its index.html

    def _path(self, key: str) -> Path:
        parts = key.split("/")
        if not key or key.startswith("/") or any(p in ("", ".", "..") for p in parts[:-1]):
            raise RelforgeError(f"bad object key {key!r}")
        if parts[0] == META_DIR or parts[-1].startswith(_TMP):
            raise RelforgeError(f"object key {key!r} is reserved")
        return self.root / key

    def _meta(self, key: str) -> Path:
        return self.root / META_DIR / f"{key}.json"

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        base = self.root / prefix.rpartition("/")[0]
        if not base.is_dir():
            return
        found = []
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if d != META_DIR]
            for name in filenames:
                if name.startswith(_TMP):
                    continue
                path = Path(dirpath) / name
                key = path.relative_to(self.root).as_posix()
                if key.startswith(prefix):
                    found.append(key)
        for key in sorted(found):
            info = self.head(key)
            if info is not None:
                yield info

    def head(self, key: str) -> ObjectInfo | None:
        try:
            st = self._path(key).stat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        return ObjectInfo(
            key=key, size=st.st_size, etag=f"{st.st_ino}-{st.st_size}-{st.st_mtime_ns}"
        )

    def sha256(self, key: str) -> str | None:
        path = self._path(key)
        try:
            with self._faults("read", key):
                return self._sha256(key, path)
        except FileNotFoundError:
            return None

    def _sha256(self, key: str, path: Path) -> str:
        st = path.stat()
        stamp = [st.st_ino, st.st_size, st.st_mtime_ns]
        try:
            meta = json.loads(self._meta(key).read_text(encoding="utf-8"))
            if meta.get("stamp") == stamp:
                return str(meta["sha256"])
        except (OSError, ValueError, KeyError):
            pass
        return sha256_file(path)  # no record, or the file changed since: the bytes decide

    def get(self, key: str) -> bytes:
        try:
            with self._faults("read", key):
                return self._path(key).read_bytes()
        except FileNotFoundError:
            raise RelforgeError(f"{self.url}: no object {key!r}") from None

    def read_into(self, key: str, start: int, into: memoryview) -> None:
        try:
            with self._faults("read", key), self._path(key).open("rb") as src:
                got = os.preadv(src.fileno(), [into], start)
        except FileNotFoundError:
            raise RelforgeError(f"{self.url}: no object {key!r}") from None
        if got != into.nbytes:
            raise RelforgeError(
                f"{self.url}/{key}: {got} of {into.nbytes} bytes from offset {start} (the file "
                "is shorter than it was)"
            )

    def download(self, key: str, dest: Path) -> str:
        try:
            # the write side has its own faults: a full disk names `dest`, not this store
            with self._faults("read", key), self._path(key).open("rb") as src, writing(dest) as dst:
                return copy_stream(src, dst)[0]
        except FileNotFoundError:
            raise RelforgeError(f"{self.url}: no object {key!r}") from None

    def put_if_absent(
        self,
        key: str,
        source: Path | bytes,
        sha256: str,
        content_type: str = OCTET_STREAM,
    ) -> bool:
        with self._faults("write", key):
            return self._put_if_absent(key, source, sha256)

    def _put_if_absent(self, key: str, source: Path | bytes, sha256: str) -> bool:
        path = self._path(key)
        if path.exists():
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._temp(path) as tmp:
            with tmp.open("wb") as dst:
                if isinstance(source, bytes):
                    dst.write(source)
                    got = _hash(source)
                else:
                    with source.open("rb") as src:
                        got = copy_stream(src, dst)[0]
                dst.flush()
                os.fsync(dst.fileno())
            if got != sha256:
                raise RefusedError(
                    f"{source if isinstance(source, Path) else key}: sha256 {got} is not the "
                    f"expected {sha256}; nothing was written",
                    hint="the file changed after it was hashed",
                )
            return self._link(tmp, path, key, sha256)

    def copy_if_absent(
        self, source: ObjectStore, src_key: str, key: str, sha256: str, size: int | None = None
    ) -> bool:
        with self._faults("write", key):
            return self._copy_if_absent(source, src_key, key, sha256)

    def _copy_if_absent(self, source: ObjectStore, src_key: str, key: str, sha256: str) -> bool:
        path = self._path(key)
        if path.exists():
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._temp(path) as tmp:
            try:
                got = source.download(src_key, tmp)
            except LocalWriteFault as fault:  # the temporary file is this store's object
                raise environment_fault(fault.error, f"write {self.url}/{key}") from None
            if got != sha256:
                raise RefusedError(
                    f"{source.url}/{src_key}: sha256 {got} is not the expected {sha256}; "
                    "nothing was copied"
                )
            return self._link(tmp, path, key, sha256)

    def write(self, key: str, data: bytes, content_type: str) -> None:
        if key.endswith("/"):
            return  # folder pages are index.html files here
        path = self._path(key)
        with self._faults("write", key):
            path.parent.mkdir(parents=True, exist_ok=True)
            with self._temp(path) as tmp:
                tmp.write_bytes(data)
                st = tmp.stat()  # these bytes' stamp: another writer may replace them next
                tmp.replace(path)
            self._record(key, path, _hash(data), st)

    def delete(self, key: str) -> None:
        if key.endswith("/"):
            return
        with self._faults("delete", key):
            self._path(key).unlink(missing_ok=True)
            self._meta(key).unlink(missing_ok=True)

    def create(self, key: str, data: bytes, content_type: str) -> str | None:
        path = self._path(key)
        with self._faults("write", key):
            path.parent.mkdir(parents=True, exist_ok=True)
            with self._temp(path) as tmp:
                tmp.write_bytes(data)
                if not self._link(tmp, path, key, _hash(data)):  # exclusive: never replaces
                    return None
            info = self.head(key)
        return info.etag if info is not None else None

    def replace_if(self, key: str, data: bytes, content_type: str, etag: str) -> str | None:
        path = self._path(key)
        with self._faults("write", key), self._exclusive(key):
            found = self.head(key)
            if found is None or found.etag != etag:
                return None
            with self._temp(path) as tmp:
                tmp.write_bytes(data)
                tmp.replace(path)  # a new inode: the ETag changes even when the bytes do not
            self._record(key, path, _hash(data))
            info = self.head(key)
        return info.etag if info is not None else None

    def delete_if(self, key: str, etag: str) -> bool:
        path = self._path(key)
        with self._faults("delete", key), self._exclusive(key):
            found = self.head(key)
            if found is None or found.etag != etag:
                return False
            path.unlink(missing_ok=True)
            self._meta(key).unlink(missing_ok=True)
        return True

    @contextlib.contextmanager
    def _exclusive(self, key: str) -> Iterator[None]:
        """The compare and the swap of a conditional replace or delete as one step: an
        exclusive lock (flock) on the key's folder, so no lock file is left behind.  A create
        needs no lock (the hard link fails when the key exists) and replaces nothing."""
        import fcntl

        folder = self._path(key).parent
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing drops the lock

    def unfinished(self, prefix: str) -> tuple[Unfinished, ...]:
        return ()  # a write is a temporary file, then a hard link: there is no upload to resume

    def abort(self, unfinished: Unfinished) -> None:
        return None

    @contextlib.contextmanager
    def _faults(self, action: str, key: str) -> Iterator[None]:
        """A read-only, full or forbidden directory, or a damaged store: one paragraph naming
        the key and path."""
        try:
            yield
        except (FileExistsError, NotADirectoryError, IsADirectoryError) as exc:
            raise self._damaged(action, key, exc) from None
        except OSError as exc:
            if not is_environment_fault(exc):
                raise
            raise environment_fault(exc, f"{action} {self.url}/{key}") from None

    def _damaged(self, action: str, key: str, exc: OSError) -> EnvironmentFault:
        """The store holds a file where `key` needs a folder (or a folder where it needs a
        file): not an object relforge wrote, so it is neither replaced nor removed."""
        path = self._path(key)
        blocker = next(
            (p for p in reversed(path.parents) if p.is_relative_to(self.root) and p.is_file()),
            None,
        )
        if blocker is not None:
            what = f"{blocker} is a file where the store needs a folder"
        elif path.is_dir():
            blocker, what = path, f"{path} is a folder where the store needs a file"
        else:
            blocker, what = path, f"{path}: {exc.strerror or type(exc).__name__}"
        return EnvironmentFault(
            f"{action} {self.url}/{key}: the store is damaged: {what}",
            hint=f"move {blocker} out of the store (relforge never writes one there), then "
            "rerun: the run finishes what it started",
        )

    @contextlib.contextmanager
    def _temp(self, path: Path) -> Iterator[Path]:
        fd, name = tempfile.mkstemp(prefix=f"{_TMP}{path.name}.", dir=path.parent)
        os.close(fd)
        tmp = Path(name)
        try:
            yield tmp
        finally:
            tmp.unlink(missing_ok=True)

    def _link(self, tmp: Path, path: Path, key: str, sha256: str) -> bool:
        try:
            os.link(tmp, path)  # fails when the key exists: never replaces an object
        except FileExistsError:
            return False
        self._record(key, path, sha256)
        return True

    def _record(self, key: str, path: Path, sha256: str, st: os.stat_result | None = None) -> None:
        """Record `sha256` for the file whose stamp is `st` (the file at `path` now when
        None): a record whose stamp is not the file's is never believed (see _sha256)."""
        st = st if st is not None else path.stat()
        meta = self._meta(key)
        meta.parent.mkdir(parents=True, exist_ok=True)
        record = {"sha256": sha256, "stamp": [st.st_ino, st.st_size, st.st_mtime_ns]}
        with self._temp(meta) as tmp:
            tmp.write_text(json.dumps(record), encoding="utf-8")
            tmp.replace(meta)


def _hash(data: bytes) -> str:
    from relforge.stores.objectstore import sha256_bytes

    return sha256_bytes(data)
