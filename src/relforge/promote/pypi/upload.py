"""The twine upload of staged files, and what its failures mean: missing or refused
credentials, a repository that redirects or cannot be reached, an index that refuses a file —
one paragraph each, never a secret; then the index must list every file with its hash.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from relforge.errors import ConfigError, EnvironmentFault, RefusedError, RelforgeError
from relforge.promote.index.folder import parse_dist
from relforge.promote.pypi.stage import (
    UploadItem,
    index_files,
    public_url,
    remote_sha256,
    scrub,
)
from relforge.stores.objectstore import ObjectStore


class _LineEcho(io.TextIOBase):
    """A text stream that hands each complete line to `echo` as it is written; `echo` runs with
    the standard output the stream was made under (it may print there itself)."""

    def __init__(self, echo: Callable[[str], None]) -> None:
        self._echo = echo
        self._stdout = sys.stdout
        self._rest = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        *lines, self._rest = (self._rest + text).split("\n")
        self._say(lines)
        return len(text)

    def flush_rest(self) -> None:
        if self._rest:
            self._say([self._rest])
            self._rest = ""

    def _say(self, lines: list[str]) -> None:
        with contextlib.redirect_stdout(self._stdout):
            for line in lines:
                self._echo(line)


def download_staged(store: ObjectStore, items: Sequence[UploadItem], into: Path) -> list[Path]:
    """The staged files, downloaded into `into` under their own names (each verified)."""
    paths = []
    for item in items:
        path = into / item.filename
        if store.download(item.key, path) != item.sha256:
            raise RefusedError(f"{store.url}/{item.key} changed while uploading")
        paths.append(path)
    return paths


def upload(
    todo: Sequence[UploadItem],
    paths: Sequence[Path],
    repository_url: str,
    index_url: str,
    echo: Callable[[str], None],
) -> int:
    """Upload the files (downloaded by `download_staged`) with twine, then check the index
    lists each with its hash.  What twine prints goes through `echo` once it is done (so that
    stdout stays one JSON document under --format json)."""
    if not todo:
        return 0
    from twine.commands.upload import upload as twine_upload
    from twine.exceptions import (
        NonInteractive,
        RedirectDetected,
        TwineException,
        UnreachableRepositoryURLDetected,
    )
    from twine.settings import Settings

    settings = Settings(
        repository_url=repository_url,
        username=os.environ.get("TWINE_USERNAME"),
        password=os.environ.get("TWINE_PASSWORD"),
        non_interactive=True,
        disable_progress_bar=True,
    )
    where = public_url(repository_url)
    try:
        printed = _LineEcho(echo)  # twine prints; the command's echo says where that goes
        try:
            with contextlib.redirect_stdout(printed):
                twine_upload(settings, [str(p) for p in paths])
        finally:
            printed.flush_rest()
    except NonInteractive as exc:
        raise ConfigError(
            f"no credentials to upload to {where}: {exc}",
            key="TWINE_USERNAME/TWINE_PASSWORD",
            hint="set TWINE_USERNAME and TWINE_PASSWORD (for PyPI: __token__ and an API "
            "token) in the environment",
        ) from None
    except (RedirectDetected, UnreachableRepositoryURLDetected) as exc:
        raise EnvironmentFault(
            f"upload to {where} failed: {_one_line(scrub(str(exc), repository_url))}",
            key="--repository-url",
            hint="give the repository's upload URL itself (no redirect), then rerun",
        ) from None
    except TwineException as exc:
        raise RelforgeError(f"twine: {scrub(str(exc), repository_url)}") from None
    except Exception as exc:  # requests' HTTPError and friends: say what, never credentials
        raise _upload_fault(exc, where, repository_url) from None
    after = {}
    for item in todo:
        parsed = parse_dist(item.filename)
        assert parsed is not None
        after.update(index_files(index_url, parsed[0]))
    for item in todo:
        listed = after.get(item.filename)
        if listed is None:
            raise EnvironmentFault(
                f"{item.filename} was uploaded but {public_url(index_url)} does not list it",
                key="--index-url",
                hint="the index's pages may lag behind its uploads (a cache): rerun later to "
                "check again (uploaded files are skipped)",
            )
        found = listed[1] or remote_sha256(listed[0])
        if found != item.sha256:
            raise RelforgeError(
                f"{item.filename}: the index serves sha256 {found}, uploaded {item.sha256}"
            )
    return len(todo)


def _one_line(text: str) -> str:
    return " ".join(text.split())  # twine's messages span lines; ours are one paragraph


def _upload_fault(exc: Exception, where: str, repository_url: str) -> RelforgeError:
    """An upload that failed: the index refused it or could not be reached (exit 6); any
    other exception is a bug (exit 1)."""
    import requests

    status = getattr(getattr(exc, "response", None), "status_code", None) or 0
    reason = _one_line(scrub(str(exc), repository_url))
    message = f"upload to {where} failed: {type(exc).__name__}: {reason}"
    if status in (401, 403):
        return EnvironmentFault(
            message,
            key="--repository-url",
            hint="check TWINE_USERNAME and TWINE_PASSWORD (the index refused the credentials)",
        )
    if (
        status >= 500
        or status == 429
        or isinstance(exc, requests.ConnectionError | requests.Timeout)
    ):
        return EnvironmentFault(
            message,
            key="--repository-url",
            hint="the index cannot be reached or is failing; rerun later (uploaded files are "
            "skipped)",
        )
    if status:
        return EnvironmentFault(
            message,
            key="--repository-url",
            hint="the index refused the upload for the reason it gives above (PyPI never takes "
            "a file name twice, even after a delete)",
        )
    if isinstance(exc, requests.RequestException):
        return EnvironmentFault(
            message,
            key="--repository-url",
            hint="the connection to the index failed; rerun (uploaded files are skipped)",
        )
    return RelforgeError(message)
