"""Running generated workflows with a real Actions runner (nektos/act), offline, on a machine made
to look like a GitHub-hosted ubuntu-24.04 runner.

- act runs the jobs on the host (`-P ubuntu-24.04=-self-hosted`), inside `unshare -m` with an empty
  tmpfs over pyenv's root and the CUDA toolkit: no interpreter but the runner's tool cache, no
  nvcc; PATH is the system's only; HOME is a fresh folder; Docker is only the test's own engine.
- The pinned actions come from their trees on disk (`--local-repository`), located by
  RELFORGE_GHA_ACTIONS, else `../shared/gha/actions` beside the repository, else
  /work/shared/gha/actions (this machine's copy).
- setup-python finds its interpreters in act's tool cache (`<action cache>/tool_cache`): relocated
  copies of the host's CPythons, as GitHub's hosted images carry them (pip only, no test suite).
- Artifacts travel through act's own artifact server.

`act --json` prints one object per line; `ActRun` keeps the job and step results and each job's
output, so tests assert on what ran and what it printed.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from relforge.builders.artifacts.repairtools import patchelf_path
from relforge.builders.images.pythons import find_host_pythons
from tests import daemons
from tests.integration.conftest import free_port

REPO = Path(__file__).resolve().parents[1]
ACT = Path(sys.executable).parent / "act"
HIDDEN = ("/root/.pyenv", "/usr/local/cuda-13.0")  # what a hosted runner does not have
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HOSTED_LABELS = ("ubuntu-24.04", "ubuntu-latest")


def action_trees() -> Path:
    """The folder of `OWNER/REPO@SHA` action trees (see the module docstring)."""
    candidates = [
        os.environ.get("RELFORGE_GHA_ACTIONS", ""),
        str(REPO.parent / "shared" / "gha" / "actions"),
        "/work/shared/gha/actions",
    ]
    for candidate in candidates:
        if candidate and Path(candidate, "actions").is_dir():
            return Path(candidate)
    pytest.fail(
        "the pinned actions' trees are not on this machine: set RELFORGE_GHA_ACTIONS to a folder "
        "of OWNER/REPO@SHA trees (act cannot fetch them without github.com)"
    )


def local_repositories(trees: Path) -> list[str]:
    args = []
    for owner in sorted(trees.iterdir()):
        for tree in sorted(owner.iterdir()):
            name, _, sha = tree.name.partition("@")
            args += ["--local-repository", f"{owner.name}/{name}@{sha}={tree}"]
    return args


def make_tool_cache(cache: Path, minors: Sequence[str]) -> dict[str, str]:
    """`cache/tool_cache/Python/X.Y.Z/x64` for each minor, as setup-python looks for them;
    returns minor → full version."""
    found, missing = find_host_pythons(list(minors))
    if missing:
        pytest.fail(f"no host CPython for {', '.join(m.wanted for m in missing)} to copy")
    versions = {}
    for python in found:
        dest = cache / "tool_cache" / "Python" / python.version / "x64"
        if not dest.exists():
            _relocated_copy(python.prefix.resolve(), python.stdlib.resolve(), dest)
            exe = dest / "bin" / f"python{python.wanted}"
            subprocess.run(
                [str(patchelf_path()), "--set-rpath", "$ORIGIN/../lib", str(exe)], check=True
            )
            dest.with_name("x64.complete").touch()
        versions[python.wanted] = python.version
    return versions


def _relocated_copy(prefix: Path, stdlib: Path, dest: Path) -> None:
    """The interpreter without its test suite, static libraries and the host's site-packages
    (pip stays: a hosted runner's Python has it).  Its byte code stays too, as in the tool
    cache of a hosted image: without it every job's first Python compiled the standard library
    it imports."""
    lib = stdlib.relative_to(prefix).as_posix()  # lib/python3.12

    def ignore(folder: str, names: list[str]) -> set[str]:
        rel = Path(folder).relative_to(prefix).as_posix()
        dropped = {n for n in names if n.endswith(".a")}
        if rel == lib:
            dropped |= {"test", "idlelib", "tkinter", "turtledemo"} & set(names)
        if rel == f"{lib}/site-packages":
            dropped |= {n for n in names if not n.startswith("pip")}
        return dropped

    shutil.copytree(prefix, dest, symlinks=True, ignore=ignore)


@dataclass
class ActRun:
    """What one act invocation did."""

    code: int
    jobs: dict[str, str] = field(default_factory=dict)  # job name → success/failure
    steps: dict[tuple[str, str], str] = field(default_factory=dict)  # (job, step) → result
    output: dict[str, list[str]] = field(default_factory=dict)  # job name → lines
    log: str = ""

    def job(self, fragment: str) -> list[str]:
        """The names of the jobs that contain `fragment`."""
        return [name for name in self.jobs if fragment in name]

    def text(self, job_fragment: str) -> str:
        return "\n".join(
            line for name in self.output if job_fragment in name for line in self.output[name]
        )

    def merged(self, other: ActRun) -> ActRun:
        """Two runs (act takes one workflow per invocation) as one."""
        return ActRun(
            code=self.code or other.code,
            jobs={**self.jobs, **other.jobs},
            steps={**self.steps, **other.steps},
            output={**self.output, **other.output},
            log=self.log + other.log,
        )

    def failed(self) -> dict[str, str]:
        return {name: result for name, result in self.jobs.items() if result != "success"}

    def explain(self) -> str:
        """The failed jobs' last lines, for an assertion message."""
        parts = []
        for name in self.failed() or self.jobs:
            tail = "\n".join(self.output.get(name, [])[-40:])
            parts.append(f"--- {name}: {self.jobs.get(name)}\n{tail}")
        return "\n".join(parts)[-12000:] or self.log[-6000:]


@dataclass(frozen=True, kw_only=True)
class HostedRunner:
    """act set up to run jobs as a hosted runner would (module docstring)."""

    work: Path  # act's action cache (with its tool cache), artifacts, HOME
    env: Mapping[str, str]  # the only environment the jobs see (besides act's own)
    trees: Path

    def run(
        self,
        repo: Path,
        event: str,
        workflow: str,
        *,
        payload: Mapping[str, object] | None = None,
        variables: Mapping[str, str] | None = None,
        secrets: Mapping[str, str] | None = None,
        inputs: Mapping[str, str] | None = None,
        extra: Sequence[str] = (),
        timeout: float = 1200,
    ) -> ActRun:
        home = self.work / "home"
        home.mkdir(parents=True, exist_ok=True)
        argv = [str(ACT), event, "--json", "--action-offline-mode", "-W", workflow]
        for label in HOSTED_LABELS:
            argv += ["-P", f"{label}=-self-hosted"]
        argv += local_repositories(self.trees)
        artifacts = self.work / "artifacts" / str(free_port())
        argv += ["--artifact-server-path", str(artifacts), "--artifact-server-addr", "127.0.0.1"]
        argv += ["--artifact-server-port", str(free_port()), "--no-cache-server"]
        argv += ["--action-cache-path", str(self.work / "act")]
        if payload is not None:
            event_file = self.work / f"event-{free_port()}.json"
            event_file.write_text(json.dumps(payload), encoding="utf-8")
            argv += ["--eventpath", str(event_file)]
        for flag, values in (("--var", variables), ("--secret", secrets), ("--input", inputs)):
            for key, value in (values or {}).items():
                argv += [flag, f"{key}={value}"]
        argv += list(extra)
        mounts = " && ".join(f"mount -t tmpfs tmpfs {shlex.quote(p)}" for p in HIDDEN)
        env = {**self.env, "HOME": str(home)}
        inner = shlex.join(["env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv])
        # a daemon of the test run (tests.daemons): act and the jobs it runs on the host end
        # with it, also when the run is killed
        done = daemons.run(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", f"{mounts} && exec {inner}"],
            cwd=repo,
            timeout=timeout,
        )
        result = parse(done.returncode, done.stdout + done.stderr)
        # kept for a failed test (pytest keeps its temporary files): what act printed
        (self.work / f"act-{Path(workflow).stem}-{event}-{free_port()}.log").write_text(
            result.log, encoding="utf-8"
        )
        if os.environ.get("RELFORGE_ACT_TRANSCRIPT"):  # `make demo-ci`
            _transcript(repo, argv, env, result)
        return result


def _transcript(repo: Path, argv: list[str], env: Mapping[str, str], run: ActRun) -> None:
    """What one act run did, for a person: where and how it ran, then each job's steps."""
    hidden = ", ".join(HIDDEN)
    lines = [
        f"\n# a hosted runner's view: `unshare -m` with an empty tmpfs over {hidden}; only this",
        "# environment: " + " ".join(f"{k}={v}" for k, v in env.items() if "SECRET" not in k),
        f"$ cd {repo}",
        "$ " + shlex.join(argv).replace(" --", " \\\n    --"),
    ]
    for job, result in run.jobs.items():
        lines.append(f"  {'ok  ' if result == 'success' else 'FAIL'} {job}")
        for (step_job, step), step_result in run.steps.items():
            if step_job == job and not step.startswith(("Set up job", "Complete job")):
                lines.append(f"         {step_result:8} {step}")
    print("\n".join(lines), file=sys.stderr, flush=True)


def parse(code: int, log: str) -> ActRun:
    run = ActRun(code=code, log=log)
    for line in log.splitlines():
        if not line.startswith("{"):
            continue
        try:
            item = json.loads(line)
        except ValueError:
            continue
        job = item.get("job")
        if not job:
            continue
        job = job.strip()
        if item.get("jobResult"):
            run.jobs[job] = item["jobResult"]
        if item.get("stepResult") and item.get("step"):
            run.steps[(job, item["step"])] = item["stepResult"]
        if item.get("raw_output") or "msg" in item:
            run.output.setdefault(job, []).append(str(item.get("msg", "")).rstrip("\n"))
    return run


def hosted_environment(**extra: str) -> dict[str, str]:
    """What a hosted runner's jobs inherit, plus `extra` (the runner's own configuration)."""
    return {"PATH": SYSTEM_PATH, "LANG": "C.UTF-8", "CI": "true", **extra}
