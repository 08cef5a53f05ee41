"""Local builder images for air-gapped machines and our tests: a Debian root filesystem made
by debootstrap (Python, compilers), imported with `docker import`.  The rootfs tarball is cached
under the user cache, so only the first image costs the minute debootstrap takes."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relforge.builders.images.engine import connect, image_id
from relforge.errors import ConfigError, UsageError
from relforge.locations import user_cache_dir

DEFAULT_IMAGE = "relforge/builder:bookworm"
# Labels of a multi-Python image (pyimage.py): what it holds, read by `--builder auto` and skips.
LABEL_INPUTS = "org.relforge.inputs"  # the digest of its inputs
LABEL_PYTHONS = "org.relforge.pythons"  # "3.10 3.11 3.13t"
LABEL_CUDA = "org.relforge.cuda"  # "13.0" ("" for none)
DEFAULT_MIRROR = "http://deb.debian.org/debian"
# What the default PEP 517 build needs, offline: the interpreter, setuptools, wheel, compilers.
PACKAGES = (
    "python3",
    "python3-venv",
    "python3-pip",
    "python3-dev",
    "python3-setuptools",
    "python3-wheel",
    "gcc",
    "g++",
    "libc6-dev",
)
_CHANGES = [
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    'CMD ["/bin/sh"]',
]


@dataclass(frozen=True, kw_only=True)
class ImageSpec:
    name: str = DEFAULT_IMAGE
    suite: str = "bookworm"
    mirror: str = DEFAULT_MIRROR
    packages: tuple[str, ...] = PACKAGES

    @property
    def tarball(self) -> Path:
        digest = hashlib.sha256(f"{self.mirror}|{','.join(self.packages)}".encode()).hexdigest()
        return user_cache_dir() / "rootfs" / f"{self.suite}-minbase-{digest[:12]}.tar"


@dataclass(frozen=True, kw_only=True)
class ImageResult:
    name: str
    id: str
    made: bool  # False: the engine already had it
    tarball: Path | None
    tarball_reused: bool


def make_builder_image(
    spec: ImageSpec, *, rebuild: bool = False, say: Callable[[str], None] = print
) -> ImageResult:
    """Import the image into the engine of DOCKER_HOST unless it is there (or `rebuild`)."""
    repository, _, tag = spec.name.rpartition(":")
    if not repository or "/" in tag:
        raise UsageError(f"{spec.name!r} is not an image name like repo/name:tag", key="--name")
    client = connect()
    existing = image_id(client, spec.name)
    if existing is not None and not rebuild:
        return ImageResult(
            name=spec.name, id=existing, made=False, tarball=None, tarball_reused=False
        )
    reused = spec.tarball.exists()
    if not reused:
        make_rootfs_tarball(spec, say=say)
    say(f"docker import {spec.tarball} {spec.name}")
    made = _import(client, spec.tarball, repository, tag)
    return ImageResult(
        name=spec.name, id=made, made=True, tarball=spec.tarball, tarball_reused=reused
    )


def make_rootfs_tarball(spec: ImageSpec, *, say: Callable[[str], None] = print) -> Path:
    """debootstrap a minimal Debian with `spec.packages` and tar it (atomically) into the cache."""
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise ConfigError(
            "debootstrap is not installed", hint="apt-get install -y debootstrap (Debian/Ubuntu)"
        )
    if os.geteuid() != 0:
        raise ConfigError("debootstrap needs root", hint="run this command as root (or with sudo)")
    spec.tarball.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".rootfs-", dir=spec.tarball.parent))
    try:
        root = work / "root"
        argv = [
            debootstrap,
            "--variant=minbase",
            f"--include={','.join(spec.packages)}",
            spec.suite,
            str(root),
            spec.mirror,
        ]
        say(" ".join(argv) + "   (about a minute)")
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-5:])
            raise ConfigError(
                f"debootstrap failed (exit {done.returncode}):\n{tail}",
                hint=f"check that {spec.mirror} is reachable",
            )
        for package in (root / "var" / "cache" / "apt" / "archives").glob("*.deb"):
            package.unlink()  # the downloaded .debs: ~100 MB the image does not need
        partial = work / "rootfs.tar"
        subprocess.run(["tar", "-C", str(root), "-cf", str(partial), "."], check=True)
        partial.replace(spec.tarball)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return spec.tarball


def _import(client: Any, tarball: Path, repository: str, tag: str) -> str:
    client.api.import_image_from_file(
        str(tarball), repository=repository, tag=tag, changes=_CHANGES
    )
    made = image_id(client, f"{repository}:{tag}")
    if made is None:
        raise ConfigError(f"docker import did not create {repository}:{tag}")
    return made
