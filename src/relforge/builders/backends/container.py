"""DockerBuilder: build a cell in a container of the cell's image, with the docker SDK.

The source snapshot is mounted read-only and copied inside; results come back through a
mounted output folder; the container has no network unless asked, sees only the cell's
environment, streams its output to the cell's log, is killed at the deadline and always removed.
The build requirements come as wheels fetched on the host for the cell's Python and platform
(like the dependency axes'); when the build backend asks for more (PEP 517's
get_requires_for_build_wheel), the container stops with REQUIRES_EXIT, the host fetches them and
starts it once more, and remembers them for the next build in that image.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from relforge.builders.artifacts import RepairPolicy, container_tools_dir
from relforge.builders.backends.base import (
    RESOLVING,
    BuilderName,
    BuildJob,
    build_phase,
    default_command,
    output_files,
    repair_phase,
)
from relforge.builders.control import BuildFailure, CellSkipped, cancel, cancellable
from relforge.builders.images import (
    LABEL_CUDA,
    LABEL_PYTHONS,
    PullPolicy,
    connect,
    image_id,
    missing_image_hint,
    pull,
    repo_digest,
    wants_pull,
)
from relforge.builders.inputs import (
    BuildSystem,
    build_system,
    fetch_build_wheels,
    merged,
    pip_find_links_env,
    read_requirements,
    remember,
    remembered,
    static_requirements,
    write_control,
)
from relforge.errors import ConfigError
from relforge.locations import user_cache_dir
from relforge.matrix.cell import Cell

SKIP_EXIT = 86  # in_container.sh: the image cannot build this cell
REQUIRES_EXIT = 87  # in_container.sh: the build backend asks for wheels not fetched yet
_ARCHES = {"amd64": "x86_64", "arm64": "aarch64"}


class DockerBuilder:
    name: BuilderName = "docker"

    def __init__(
        self,
        *,
        network: bool = False,
        pull: PullPolicy = "never",
        say: Callable[[str], None] = lambda _text: None,
    ) -> None:
        self.network = network
        self.pull = pull
        self.say = say
        self._client: Any = None
        self._unreachable: ConfigError | None = None
        self._ids: dict[str, str | None] = {}
        self._labels: dict[str, dict[str, str]] = {}
        self._arch: str | None = None
        self._lock = threading.Lock()

    def client(self) -> Any:
        with self._lock:
            if self._client is None and self._unreachable is None:
                try:
                    self._client = connect()
                except ConfigError as exc:
                    self._unreachable = exc
            if self._unreachable is not None:
                raise self._unreachable
            return self._client

    def image_id(self, name: str) -> str | None:
        client = self.client()
        with self._lock:
            if name not in self._ids:
                self._ids[name] = image_id(client, name)
            return self._ids[name]

    def labels(self, name: str) -> dict[str, str]:
        """The image's labels ({} when the engine lacks it)."""
        import docker.errors

        client = self.client()
        with self._lock:
            if name not in self._labels:
                try:
                    self._labels[name] = dict(client.images.get(name).labels or {})
                except docker.errors.ImageNotFound:
                    self._labels[name] = {}
            return self._labels[name]

    def engine_arch(self) -> str:
        client = self.client()
        with self._lock:
            if self._arch is None:
                self._arch = str(client.info().get("Architecture", ""))
            return self._arch

    def check(self, cells: Sequence[Cell]) -> None:
        """The engine answers and has every cell's image, pulled first as the policy says."""
        client = self.client()
        for name in dict.fromkeys(c.image for c in cells if c.image):
            present = self.image_id(name) is not None
            if wants_pull(self.pull, present, name):
                why = "--pull always" if present else "the engine does not have it"
                pull(client, name, why, self.say)
                with self._lock:  # look the pulled image up afresh
                    self._ids.pop(name, None)
                    self._labels.pop(name, None)
            if self.image_id(name) is None:
                raise ConfigError(
                    f"the Docker engine has no image {name}",
                    key="image",
                    hint=missing_image_hint(name),
                )

    def unsatisfied(self, cell: Cell) -> str | None:
        if cell.os != "linux":
            return f"Docker builds Linux cells; this one is {cell.os}"
        if not cell.image:
            return "the cell names no builder image"
        arch = self.engine_arch()
        if _ARCHES.get(arch, arch) != _ARCHES.get(cell.arch, cell.arch):
            return f"the Docker engine runs {arch}, the cell is {cell.arch}"
        if self.image_id(cell.image) is None:
            return f"the Docker engine has no image {cell.image}"
        return image_lacks(cell, self.labels(cell.image))

    def identity(self, cell: Cell) -> Mapping[str, str]:
        found = {"image": cell.image or "", "image_id": self.image_id(cell.image or "") or ""}
        digest = repo_digest(self.client(), cell.image) if cell.image and found["image_id"] else ""
        if digest:  # a pulled image: the registry's name for exactly these bytes
            found["image_digest"] = digest
        return found

    def build(self, job: BuildJob) -> None:
        deadline = time.monotonic() + job.timeout_s
        control = job.work / "control"
        pep517 = not job.command and job.cell.python is not None
        system = build_system(job.source) if job.cell.python else None
        write_control(control, system if pep517 else None)
        (control / "build.sh").write_text(build_script(), encoding="utf-8")
        (control / "repair.sh").write_text(_repair_script(job.repair), encoding="utf-8")
        volumes, env = _mounts(job, control)
        command = job.command or default_command("/out/raw")
        static = static_requirements(system, job.cell) if system is not None else []
        memory = self._memory_key(job, system, static)
        requirements = merged(static, remembered(memory))
        for attempt in range(2):
            out = job.work / f"container-out-{attempt}"
            out.mkdir()
            mounts = {**volumes, str(out): {"bind": "/out", "mode": "rw"}}
            if system is not None:  # fetched on the host: the container has no network
                job.phase(RESOLVING)
                wheels = fetch_build_wheels(
                    job.cell,
                    requirements,
                    job.work / f"build-wheels-{attempt}",
                    log=job.log,
                    deadline=deadline,
                )
                mounts[str(wheels)] = {"bind": "/relforge/build-wheels", "mode": "ro"}
            argv = ["/bin/sh", "/relforge/control/build.sh", *command]
            job.phase(container_phase(job))
            code = self._run(job, argv, env, mounts)
            if code == SKIP_EXIT and (out / "skip-reason").exists():
                raise CellSkipped((out / "skip-reason").read_text(encoding="utf-8").strip())
            asked = read_requirements(out / "build-requires")
            if code == REQUIRES_EXIT and asked and attempt == 0:
                requirements = merged(requirements, asked)  # fetch them, then once more
                with job.log.open("a", encoding="utf-8") as fh:
                    fh.write(f"\n# relforge: fetching {', '.join(asked)}; building again\n")
                remember(memory, [r for r in requirements if r not in static])
                continue
            if code == REQUIRES_EXIT and asked:
                raise BuildFailure(
                    f"the build backend still asks for {', '.join(asked)} after relforge "
                    "fetched them: see the log"
                )
            if code != 0:
                raise BuildFailure(f"the build in {job.cell.image} exited with code {code}")
            for artifact in output_files(out / "final"):
                shutil.move(artifact, job.out / artifact.name)
            return

    def _memory_key(
        self, job: BuildJob, system: BuildSystem | None, static: list[str]
    ) -> list[str]:
        """What decides which requirements the backend adds in this image."""
        image = job.cell.image or ""
        backend = system.backend if system is not None else ""
        return [image, self.image_id(image) or "", job.cell.id, backend, *static]

    def _run(
        self,
        job: BuildJob,
        argv: list[str],
        env: Mapping[str, str],
        volumes: Mapping[str, Mapping[str, str]],
    ) -> int:
        import docker.errors
        import requests.exceptions

        client = self.client()
        if cancel.requested():
            raise BuildFailure("interrupted")
        try:
            container = client.containers.create(
                job.cell.image,
                command=argv,
                environment=dict(env),
                volumes=dict(volumes),
                network_mode=None if self.network else "none",
                labels={"org.relforge.cell": job.cell.id},
                working_dir="/",
            )
        except docker.errors.DockerException as exc:
            raise BuildFailure(f"cannot create a container of {job.cell.image}: {exc}") from None
        try:
            container.start()
            pump = threading.Thread(target=_pump_logs, args=(container, job.log), daemon=True)
            pump.start()
            with cancellable(container.kill):
                try:
                    status = container.wait(timeout=max(job.timeout_s, 1.0))
                except requests.exceptions.RequestException:
                    container.kill()
                    raise BuildFailure(
                        f"the build timed out after {job.timeout_s / 60:.0f} minutes"
                    ) from None
            pump.join(timeout=30)
            return int(status.get("StatusCode", 1))
        finally:
            with contextlib.suppress(docker.errors.DockerException):
                container.remove(force=True)


def container_phase(job: BuildJob) -> str:
    """`pip wheel + repair (auditwheel) in IMAGE`: the container runs both; the host sees one
    step (it does not read the container's output to tell them apart)."""
    steps = build_phase(job) + (f" + {repair_phase(job)}" if job.repair else "")
    return f"{steps} in {job.cell.image}"


def _mounts(job: BuildJob, control: Path) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """The folders every run of the job's container mounts, and its environment."""
    volumes = {
        str(job.source): {"bind": "/src", "mode": "ro"},
        str(control): {"bind": "/relforge/control", "mode": "ro"},
    }
    if job.repair is not None:
        volumes[str(container_tools_dir())] = {"bind": "/relforge/tools", "mode": "ro"}
        volumes[str(_pycache_dir())] = {"bind": "/relforge/pycache", "mode": "rw"}
    axis_env: dict[str, str] = {}
    if job.dependencies is not None:  # in_container.sh installs them before the build
        volumes[str(job.dependencies.folder)] = {"bind": "/relforge/deps", "mode": "ro"}
        axis_env = pip_find_links_env(job.dependencies, "/relforge/deps")
    env = {
        **job.env,
        **axis_env,
        "RELFORGE_OUTPUT_DIR": "/out/raw",
        "RELFORGE_SOURCE_FOLDER": job.source_folder,
        "RELFORGE_UID": str(os.getuid()),
        "RELFORGE_GID": str(os.getgid()),
    }
    return volumes, env


def image_lacks(cell: Cell, labels: Mapping[str, str]) -> str | None:
    """What a relforge-made image (its labels say what it holds) lacks for `cell`; None when it
    has it or says nothing (an image of another origin is tried; in_container.sh then skips)."""
    pythons = labels.get(LABEL_PYTHONS)
    if cell.python and pythons is not None and cell.python not in pythons.split():
        return f"the image {cell.image} has Python {pythons or 'none'}, not {cell.python}"
    toolkits = labels.get(LABEL_CUDA)
    if cell.accelerator == "cuda" and toolkits is not None:
        wanted = cuda_minor(cell.accelerator_version or "")
        if wanted not in toolkits.split():
            has = f"CUDA {toolkits}" if toolkits else "no CUDA toolkit"
            return f"the image {cell.image} has {has}, not CUDA {wanted}"
    return None


def cuda_minor(version: str) -> str:
    """ "13.0.0" or "13.0" → "13.0"."""
    try:
        release = Version(version).release
    except InvalidVersion:
        return version
    return ".".join(str(n) for n in release[:2])


def _pycache_dir() -> Path:
    """Where containers keep the bytecode of the mounted repair tools between builds: the tools
    are read-only, so without it every cell's repair compiles auditwheel and pyelftools again
    (about 1 s of CPU per cell, measured on this 2-core machine)."""
    folder = user_cache_dir() / "container-pycache"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _pump_logs(container: Any, log: Path) -> None:
    """Append the container's output to the cell's log as it comes."""
    with log.open("ab") as fh:
        fh.write(b"\n# container output\n")
        for chunk in container.logs(stream=True, follow=True):
            fh.write(chunk)
            fh.flush()


def build_script() -> str:
    """in_container.sh, the script a container runs: package data beside this module (found by
    this module's own package, so that it moves with it)."""
    package = __name__.rpartition(".")[0]
    return resources.files(package).joinpath("in_container.sh").read_text("utf-8")


def _repair_script(policy: RepairPolicy | None) -> str:
    """Defines `relforge_repair WHEEL` for in_container.sh (the policy decided on the host)."""
    if policy is None:
        body = 'mv "$1" /out/final/'
    else:
        args = policy.argv("python", "wheel", "/out/final")[1:-1]
        body = (
            "PYTHONPATH=/relforge/tools PYTHONPYCACHEPREFIX=/relforge/pycache "
            'PATH="/relforge/tools/bin:$PATH" "$PY" ' + shlex.join(args) + ' "$1"'
        )
    return f"relforge_repair() {{\n    {body}\n}}\n"
