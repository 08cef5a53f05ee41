"""What a failed git run means: the environment's faults (a full or read-only disk, local
permissions, an unreachable remote) are exit 6; the remote refusing us, a rejected push and an
unknown identity are named as such.  `relforge.git` runs git; this module reads the outcome."""

from __future__ import annotations

import errno
import re
from dataclasses import dataclass

from relforge.envfaults import HINTS
from relforge.errors import ConfigError, EnvironmentFault, RefusedError, RelforgeError


class GitError(RelforgeError):
    """git failed in a way relforge cannot explain more precisely, or the remote refused us
    (exit 6: the environment's fault, not a bug; fix it and rerun)."""

    exit_code = 6
    label = "git error"


@dataclass(frozen=True)
class GitResult:
    args: tuple[str, ...]
    code: int
    out: str
    err: str


@dataclass(frozen=True)
class GitBytes:
    """A git run whose output is bytes (blobs, `-z` path lists), as git wrote them."""

    args: tuple[str, ...]
    code: int
    out: bytes
    err: str


_AUTH = (
    "Authentication failed",
    "Permission denied",
    "could not read Username",
    "terminal prompts disabled",
    "returned error: 403",  # not a bare "403": object ids and paths hold that too
    "returned error: 401",
    "401 Unauthorized",
)
# strerror texts (LC_ALL=C) git prints when the local disk fails it → what to do about it
_DISK_FAULTS = {
    "Read-only file system": HINTS[errno.EROFS],
    "No space left on device": HINTS[errno.ENOSPC],
    "Disk quota exceeded": HINTS[errno.EDQUOT],
    "Operation not permitted": HINTS[errno.EPERM],  # an immutable file or a restrictive mount
    "insufficient permission for adding an object": HINTS[errno.EACCES],
}
# a local file git may not write: "Unable to create '/repo/.git/index.lock': Permission denied"
# (ssh's "Permission denied (publickey)" is the remote refusing us: not this)
_LOCAL_DENIED = re.compile(r"'[^']*/[^']*': Permission denied")
# what git (curl, ssh) prints when the remote cannot be reached at all
_NETWORK = (
    "Could not resolve host",
    "Could not resolve hostname",
    "Failed to connect to",
    "Connection refused",
    "Connection timed out",
    "Network is unreachable",
    "No route to host",
    "Operation timed out",
)
# what a push prints when the remote could not write the objects it was sent
_REMOTE_STORE = ("remote unpack failed", "(unpacker error)", "unpack-objects abnormal exit")
_REJECTED = (
    "[rejected]",
    "[remote rejected]",  # the remote refused the update (moved during the push, a hook)
    "non-fast-forward",
    "fetch first",
    "stale info",
    "already exists",
)


def classify(done: GitResult) -> RelforgeError:
    """Turn a failed git run into the error a user can act on."""
    err = done.err.strip() or done.out.strip()
    command = "git " + " ".join(a for a in done.args[3:])  # without `git -C DIR`
    last = err.splitlines()[-1] if err else f"exit code {done.code}"
    fault = environment_fault(command, err + "\n" + done.out)
    if fault is not None:
        return fault
    if any(word in err for word in _AUTH):
        return GitError(
            f"`{command}` was refused by the remote: {last}",
            hint="check the remote's credentials (token or SSH key) and permissions",
        )
    if done.args[3:4] == ("push",) and any(word in err + done.out for word in _REJECTED):
        # `--porcelain` prints one "!<TAB>src:dst<TAB>reason" line per refused ref; the
        # remote's own words ("remote: error: cannot lock ref …") say why.
        refused = [
            " ".join(line.split("\t")[1:]) for line in done.out.splitlines() if line[:2] == "!\t"
        ]
        said = [line.strip() for line in err.splitlines() if line.startswith("remote: error:")]
        return RefusedError(
            f"`{command}` was rejected: " + ("; ".join([*refused, *said]) or last),
            hint="the remote moved; fetch, check what changed, and rerun",
        )
    if "Please tell me who you are" in err or "unable to auto-detect email" in err:
        return ConfigError(
            f"`{command}`: git does not know who you are",
            key="--repo",
            hint="set git config user.name and user.email in the repository",
        )
    if "not a git repository" in err:
        return ConfigError(f"`{command}`: {last}", key="--repo")
    return GitError(f"`{command}` failed: {last}")


def environment_fault(command: str, text: str) -> EnvironmentFault | None:
    """A git run that failed because a disk is read-only or full (here, or on the remote: its
    unpacker could not store what we pushed) is an environment fault (exit 6), not a bug."""
    lines = [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.startswith("remote:")  # the remote's words: not our disk
    ]
    local_denied = next((line for line in lines if _LOCAL_DENIED.search(line)), None)
    if local_denied is not None:
        return EnvironmentFault(f"`{command}` failed: {local_denied}", hint=HINTS[errno.EACCES])
    for reason, hint in _DISK_FAULTS.items():
        said = next((line for line in lines if reason in line), None)
        if said is not None:
            return EnvironmentFault(f"`{command}` failed: {said}", hint=hint)
    said = next((line for line in lines if any(w in line for w in _NETWORK)), None)
    if said is not None:
        return EnvironmentFault(
            f"`{command}`: the remote cannot be reached: {said}",
            hint="check the network, the remote's URL (git remote -v) and any proxy, then rerun",
        )
    said = next((line for line in lines if any(w in line for w in _REMOTE_STORE)), None)
    if said is not None:
        return EnvironmentFault(
            f"`{command}`: the remote could not store the push: {said}",
            hint="the remote's disk is full, read-only or not writable: fix it and rerun "
            "(nothing was updated: the push is atomic)",
        )
    return None


def fault_of(done: GitResult | GitBytes) -> EnvironmentFault | None:
    """The environment fault (disk, permission, network) a failed run reports, if any.

    git echoes paths and revisions back ("path 'd/x': No space left on device' does not exist
    in 'HEAD'"): a fault is only one the message names outside the arguments we gave."""
    command = "git " + " ".join(done.args[1:])
    text = done.err + "\n" + (done.out if isinstance(done.out, str) else "")
    echoed = text
    given = {part for arg in done.args[1:] for part in (arg, arg.partition(":")[2])}  # REV:PATH
    for part in sorted(given, key=len, reverse=True):
        if len(part) > 2:
            echoed = echoed.replace(part, "\N{HORIZONTAL ELLIPSIS}")
    if environment_fault(command, echoed) is None:
        return None
    return environment_fault(command, text)
