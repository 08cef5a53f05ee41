"""Writers of one channel started within milliseconds of each other — publish, promote, yank,
index, mixed; 2, 4 and 8 `relforge` processes, each in its own working directory — on a local
store and on S3 (moto): the channel's writer lease makes them take turns, so every run
succeeds (or, with --no-wait, refuses naming the holder), verify is clean, the channel-root
pages exist and a rerun of each changes nothing.  A holder SIGKILLed while it holds the lease
is taken over once the lease expires (`--lease-ttl`), and its rerun finishes its work."""

from __future__ import annotations

import hashlib
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result
from tests.integration.conftest import S3
from tests.integration.test_promote_flow import objects, s3_matrix
from tests.pacedcli import paced_relforge
from tests.promote_kit import build_wheel, matrix_text, write_manifest

pytestmark = pytest.mark.slow
RELFORGE = [sys.executable, "-m", "relforge"]
CPU = "wheel-linux-x86_64-py3.11-cpu"


class World:
    """A matrix whose store is local or S3, with 1.0.0 (cpu cell) in the test channel."""

    def __init__(self, tmp_path: Path, backend: str, s3: Callable[[], S3]) -> None:
        self.tmp = tmp_path
        self.backend = backend
        if backend == "s3":
            self.s3: S3 | None = s3()
            self.matrix = s3_matrix(tmp_path, self.s3)
            self.store = Path()
        else:
            self.s3 = None
            self.store = tmp_path / "store"
            publishing = textwrap.dedent(f"""\
                publishing:
                  store: file://{self.store}
                  backup_store: file://{tmp_path / "backup"}
                """)
            self.matrix = tmp_path / "matrix.yaml"
            self.matrix.write_text(matrix_text(publishing), encoding="utf-8")

    def manifest(self, version: str) -> Path:
        work = self.tmp / f"build-{version}"
        wheel = build_wheel(
            work, version=f"{version}+cpu", plat="manylinux_2_28_x86_64", payload=version
        )
        manifest = work / "relforge-manifest.json"
        write_manifest(manifest, {CPU: wheel})
        return manifest

    def argv(self, command: str) -> list[str]:
        """One writer: `publish:1.0.1`, `promote`, `yank`, `index`."""
        m = str(self.matrix)
        name, _, version = command.partition(":")
        if name == "publish":
            manifest = str(self.manifest(version))
            return ["publish", m, "--channel", "test", "--manifest", manifest, "--partial"]
        if name == "promote":
            return ["promote", m, "--version", "1.0.0", "--partial"]
        if name == "yank":
            return ["yank", m, "--version", "1.0.0", "--channel", "test", "--reason", "broken"]
        return ["index", m, "--channel", "test", "--partial"]

    def state(self) -> dict[str, str]:
        """key → sha256 of every object in the store (the lease included, were it left)."""
        if self.s3 is not None:
            return {k: v[0] for k, v in objects(self.s3).items()}
        return {
            p.relative_to(self.store).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(self.store.rglob("*"))
            if p.is_file() and ".relforge-meta" not in p.parts
        }

    def put(self, key: str, data: bytes) -> None:
        if self.s3 is not None:
            self.s3.client().put_object(Bucket=self.s3.bucket, Key=self.key(key), Body=data)
        else:
            (self.store / key).parent.mkdir(parents=True, exist_ok=True)
            (self.store / key).write_bytes(data)

    def delete(self, key: str) -> None:
        if self.s3 is not None:
            self.s3.client().delete_object(Bucket=self.s3.bucket, Key=self.key(key))
        else:
            (self.store / key).unlink()

    def key(self, key: str) -> str:
        return f"dl/{key}" if self.s3 is not None else key


def start(world: World, commands: list[str], *extra: str) -> list[subprocess.Popen[str]]:
    """Every writer at once (each in its own working directory); their argv are made first."""
    argvs = [[*RELFORGE, *world.argv(c), "--execute", *extra] for c in commands]
    procs = []
    for i, argv in enumerate(argvs):
        cwd = world.tmp / f"writer-{i}"
        cwd.mkdir(exist_ok=True)
        procs.append(
            subprocess.Popen(
                argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
        )
    return procs


def finish(procs: list[subprocess.Popen[str]]) -> list[tuple[int, str]]:
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        out.append((proc.returncode, stdout + stderr))
    return out


MIXES = {
    2: ["publish:1.0.1", "promote"],
    4: ["publish:1.0.1", "promote", "yank", "index"],
    8: [
        "publish:1.0.1",
        "promote",
        "yank",
        "index",
        "publish:1.0.2",
        "publish:1.0.3",
        "index",
        "yank",
    ],
}


@pytest.fixture
def world(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    run: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
) -> World:
    monkeypatch.chdir(tmp_path)
    made = World(tmp_path, request.param, lambda: request.getfixturevalue("s3"))
    first = run(*made.argv("publish:1.0.0"), "--execute")
    assert first.code == 0, first.out + first.err
    return made


def check_converged(world: World, run: Callable[..., Result], commands: list[str]) -> None:
    """verify clean on both channels (a held lease is no finding), the root pages there, no
    lease left, reruns no-ops."""
    state = world.state()
    assert not [k for k in state if "relforge/leases/" in k]  # every lease was released
    world.put("relforge/leases/test.json", b'{"holder": "someone"}')
    for channel in ("test", "release"):
        verified = run("verify", str(world.matrix), "--channel", channel)
        assert verified.code == 0, verified.out + verified.err
    world.delete("relforge/leases/test.json")
    assert world.key("whl/test/rfdemo/index.html") in state  # the test channel's root pages
    assert world.key("whl/rfdemo/index.html") in state  # the release channel's
    for command in dict.fromkeys(commands):
        again = run(*world.argv(command), "--execute")
        assert again.code == 0, f"{command}: {again.out}{again.err}"
    assert world.state() == state  # each rerun was a no-op


# CPU is what the suite is short of (each writer is a process of its own): 2 and 8 writers on a
# local store, 4 on S3 (the lease's races on S3 are tested in threads in test_lease_s3.py)
@pytest.mark.parametrize(
    ("world", "writers"), [("local", 2), ("local", 8), ("s3", 4)], indirect=["world"]
)
def test_writers_started_together_take_turns(
    world: World, writers: int, run: Callable[..., Result]
) -> None:
    commands = MIXES[writers]
    for command in commands:
        world.argv(command)  # build the wheels before the start line
    results = finish(start(world, commands))
    for command, (code, output) in zip(commands, results, strict=True):
        assert code == 0, f"{command}: {output}"
    # (whether one waited depends on timing: waiting is tested in tests/unit/test_lease.py)
    check_converged(world, run, commands)


@pytest.mark.parametrize("world", ["local"], indirect=True)
def test_writers_that_will_not_wait_refuse_naming_the_holder(
    world: World, run: Callable[..., Result]
) -> None:
    commands = ["index", "promote", "yank", "publish:1.0.1", "index"]
    for command in commands:
        world.argv(command)
    results = finish(start(world, commands, "--no-wait"))
    codes = [code for code, _ in results]
    assert set(codes) <= {0, 5} and 0 in codes, results
    for code, output in results:
        if code == 5:
            assert "the test channel's lease in " in output and " is held by " in output
            assert " pid " in output and "(relforge " in output and "--no-wait" in output
            assert "Traceback" not in output
    for command, (code, _) in zip(commands, results, strict=True):
        if code == 5:  # the refused ones, run again, succeed
            again = run(*world.argv(command), "--execute")
            assert again.code == 0, again.out + again.err
    check_converged(world, run, commands)


def lease_held(world: World, channel: str) -> bool:
    if world.s3 is not None:
        listed = world.s3.client().list_objects_v2(
            Bucket=world.s3.bucket, Prefix=world.key(f"relforge/leases/{channel}.json")
        )
        return bool(listed.get("Contents"))
    return (world.store / "relforge" / "leases" / f"{channel}.json").exists()


@pytest.mark.parametrize("world", ["local", "s3"], indirect=True)
def test_a_killed_holder_is_taken_over_once_its_lease_expires(
    world: World, run: Callable[..., Result]
) -> None:
    argv = [*world.argv("promote"), "--execute", "--workers", "1", "--lease-ttl", "2"]
    cwd = world.tmp / "killed"
    cwd.mkdir()
    proc = subprocess.Popen(
        [*paced_relforge(transfer_delay=1), *argv],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    journal = cwd / ".relforge" / "journal"
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if lease_held(world, "release") and any(
            '"done"' in p.read_text() for p in journal.glob("promote-*.jsonl")
        ):
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the promotion finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert lease_held(world, "release")  # a dead holder's lease stays until it expires

    # another writer of the release channel waits for it, then takes it over
    taker = run("index", str(world.matrix), "--channel", "release", "--partial", "--execute")
    assert taker.code == 0, taker.out + taker.err
    assert "took over the release channel's lease in " in taker.err
    assert f"pid {proc.pid} (relforge promote), expired " in taker.err
    assert not lease_held(world, "release")

    # the killed promotion, rerun, finishes what it began
    resumed = subprocess.run([*RELFORGE, *argv], cwd=cwd, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "resuming" in resumed.stdout
    check_converged(world, run, ["promote", "index"])
