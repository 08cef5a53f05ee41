"""The multi-Python builder image of the Docker tests (the Debian base, the host's CPython
3.10–3.13 at manylinux paths, CUDA 13.0), made once per test session and shared by the files that
need it (test_build_docker.py, test_generated_ci.py), each in its own private engine.

The first file to ask makes it with `make_python_image` and asserts what making it proves; when
another collected file will ask too, the image (with its content tag and its base) is saved to an
archive in the session's temporary folder, which every pytest-xdist worker shares.  The next file
loads that archive into its engine and asks `make_python_image` again, which must find an image of
the same inputs and only name it.  Making the image is the costliest setup of the suite (a gigabyte
of context, a layer commit, a container per interpreter): measured on the 2-core machine, making it
took 49 CPU-s (save included), loading it and the cached rerun 18 CPU-s.

The act scenarios need the image only in their registry, never in their engine (a build pulls
it): `builder_image_archive` hands them the session's archive itself when the other file made
it (no load), else the image made in their engine and saved.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import pytest

from relforge.builders.images.baseimage import ImageSpec
from relforge.builders.images.pyimage import (
    PythonImageResult,
    PythonImageSpec,
    base_spec,
    content_tag,
    make_python_image,
)
from relforge.cachedir import locked

CUDA = Path("/usr/local/cuda-13.0")  # DEVELOPERS.md: the machine's CUDA 13.0 toolkit
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
NAME = "relforge/builder:bookworm"
SPEC = PythonImageSpec(
    name=NAME,
    base=base_spec(ImageSpec(), NAME),
    pythons=(*PYTHONS, "3.13t"),  # no free-threaded pyenv build here: reported, left out
    cuda=(CUDA,),
)
USERS = ("test_build_docker.py", "test_generated_ci.py")


def builder_image(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    docker_host: str,
    name: str = NAME,
) -> str:
    """The image as `name` in the engine at `docker_host` (DOCKER_HOST set by the caller);
    returns its id.  Made here, or loaded from the session's archive when another file made it."""
    shared = _session_root(tmp_path_factory)
    spec = dataclasses.replace(SPEC, name=name)
    with locked(shared / "builder-image.lock"):
        archive, record = shared / "builder-image.tar", shared / "builder-image.json"
        if record.is_file():
            made = json.loads(record.read_text(encoding="utf-8"))
            _docker(docker_host, "load", "--quiet", "--input", str(archive))
            # the last file that needs it: a gigabyte of memory back, and a later ask makes it
            archive.unlink()
            record.unlink()
            again = make_python_image(spec, say=lambda _text: None)
            assert not again.made and again.id == made["id"] and again.digest == made["digest"]
            return again.id
        first = _make_and_check(spec)
        if _another_file_needs_it(request):
            content = content_tag(name, first.digest)
            _docker(docker_host, "save", "--output", str(archive), content, SPEC.base.name)
            record.write_text(json.dumps({"id": first.id, "digest": first.digest}), "utf-8")
        return first.id


def builder_image_archive(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    docker_host: str,
    scratch: Path,
    name: str = NAME,
) -> tuple[Path, str]:
    """The image as a `docker save` archive in `scratch`, and the name it has in the archive,
    for a file that needs it only in a registry: the session's archive when another file made
    it (taken, as a load would take it: this file is its last user), else the image made in the
    engine at `docker_host` (as `builder_image` makes it) and saved.  The caller deletes it."""
    shared = _session_root(tmp_path_factory)
    scratch.mkdir(parents=True, exist_ok=True)
    taken = scratch / "builder-image.tar"
    with locked(shared / "builder-image.lock"):
        archive, record = shared / "builder-image.tar", shared / "builder-image.json"
        if record.is_file():
            made = json.loads(record.read_text(encoding="utf-8"))
            archive.replace(taken)
            record.unlink()
            return taken, content_tag(name, made["digest"])
    builder_image(request, tmp_path_factory, docker_host, name)
    _docker(docker_host, "save", "--output", str(taken), name)
    return taken, name


def _make_and_check(spec: PythonImageSpec) -> PythonImageResult:
    """Make the image in a fresh engine: every host Python but the missing free-threaded one,
    each checked in a container; asking again with the same inputs reuses it."""
    said: list[str] = []
    first = make_python_image(spec, say=said.append)
    assert first.made and first.check is not None and first.check.ok
    assert [p.tag for p in first.pythons] == [
        "cp310-cp310",
        "cp311-cp311",
        "cp312-cp312",
        "cp313-cp313",
    ]
    assert [m.wanted for m in first.missing] == ["3.13t"]  # no free-threaded pyenv build
    assert any(line.startswith("not found: Python 3.13t") for line in said)
    again = make_python_image(spec, say=said.append)  # same inputs: the cached image
    assert not again.made and again.id == first.id and again.digest == first.digest
    return first


def _another_file_needs_it(request: pytest.FixtureRequest) -> bool:
    """Whether a collected test of the other file will ask (every xdist worker collects all)."""
    own = request.path.name
    return any(item.path.name in USERS and item.path.name != own for item in request.session.items)


def _session_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's temporary folder, which every xdist worker's own folder is under."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _docker(docker_host: str, *args: str) -> None:
    """The docker CLI (the docker.io package that brings dockerd brings it): save and load take
    several image names at once, which the SDK's calls do not."""
    subprocess.run(["docker", "--host", docker_host, *args], check=True, capture_output=True)
