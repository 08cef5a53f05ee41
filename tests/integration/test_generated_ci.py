"""The generated workflows, run by a real Actions runner (nektos/act) made to look like a hosted
ubuntu-24.04 runner (tests/actkit.py), on the example project (tests/ciworld.py):

- a pull request builds and tests the condensed cells (a CPU cell on the runner with the cell's
  Python set up, a CUDA cell in its image pulled from a registry) and uploads nothing;
- an RC tag on release/1.0 builds, tests and uploads every cell (4 wheels and the archive) to the
  test channel on moto; the version reaches the pages only when whole, whichever workflow ends
  last; pip and uv then install it from the channel;
- the release-day workflows promote it (a dry run first) and stage and upload it to PyPI;
- a nightly dispatch builds and tests without uploading;
- an issue comment makes the bot pick a fix onto a release branch;
- a relforge wheel whose bytes differ from the pinned sha256 is never installed.

Only what exists online alone is switched off by its documented switch: provenance attestation
(`RELFORGE_ATTEST=false`: no Sigstore offline) and the OIDC role (`RELFORGE_AWS_ROLE_ARN`
unset: the runner's own credentials, as on a self-hosted runner).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from relforge.builders.images.pythons import find_host_pythons
from relforge.workflows.toolpins import package_tool_pins
from tests.actkit import ActRun, HostedRunner, action_trees, make_tool_cache
from tests.botworld import FIXES, comment_event, make_world
from tests.botworld import REPO as BOT_REPO
from tests.ciworld import (
    AWS,
    AWS_REGION,
    CUDA_TAG,
    Index,
    Project,
    example_project,
    file_index,
    forget_image,
    git,
    keys_in,
    new_bucket,
    push_image,
    pypiserver,
    registry,
    relforge,
    relforge_wheel,
    runner,
    wheelhouse,
)
from tests.fakegithub import TOKEN, start
from tests.integration.builderimage import builder_image_archive
from tests.integration.conftest import free_port
from tests.integration.dockerd import running_dockerd

pytestmark = [pytest.mark.docker, pytest.mark.slow]

PYPI_TOKEN = "pypi-token-for-the-test"
OFFLINE = {"RELFORGE_ATTEST": "false"}  # no Sigstore offline: the documented switch
WHEELS = "relforge-linux-wheel.yml"
ARCHIVES = "relforge-linux-archive.yml"
CU130 = "wheel-linux-x86_64-py3.13-cu130"
OUT = ".github/workflows"
ARCHS = 'arch_list: ["7.5", "8.0", "9.0", "12.0+PTX"]'  # the example's, in matrix/example.yaml
EXAMPLE_PYTHONS = '    python: ["3.10", "3.11", "3.12", "3.13"]\n'  # the same
CI_PYTHONS = ("3.10", "3.13")  # the oldest and the newest (which pull requests build)
WHEEL_CELLS = len(CI_PYTHONS) * 2  # cpu and cu130
RELFORGE_PYTHON = "3.12"  # relforge's own on the runner (ci.python), from the tool cache too


@dataclass(frozen=True, kw_only=True)
class World:
    project: Project
    act: HostedRunner
    endpoint: str
    bucket: str
    download_url: str
    image: str
    docker_host: str
    pypi: Index
    relforge_wheel: Path
    root: Path
    image_pushed: Future[None]

    def wait_for_image(self) -> None:
        """Until the CUDA image is in the registry (pushed while the first act run went on)."""
        self.image_pushed.result()

    def run(self, event: str, *names: str, **kw: Any) -> ActRun:
        """Each workflow in turn (act runs one per invocation), as one result."""
        variables = {**OFFLINE, **kw.pop("variables", {})}
        runs = [
            self.act.run(self.project.clone, event, f"{OUT}/{name}", variables=variables, **kw)
            for name in names
        ]
        result = runs[0]
        for more in runs[1:]:
            result = result.merged(more)
        return result

    def keys(self, prefix: str = "") -> list[str]:
        return keys_in(self.endpoint, self.bucket, f"dl/{prefix}")


@pytest.fixture(scope="module")
def world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, moto_endpoint: str
) -> Iterator[World]:
    root = tmp_path_factory.mktemp("ci")
    with (
        running_dockerd(exclusive=False) as docker_host,
        registry(root) as registry_host,
        pytest.MonkeyPatch.context() as mp,
    ):
        mp.setenv("DOCKER_HOST", docker_host)
        for name, value in {**AWS, **AWS_REGION}.items():  # moto's, for the test's own reads
            mp.setenv(name, value)
        image = f"{registry_host}/{CUDA_TAG}"
        wheel = relforge_wheel(root / "relforge-dist")
        packages = root / "runner-index"
        shutil.copytree(
            wheelhouse(Path.home() / ".cache" / "relforge" / "tests", wheel, "3.12"), packages
        )
        shutil.copy2(wheel, packages)
        runner_index = file_index(packages)
        (root / "pypi").mkdir()
        with pypiserver(root, root / "pypi", {"__token__": PYPI_TOKEN}) as pypi:
            bucket = new_bucket(moto_endpoint)
            download_url = f"{moto_endpoint}/{bucket}/dl"
            project = example_project(root, ci_edits(moto_endpoint, bucket, pypi, image))
            act = runner(
                root / "runner",
                action_trees(),
                PIP_INDEX_URL=runner_index,
                DOCKER_HOST=docker_host,
                **AWS,
                **AWS_REGION,
            )
            make_tool_cache(root / "runner" / "act", sorted({*CI_PYTHONS, RELFORGE_PYTHON}))
            cut_rc(project)
            # last: under `make test` the Docker build file may be making the image meanwhile
            # (tests/integration/builderimage.py); this file then takes its archive (the engine
            # here never needs the image: its builds pull it from the registry)
            archive, local = builder_image_archive(
                request, tmp_path_factory, docker_host, root / "push", CUDA_TAG
            )
            # made here: the engine keeps it by its content tag only, so CUDA_TAG's pulls fetch
            # every layer from the registry (it never saw these uncompressed blobs)
            forget_image(docker_host, CUDA_TAG)
            # the push goes on while the scenarios that need no image run; those that do wait
            # for it (World.wait_for_image)
            with ThreadPoolExecutor(max_workers=1) as pool:
                pushed = pool.submit(_publish_image, archive, local, image)
                yield World(
                    project=project,
                    act=act,
                    endpoint=moto_endpoint,
                    bucket=bucket,
                    download_url=download_url,
                    image=image,
                    docker_host=docker_host,
                    pypi=pypi,
                    relforge_wheel=wheel,
                    root=root,
                    image_pushed=pushed,
                )


def _publish_image(archive: Path, local: str, image: str) -> None:
    try:
        push_image(archive, local, image)
    finally:
        archive.unlink()  # a gigabyte (in memory under `make test`)


def ci_edits(endpoint: str, bucket: str, pypi: Index, image: str) -> dict[str, str]:
    """The matrix edits the README's "Running the generated CI" asks for: a shared store, its
    endpoint and the site's URL; the CUDA image from a registry the runners reach; the CPU cells
    and the archive built on the runner itself.  Two more, for the test's time only (these
    scenarios test the CI around the builds, every job of which installs relforge; the example's
    eight wheel cells, each with four CUDA architectures, are built and audited by
    test_build_docker.py and test_gpu_truth.py): two Pythons instead of four (the oldest, 3.10,
    and the newest, 3.13, which pull requests build), so an RC runs 5 cells' 15 jobs instead of
    9 cells' 27; and one CUDA architecture with its PTX instead of four."""
    return {
        ARCHS: 'arch_list: ["12.0+PTX"]',
        EXAMPLE_PYTHONS: f"    python: {json.dumps(list(CI_PYTHONS))}\n",
        "store: file://.relforge/store      # relative to the working directory": (
            f"store: s3://{bucket}/dl\n  s3_endpoint_url: {endpoint}\n"
            f"  pypi_repository_url: {pypi.url}/"
        ),
        "  size_limit_mb: 100\n": f"  size_limit_mb: 100\n  download_url: {endpoint}/{bucket}/dl\n",
        "          linux-x86_64: {image: relforge/builder:bookworm}": "          linux-x86_64: {}",
        "            image: relforge/builder:bookworm\n": f"            image: {image}\n",
        "      images:\n        linux-x86_64:\n          cpu: relforge/builder:bookworm\n": "",
    }


def cut_rc(project: Project) -> None:
    """release/1.0 cut and v1.0.0-rc1 tagged with relforge itself, then checked out."""
    clone = project.clone
    relforge(clone, "release", "cut", "1.0", "--matrix", project.matrix, "--execute")
    relforge(clone, "release", "tag", "1.0.0", "--rc", "--execute")
    git(clone, "fetch", "-q", "--tags", "origin")
    git(clone, "checkout", "-q", "release/1.0")


def checkout(world: World, ref: str) -> None:
    git(world.project.clone, "checkout", "-q", ref)


def pr_payload(number: int = 42) -> dict[str, Any]:
    return {
        "action": "synchronize",
        "number": number,
        "pull_request": {
            "number": number,
            "head": {"ref": "fix-1", "sha": "0" * 40},
            "base": {"ref": "release/1.0"},
        },
        "repository": {"full_name": "acme/hello-native", "default_branch": "main"},
    }


def tag_payload(tag: str) -> dict[str, Any]:
    return {
        "ref": f"refs/tags/{tag}",
        "repository": {"full_name": "acme/hello-native", "default_branch": "main"},
    }


# --- a pull request ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pull_request(world: World) -> ActRun:
    checkout(world, "release/1.0")
    archives = world.run("pull_request", ARCHIVES, payload=pr_payload())  # no image: meanwhile
    world.wait_for_image()  # the CUDA cell pulls it
    forget_image(world.docker_host, world.image)
    return world.run("pull_request", WHEELS, payload=pr_payload()).merged(archives)


def _cell(job: str) -> str:
    """`wheel-…-cu130-2/relforge build/build` → the cell id (act numbers matrix jobs)."""
    return re.sub(r"-\d+$", "", job.split("/")[0])


def _log(run: ActRun, cell: str, job: str) -> str:
    """What the `job` (build, test, upload) of `cell` printed."""
    return "\n".join(
        line
        for name, lines in run.output.items()
        if _cell(name) == cell and name.endswith(f"/{job}")
        for line in lines
    )


def test_a_pull_request_builds_and_tests_the_condensed_cells(pull_request: ActRun) -> None:
    assert pull_request.code == 0, pull_request.explain()
    cells = {_cell(name) for name in pull_request.jobs}
    assert cells == {
        "wheel-linux-x86_64-py3.13-cpu",
        CU130,
        "libtorch-linux-x86_64-cpu-shared-with-deps-release",
    }
    assert set(pull_request.jobs.values()) == {"success"}
    assert {name.rsplit("/", 1)[1] for name in pull_request.jobs} == {"build", "test"}


def test_a_pull_request_uploads_nothing(world: World, pull_request: ActRun) -> None:
    assert pull_request.code == 0, pull_request.explain()
    assert not pull_request.job("/upload") and not pull_request.job("index")
    assert world.keys() == []


def test_a_cuda_cell_builds_in_its_image_pulled_from_the_registry(
    world: World, pull_request: ActRun
) -> None:
    build = _log(pull_request, CU130, "build")
    assert f"pulling {world.image} (the engine does not have it)" in build
    assert f"pulled {world.image}: {world.image.rsplit(':', 1)[0]}@sha256:" in build
    assert "(docker)" in build  # the line reporter names the builder of the cell


def test_a_cpu_cell_builds_on_the_runner_with_the_cells_python(pull_request: ActRun) -> None:
    build = _log(pull_request, "wheel-linux-x86_64-py3.13-cpu", "build")
    assert "Successfully set up CPython (3.13" in build  # setup-python, from the tool cache
    assert "(host)" in build
    # relforge came through the pinned uv, which pip installed by the sha256 of its wheel
    assert f"Successfully installed uv-{package_tool_pins()['uv'].version}" in build
    plain = re.sub(r"\x1b\[[0-9;]*m", "", build)  # uv colours its lines on the runner
    assert re.search(r"Installed \d+ packages in ", plain), plain[-3000:]


# --- an RC tag: every cell to the test channel --------------------------------------------------


@dataclass(frozen=True)
class RcRuns:
    wheels: ActRun
    wheels_only_keys: list[str]
    archives: ActRun
    site: ActRun


@pytest.fixture(scope="module")
def rc(world: World) -> RcRuns:
    world.wait_for_image()
    checkout(world, "v1.0.0-rc1")
    forget_image(world.docker_host, world.image)
    payload = tag_payload("v1.0.0-rc1")
    wheels = world.run("push", WHEELS, payload=payload)
    between = world.keys("whl/test/")
    archives = world.run("push", ARCHIVES, payload=payload)
    site = world.run("push", "relforge-site.yml", payload=payload)
    return RcRuns(wheels, between, archives, site)


def test_an_rc_tag_builds_tests_and_uploads_every_cell(world: World, rc: RcRuns) -> None:
    for run in (rc.wheels, rc.archives, rc.site):
        assert run.code == 0, run.explain()
        assert set(run.jobs.values()) == {"success"}, run.failed()
    uploads = rc.wheels.job("/upload") + rc.archives.job("/upload")
    assert len(uploads) == WHEEL_CELLS + 1
    wheels = [k for k in world.keys("whl/test/") if k.endswith(".whl")]
    assert len(wheels) == WHEEL_CELLS
    assert {k.split("/")[3] for k in wheels} == {"cpu", "cu130"}
    assert all("1.0.0+" in k for k in wheels)  # RC wheels carry the final version
    archives = world.keys("libtorch/test/")
    assert any(k.endswith("-1.0.0+cpu.zip") for k in archives), archives
    assert any(k.endswith(".zip.sha256") for k in archives), archives


def test_the_version_reaches_the_pages_only_when_whole(world: World, rc: RcRuns) -> None:
    # After the wheel workflow its index job ran, but the archive was still missing.
    pages = [k for k in rc.wheels_only_keys if k.endswith("/hello-native/")]
    assert pages == [] or not any("1.0.0" in page for page in _pages(world, pages)), (
        "a version without its archive was advertised"
    )
    assert "index the channel" in " ".join(rc.wheels.jobs)
    assert "not on the pages until complete" in rc.wheels.text("index the channel")
    # The archive workflow finished last: its index job put the whole version on the pages.
    assert "advertised/test/hello-native/1.0.0.json (whole)" in rc.archives.text(
        "index the channel"
    )
    assert "dl/whl/test/cpu/hello-native/" in world.keys("whl/test/cpu/")


def _pages(world: World, keys: list[str]) -> list[str]:
    import boto3

    client = boto3.client("s3", endpoint_url=world.endpoint)
    return [client.get_object(Bucket=world.bucket, Key=k)["Body"].read().decode() for k in keys]


def test_pip_and_uv_install_the_rc_from_the_test_channel(
    world: World, rc: RcRuns, tmp_path: Path
) -> None:
    assert rc.archives.code == 0, rc.archives.explain()
    index = f"{world.download_url}/whl/test/cpu/"
    for tool in ("pip", "uv"):
        info = _install(tmp_path / tool, tool, index, "hello-native==1.0.0+cpu")
        assert info["version"] == "1.0.0+cpu" and info["variant"] == "cpu", info


def _install(venv: Path, tool: str, index: str, requirement: str) -> dict[str, Any]:
    [host], _ = find_host_pythons([CI_PYTHONS[-1]])  # a Python the RC has wheels for
    python = str(host.executable)
    subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True)
    target = str(venv / "bin" / "python")
    if tool == "pip":
        argv = [sys.executable, "-m", "pip", "--python", target, "--isolated", "install"]
        argv += ["--no-cache-dir", "--index-url", index, requirement]
    else:
        uv = str(Path(sys.executable).parent / "uv")
        argv = [uv, "pip", "install", "--python", target, "--no-cache", "--index-url", index]
        argv += [requirement]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(venv.parent)}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    probe = "import json, hello_native as h; print(json.dumps(h.build_info()))"
    out = subprocess.run([target, "-c", probe], capture_output=True, text=True, check=True)
    info: dict[str, Any] = json.loads(out.stdout)
    return info


# --- release day: promote, then PyPI ------------------------------------------------------------


@dataclass(frozen=True)
class Promotion:
    dry: ActRun
    dry_keys: list[str]
    done: ActRun


@pytest.fixture(scope="module")
def promoted(world: World, rc: RcRuns) -> Promotion:
    checkout(world, "release/1.0")
    inputs = {"version": "1.0.0", "from": "test", "to": "release"}
    dry = world.run("workflow_dispatch", "relforge-promote.yml", inputs=inputs)
    dry_keys = world.keys("whl/cpu/")
    done = world.run(
        "workflow_dispatch", "relforge-promote.yml", inputs={**inputs, "execute": "true"}
    )
    return Promotion(dry, dry_keys, done)


def test_the_promote_workflow_is_a_dry_run_unless_asked(promoted: Promotion) -> None:
    assert promoted.dry.code == 0, promoted.dry.explain()
    assert promoted.dry_keys == []
    assert "dry run" in promoted.dry.text("promote")


def test_the_promote_workflow_copies_the_rc_to_release(world: World, promoted: Promotion) -> None:
    assert promoted.done.code == 0, promoted.done.explain()
    released = [k for k in world.keys("whl/") if k.startswith("dl/whl/cu") or "/whl/cpu/" in k]
    assert sum(k.endswith(".whl") for k in released) == WHEEL_CELLS, released
    info = _install(
        world.root / f"venv-{uuid.uuid4().hex[:6]}",
        "pip",
        f"{world.download_url}/whl/cu130/",
        "hello-native==1.0.0+cu130",
    )
    assert info["variant"] == "cu130"


def test_the_pypi_workflow_stages_and_uploads_the_default_wheels(
    world: World, promoted: Promotion
) -> None:
    assert promoted.done.code == 0, promoted.done.explain()
    inputs = {"version": "1.0.0", "execute": "true"}
    run = world.run(
        "workflow_dispatch",
        "relforge-pypi.yml",
        inputs=inputs,
        secrets={"PYPI_API_TOKEN": PYPI_TOKEN},
    )
    assert run.code == 0, run.explain()
    assert {name.rsplit("/", 1)[-1] for name in run.jobs} == {
        "stage 1.0.0 for PyPI",
        "upload 1.0.0 to PyPI",
    }
    uploaded = sorted(p.name for p in (world.pypi.packages).iterdir())
    assert uploaded and all("+" not in name for name in uploaded), uploaded
    assert all(name.startswith("hello_native-1.0.0-cp3") for name in uploaded), uploaded


# --- nightly, the bot, a tampered relforge ------------------------------------------------------


def test_a_nightly_dispatch_builds_and_tests_without_uploading(world: World, rc: RcRuns) -> None:
    checkout(world, "release/1.0")
    before = world.keys()
    run = world.run("workflow_dispatch", ARCHIVES, payload={"ref": "refs/heads/nightly"})
    assert run.code == 0, run.explain()
    assert {name.rsplit("/", 1)[1] for name in run.jobs} == {"build", "test"}
    assert ".dev" in run.text("/build")  # a nightly version
    assert world.keys() == before


def test_an_issue_comment_makes_the_bot_pick_onto_a_release_branch(
    world: World, tmp_path: Path
) -> None:
    fake, server, thread = start()
    try:
        bots = make_world(tmp_path, fake)
        number, _sha = bots.land("Fix the answer", {"src/lib.py": "def answer():\n    return 42\n"})
        # The job checks out the default branch with actions/checkout itself (a ref of its own:
        # act does not substitute the local tree), from the repository's GitHub URL, which the
        # runner's git maps to the bare origin on disk.
        github_url = f"https://github.com/{BOT_REPO}"
        git(bots.bot_clone, "remote", "set-url", "origin", github_url)
        home = world.act.work / "home"
        home.mkdir(parents=True, exist_ok=True)
        with (home / ".gitconfig").open("a", encoding="utf-8") as fh:
            fh.write(f'[url "{bots.repos.origin}"]\n\tinsteadOf = {github_url}\n')
        body = f"@relforge-bot cherry-pick --onto release/2.9 -c critical --fixes {FIXES}"
        payload = comment_event(body, number=number, user="alice")
        payload["repository"]["default_branch"] = "main"
        workflow = world.project.clone / ".github" / "workflows" / "relforge-bot.yml"
        run = world.act.run(
            bots.bot_clone,
            "issue_comment",
            str(workflow),
            payload=payload,
            secrets={"GITHUB_TOKEN": TOKEN},
            extra=["--env", f"GITHUB_API_URL={fake.url}"],
        )
        assert run.code == 0, run.explain()
        assert list(run.jobs.values()) == ["success"]
        heads = git(bots.repos.origin, "for-each-ref", "--format=%(refname)")
        assert f"refs/heads/cherry-pick/{number}-onto-release-2.9" in heads.split(), run.text("")
        [pick] = bots.new_pulls()
        assert pick["base"]["ref"] == "release/2.9"
        assert any("cherry-pick" in c for c in fake.comments_on(BOT_REPO, number))
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_a_relforge_wheel_that_is_not_the_pinned_bytes_is_never_installed(
    world: World, tmp_path: Path
) -> None:
    good = world.relforge_wheel
    served = tmp_path / "served"
    served.mkdir()
    tampered = served / good.name
    tampered.write_bytes(good.read_bytes() + b"\0")  # one byte more: another file
    sha = hashlib.sha256(good.read_bytes()).hexdigest()
    clone = tmp_path / "tampered"
    shutil.copytree(world.project.clone, clone, symlinks=True)
    git(clone, "checkout", "-q", "release/1.0")
    matrix = clone / "matrix" / "example.yaml"
    pin = f'ci:\n  relforge: "relforge @ file://{tampered}#sha256={sha}"\n\n'
    matrix.write_text(pin + matrix.read_text(encoding="utf-8"), encoding="utf-8")
    relforge(clone, "workflows", "generate", "matrix/example.yaml", "-r", "1.0", "--out", OUT)
    run = world.act.run(clone, "pull_request", f"{OUT}/{ARCHIVES}", payload=pr_payload())
    assert run.code != 0
    [(job, step)] = [key for key, result in run.steps.items() if result == "failure"]
    assert step.startswith("Install relforge from file://"), (job, step)
    assert not run.job("/test")  # nothing ran after the refused install
    # Why the step failed, from the step's own uv and requirement run here: act on the host
    # reads a step's output through a terminal and, when the step exits non-zero, stops without
    # draining it, so uv's last lines (its reason) reach act's log only now and then.
    requirement = f"relforge @ file://{tampered}#sha256={sha}"
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    uv = Path(sys.executable).parent / "uv"
    version = subprocess.run([str(uv), "--version"], capture_output=True, text=True, check=True)
    assert package_tool_pins()["uv"].version in version.stdout  # the version the jobs pin
    argv = [str(uv), "pip", "install", "--python", str(venv / "bin" / "python"), "--no-deps"]
    refused = subprocess.run(
        [*argv, "--only-binary", ":all:", requirement], capture_output=True, text=True, check=False
    )
    said = " ".join(refused.stderr.split())  # uv wraps its lines
    assert refused.returncode != 0 and f"Hash mismatch for `{requirement}`" in said, said
    assert f"Computed: sha256:{hashlib.sha256(tampered.read_bytes()).hexdigest()}" in said


def test_an_image_the_registry_lacks_or_cannot_serve_stops_the_build_with_its_code(
    world: World, tmp_path: Path
) -> None:
    """--pull missing: a registry without the image is the matrix's fault (exit 2); one that
    cannot be reached is the environment's (exit 6); neither is a traceback."""
    world.wait_for_image()
    registry = world.image.split("/", 1)[0]
    closed = f"127.0.0.1:{free_port()}"
    matrix = world.project.clone / "matrix" / "example.yaml"
    for image, code, message in (
        (f"{registry}/relforge/builder:no-such-tag", 2, "the registry has no such image"),
        (f"{closed}/relforge/builder:cuda13.0", 6, "cannot pull"),
    ):
        text = matrix.read_text(encoding="utf-8").replace(world.image, image)
        edited = tmp_path / f"m-{code}.yaml"
        edited.write_text(text.replace("source: ..", f"source: {world.project.clone}"))
        argv = [sys.executable, "-m", "relforge", "build", str(edited), "-r", "1.0"]
        argv += ["--cell", CU130, "--builder", "docker", "--out", str(tmp_path / "dist")]
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "DOCKER_HOST": world.docker_host},
            check=False,
        )
        assert done.returncode == code, done.stdout + done.stderr
        assert f"pulling {image} (the engine does not have it)" in done.stderr
        assert message in done.stderr and "Traceback" not in done.stderr
