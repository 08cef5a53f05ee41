"""How a failed git run is reported: the environment's faults (disk, network, local
permissions) are exit 6; the remote refusing us stays what it was."""

from __future__ import annotations

import pytest

from relforge.gitfaults import GitResult, classify

ARGS = ("git", "-C", "/repo")


def _classify(err: str, *args: str, out: str = "") -> tuple[int, str]:
    error = classify(GitResult((*ARGS, *args), 128, out, err))
    return error.exit_code, error.render()


@pytest.mark.parametrize(
    "err",
    [
        "fatal: Unable to create '/repo/.git/index.lock': Permission denied",
        "error: insufficient permission for adding an object to repository database .git/objects",
        "error: unable to create temporary file: Operation not permitted\nfatal: Unable to add",
        "error: unable to create temporary file: Read-only file system",
        "fatal: sha1 file '.git/objects/x' write error: No space left on device",
        "fatal: unable to access 'https://h.invalid/r.git/': Could not resolve host: h.invalid",
        "ssh: Could not resolve hostname h.invalid: Name or service not known",
    ],
)
def test_local_disk_permission_and_network_faults_are_exit_6(err: str) -> None:
    code, text = _classify(err, "fetch", "origin")
    assert code == 6 and text.startswith("environment fault: "), text


@pytest.mark.parametrize(
    "err",
    [
        "git@github.com: Permission denied (publickey).\nfatal: Could not read from remote",
        "remote: Permission to acme/widget.git denied to bot.\nfatal: unable to access: "
        "The requested URL returned error: 403",
    ],
)
def test_the_remote_refusing_us_is_not_an_environment_fault(err: str) -> None:
    code, text = _classify(err, "push", "origin")
    assert code == 6 and "refused by the remote" in text  # not exit 1 (a bug)


def test_a_remote_whose_own_disk_is_full_is_named_as_the_remote() -> None:
    err = "remote: fatal: write error: No space left on device\nerror: remote unpack failed: x"
    code, text = _classify(err, "push", "origin")
    assert code == 6 and "the remote could not store the push" in text
