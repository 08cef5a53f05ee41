"""The world the generated-CI scenarios run in: a project repository with its generated
workflows, the servers a hosted runner would reach (the S3 store on moto, a registry holding the
CUDA builder image, PyPI, GitHub's API), the runner's package index (a PEP 503 index written as
files), and act set up as a hosted ubuntu-24.04 runner (tests/actkit.py)."""

from __future__ import annotations

import hashlib
import http.client
import json
import shutil
import subprocess
import sys
import tarfile
import urllib.parse
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import yaml

from relforge.workflows.toolpins import package_tool_pins
from tests.actkit import HostedRunner
from tests.integration.conftest import S3, free_port, start_server, stop_server

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
EXAMPLE_SOURCE = REPO / "examples" / "hello-native"
CUDA_TAG = "relforge/builder:cuda13.0"
AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
AWS_REGION = {"AWS_DEFAULT_REGION": "us-east-1"}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=_git_env()
    )
    return done.stdout.strip()


def _git_env() -> dict[str, str]:
    import os

    return {
        **os.environ,
        "GIT_AUTHOR_NAME": "Rel Eng",
        "GIT_AUTHOR_EMAIL": "releng@example.org",
        "GIT_COMMITTER_NAME": "Rel Eng",
        "GIT_COMMITTER_EMAIL": "releng@example.org",
    }


def relforge_wheel(out: Path) -> Path:
    """relforge's own wheel, built from this checkout (what a release of it would hold)."""
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "--wheel-dir",
            str(out),
            str(REPO),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = out.glob("relforge-*.whl")
    return wheel


def wheelhouse(cache: Path, wheel: Path, python: str) -> Path:
    """relforge's dependencies, the build tools (pip, setuptools, wheel) and the pinned uv that
    installs relforge in every job, as wheels for `python`, downloaded once from the configured
    index into `cache` (keyed by what is asked)."""
    uv = package_tool_pins()["uv"]
    wanted = ["pip", "setuptools", "wheel", f"uv=={uv.version}", *_requires(wheel)]
    key = hashlib.sha256(json.dumps([python, sorted(wanted)]).encode()).hexdigest()[:16]
    folder = cache / f"wheelhouse-{key}"
    if (folder / ".complete").is_file():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--disable-pip-version-check",
            "--only-binary=:all:",
            "--python-version",
            python,
            "--dest",
            str(folder),
            *wanted,
        ],
        check=True,
        capture_output=True,
    )
    (folder / ".complete").touch()
    return folder


def _requires(wheel: Path) -> list[str]:
    import zipfile

    from packaging.requirements import Requirement

    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        lines = zf.read(meta).decode().splitlines()
    out = []
    for line in lines:
        if line.startswith("Requires-Dist:"):
            req = Requirement(line.split(":", 1)[1].strip())
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                out.append(f"{req.name}{req.specifier}")
    return out


def file_index(packages: Path) -> str:
    """A PEP 503 simple index of the wheels in `packages`, written as files beside them
    (`simple/<name>/index.html`, each link with its sha256, as PyPI serves them); returns its
    file:// URL, which pip reads as it reads PyPI's.  The runner's index of the CI scenarios:
    no server process answering some fifty page requests per job."""
    from html import escape

    from packaging.utils import canonicalize_name, parse_wheel_filename

    by_name: dict[str, list[Path]] = {}
    for wheel in sorted(packages.glob("*.whl")):
        project = canonicalize_name(parse_wheel_filename(wheel.name)[0])
        by_name.setdefault(project, []).append(wheel)
    simple = packages / "simple"
    simple.mkdir(exist_ok=True)
    root_links = []
    for name, wheels in sorted(by_name.items()):
        (simple / name).mkdir(exist_ok=True)
        links = [
            f'<a href="../../{escape(w.name)}#sha256={hashlib.sha256(w.read_bytes()).hexdigest()}"'
            f">{escape(w.name)}</a><br/>"
            for w in wheels
        ]
        page = "<!DOCTYPE html>\n<html><body>\n" + "\n".join(links) + "\n</body></html>\n"
        (simple / name / "index.html").write_text(page, encoding="utf-8")
        root_links.append(f'<a href="{name}/">{name}</a><br/>')
    page = "<!DOCTYPE html>\n<html><body>\n" + "\n".join(root_links) + "\n</body></html>\n"
    (simple / "index.html").write_text(page, encoding="utf-8")
    return simple.as_uri() + "/"


@dataclass(frozen=True)
class Index:
    """A PEP 503 index on pypiserver (no fallback to PyPI)."""

    url: str
    packages: Path

    @property
    def simple(self) -> str:
        return f"{self.url}/simple/"


@contextmanager
def pypiserver(root: Path, packages: Path, users: dict[str, str] | None = None) -> Iterator[Index]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [str(BIN / "pypi-server"), "run", "-i", "127.0.0.1", "-p", str(port)]
    if users:
        from passlib.apache import HtpasswdFile

        htpasswd = root / f"htpasswd-{port}"
        table = HtpasswdFile(str(htpasswd), new=True)
        for name, password in users.items():
            table.set_password(name, password)
        table.save()
        argv += ["-P", str(htpasswd), "-a", "update"]
    else:
        argv += ["-P", ".", "-a", "."]
    argv += ["--disable-fallback", str(packages)]
    proc = start_server(argv, url, root / f"pypiserver-{port}.log")
    try:
        yield Index(url, packages)
    finally:
        stop_server(proc)


@contextmanager
def registry(root: Path) -> Iterator[str]:
    """Debian's docker-registry on 127.0.0.1; yields its host:port."""
    exe = shutil.which("docker-registry")
    if exe is None:
        import pytest

        pytest.fail("docker-registry is not installed: apt-get install -y docker-registry")
    port = free_port()
    storage = root / "registry"
    storage.mkdir(parents=True, exist_ok=True)
    config = root / "registry.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "version": 0.1,
                "log": {"level": "warn"},
                "storage": {"filesystem": {"rootdirectory": str(storage)}},
                "http": {"addr": f"127.0.0.1:{port}"},
            }
        ),
        encoding="utf-8",
    )
    proc = start_server(
        [exe, "serve", str(config)], f"http://127.0.0.1:{port}/v2/", root / "reg.log"
    )
    try:
        yield f"127.0.0.1:{port}"
    finally:
        stop_server(proc)


def push_image(archive: Path, local: str, remote: str) -> str:
    """Put the image `local` of the `docker save` archive into the registry as `remote`
    through the registry's HTTP API (the Docker Registry HTTP API V2: each blob by a monolithic
    upload, then the image manifest), with its layers as they are, uncompressed
    (`application/vnd.docker.image.rootfs.diff.tar`, which the registry stores and Docker's
    pull applies like any layer).  No engine has these blobs as layers it knows: the first pull
    downloads and applies all of them.  Returns the manifest's digest.

    `docker push` gzips every layer, 1.3 GB here: about 35 CPU-s of the test run's two cores,
    spent on setting the scenario up, not on what it tests (the pull a build makes when its
    engine lacks the image); and it needs the image loaded into an engine first (18 CPU-s more),
    where the archive's layer.tar files are already the layers' exact bytes (their sha256 is
    the image's diff id)."""
    host, _, reference = remote.partition("/")
    repository, _, tag = reference.rpartition(":")
    with tarfile.open(archive) as tar:
        saved = json.load(_member(tar, "manifest.json"))
        [image] = [entry for entry in saved if local in (entry.get("RepoTags") or [])]
        config = _upload_blob(host, repository, tar, image["Config"])
        layers = [_upload_blob(host, repository, tar, name) for name in image["Layers"]]
    kind = "application/vnd.docker.distribution.manifest.v2+json"
    manifest = {
        "schemaVersion": 2,
        "mediaType": kind,
        "config": {"mediaType": "application/vnd.docker.container.image.v1+json", **config},
        "layers": [{"mediaType": "application/vnd.docker.image.rootfs.diff.tar", **layer}
                   for layer in layers],
    }  # fmt: skip
    headers = _registry_call(
        host,
        "PUT",
        f"/v2/{repository}/manifests/{tag}",
        json.dumps(manifest).encode(),
        {"Content-Type": kind},
    )
    return headers.get("Docker-Content-Digest", "")


def _member(tar: tarfile.TarFile, name: str) -> IO[bytes]:
    member = tar.extractfile(name)
    assert member is not None, name
    return member


def _upload_blob(host: str, repository: str, tar: tarfile.TarFile, name: str) -> dict[str, Any]:
    """One member of the saved image as a blob of `repository`, read once: started, sent as
    one chunk (PATCH) while its sha256 is taken, then committed under that digest (PUT).
    Returns its digest and size."""
    started = _registry_call(host, "POST", f"/v2/{repository}/blobs/uploads/")
    size = tar.getmember(name).size
    with _member(tar, name) as data:
        reader = _Hashing(data)
        sent = _registry_call(
            host,
            "PATCH",
            _path(started["Location"]),
            reader,
            {"Content-Type": "application/octet-stream", "Content-Length": str(size)},
        )
    blob = f"sha256:{reader.sha256.hexdigest()}"
    location = urllib.parse.urlsplit(sent["Location"])
    query = f"{location.query}&" if location.query else ""
    _registry_call(host, "PUT", f"{location.path}?{query}digest={blob}", b"")
    return {"digest": blob, "size": size}


class _Hashing:
    """A file's reader that takes the sha256 of what is read through it."""

    def __init__(self, data: IO[bytes]) -> None:
        self.data = data
        self.sha256 = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        chunk = self.data.read(size)
        self.sha256.update(chunk)
        return chunk


def _path(location: str) -> str:
    """The path and query of an upload's Location (the registry may answer a full URL)."""
    parts = urllib.parse.urlsplit(location)
    return f"{parts.path}?{parts.query}" if parts.query else parts.path


def _registry_call(
    host: str,
    method: str,
    path: str,
    body: bytes | _Hashing | None = None,
    headers: dict[str, str] | None = None,
) -> http.client.HTTPMessage:
    """One request to the registry at `host` (host:port); returns the answer's headers."""
    connection = http.client.HTTPConnection(host, timeout=300, blocksize=1 << 20)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        answer = connection.getresponse()
        text = answer.read()
        if answer.status >= 300:
            raise RuntimeError(f"{method} {path}: {answer.status} {text[:500]!r}")
        return answer.headers
    finally:
        connection.close()


def forget_image(docker_host: str, name: str) -> None:
    import docker
    import docker.errors

    client = docker.DockerClient(base_url=docker_host)
    with suppress(docker.errors.ImageNotFound):
        client.images.remove(name)


def new_bucket(endpoint: str) -> str:
    """A bucket anyone may read (a download site behind its CDN); AWS_* set by the caller."""
    bucket = f"ci-{uuid.uuid4().hex[:10]}"
    S3(endpoint, bucket).create_public_bucket(bucket)
    return bucket


def keys_in(endpoint: str, bucket: str, prefix: str = "") -> list[str]:
    import boto3

    client = boto3.client("s3", endpoint_url=endpoint)
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys += [o["Key"] for o in page.get("Contents", [])]
    return sorted(keys)


@dataclass(frozen=True, kw_only=True)
class Project:
    """A clone (act's working directory) of a bare origin, with the example project at its root
    and matrix/example.yaml edited for CI as the README says."""

    clone: Path
    origin: Path
    matrix: str = "matrix/example.yaml"


def example_project(root: Path, edits: dict[str, str]) -> Project:
    """The example project at a repository root, its matrix with `edits` (old → new text),
    workflows generated and committed on main, pushed to a bare origin."""
    origin = root / "origin.git"
    git(root, "init", "-q", "--bare", "-b", "main", str(origin))
    clone = root / "project"
    shutil.copytree(EXAMPLE_SOURCE, clone, ignore=shutil.ignore_patterns("__pycache__", "build"))
    (clone / "version.txt").write_text("1.0.0a0\n", encoding="utf-8")
    text = (REPO / "matrix" / "example.yaml").read_text(encoding="utf-8")
    text = text.replace("source: ../examples/hello-native  # relative to this file", "source: ..")
    for old, new in edits.items():
        assert old in text, old
        text = text.replace(old, new)
    (clone / "matrix").mkdir()
    (clone / "matrix" / "example.yaml").write_text(text, encoding="utf-8")
    (clone / ".gitignore").write_text(".relforge/\ndist/\n", encoding="utf-8")
    git(clone, "init", "-q", "-b", "main")
    git(clone, "remote", "add", "origin", str(origin))
    generate = ("workflows", "generate", "matrix/example.yaml", "--release", "1.0", "--out")
    relforge(clone, *generate, ".github/workflows")
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "hello-native with relforge's generated CI")
    git(clone, "push", "-q", "origin", "main")
    return Project(clone=clone, origin=origin)


def relforge(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        [str(BIN / "relforge"), *args], cwd=cwd, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise AssertionError(f"relforge {' '.join(args)}: {done.stdout}{done.stderr}")
    return done.stdout


def runner(work: Path, trees: Path, **env: str) -> HostedRunner:
    from tests.actkit import hosted_environment

    return HostedRunner(work=work, env=hosted_environment(**env), trees=trees)
