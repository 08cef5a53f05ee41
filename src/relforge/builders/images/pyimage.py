"""A multi-Python builder image: the Debian base image plus the host's CPythons under
/opt/python/cpXY-cpXY (manylinux's layout, which in_container.sh looks for) and, when asked,
CUDA toolkits under /usr/local/cuda-X.Y.

The image is made by `docker build` from a context relforge writes itself (FROM the base, COPY
of a prepared root), with no network.  It is cached by content: the digest of every input (the
base image id, each copied file's path, size, mode and mtime, the build requirements, this
recipe's version) names a tag `<repository>:inputs-<digest>` and a label; a rerun with the same
inputs only points the requested name at it.  Before the name is set, one container (no
network) proves that every interpreter runs and imports what a build needs (imagecheck.py).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from relforge.builders.artifacts import patchelf_path
from relforge.builders.control import BuildFailure
from relforge.builders.images.baseimage import (
    LABEL_CUDA,
    LABEL_INPUTS,
    LABEL_PYTHONS,
    ImageResult,
    ImageSpec,
    make_builder_image,
)
from relforge.builders.images.engine import connect, image_id
from relforge.builders.images.imagecheck import ImageCheck, check_image
from relforge.builders.images.imageroot import CudaToolkit, ImageRoot
from relforge.builders.images.pythons import HostPython, NotFound, find_host_pythons
from relforge.builders.inputs import nvcc_version, requirements_layer
from relforge.errors import ConfigError, EnvironmentFault, UsageError
from relforge.locations import user_cache_dir

BUILD_REQUIREMENTS = ("pip", "setuptools", "wheel")


@dataclass(frozen=True, kw_only=True)
class PythonImageSpec:
    name: str  # the image to make, e.g. relforge/builder:bookworm
    base: ImageSpec  # the debootstrap image it starts from
    pythons: tuple[str, ...]  # "3.10", "3.13t"
    cuda: tuple[Path, ...] = ()
    requirements: tuple[str, ...] = BUILD_REQUIREMENTS


@dataclass(frozen=True, kw_only=True)
class PythonImageResult:
    name: str
    id: str
    made: bool  # False: an image of the same inputs was there
    digest: str
    base: ImageResult
    pythons: list[HostPython]
    missing: list[NotFound]
    cuda: list[CudaToolkit]
    check: ImageCheck | None = None  # None when the cached image was reused
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)


def base_spec(spec: ImageSpec, name: str) -> ImageSpec:
    """The base image of a multi-Python image: `<repository>-base:<tag>`."""
    repository, _, tag = name.rpartition(":")
    return ImageSpec(
        name=f"{repository}-base:{tag}",
        suite=spec.suite,
        mirror=spec.mirror,
        packages=spec.packages,
    )


def content_tag(name: str, digest: str) -> str:
    """The tag an image of these inputs gets beside `name` (its repository): it is how a rerun,
    or another engine that loaded the image, finds it again."""
    return f"{name.rpartition(':')[0]}:inputs-{digest[:16]}"


def make_python_image(
    spec: PythonImageSpec, *, rebuild: bool = False, say: Callable[[str], None] = print
) -> PythonImageResult:
    """Make (or reuse) the image; raise ConfigError when no wanted Python is on the host or an
    interpreter does not run inside the image."""
    start = time.monotonic()
    repository, _, tag = spec.name.rpartition(":")
    if not repository or "/" in tag:
        raise UsageError(f"{spec.name!r} is not an image name like repo/name:tag", key="--name")
    pythons, missing = find_host_pythons(spec.pythons)
    for gone in missing:
        say(f"not found: Python {gone.wanted}: {gone.why}")
    if not pythons:
        raise ConfigError(
            "none of the wanted Pythons is on this host: "
            + "; ".join(f"{m.wanted}: {m.why}" for m in missing),
            key="--python",
            hint="install them with pyenv or uv first (nothing is downloaded while the image "
            "is made)",
        )
    toolkits = [_toolkit(path) for path in spec.cuda]
    base = make_builder_image(spec.base, rebuild=False, say=say)
    layers = {p.tag: _site_layer(p, spec.requirements) for p in pythons if not p.system}
    plan = ImageRoot(pythons=pythons, layers=layers, cuda=toolkits, base=spec.base.name)
    digest = plan.digest(base.id, spec.requirements)
    content = content_tag(spec.name, digest)
    client = connect(timeout=900)
    existing = image_id(client, content)
    result: dict[str, Any] = {
        "name": spec.name,
        "digest": digest,
        "base": base,
        "pythons": pythons,
        "missing": missing,
        "cuda": toolkits,
    }
    if existing is not None and not rebuild:
        client.api.tag(existing, repository, tag)
        return PythonImageResult(id=existing, made=False, **result)
    labels = {
        LABEL_INPUTS: digest,
        LABEL_PYTHONS: " ".join(p.wanted for p in pythons),
        LABEL_CUDA: " ".join(t.version for t in toolkits),
    }
    made = _build(client, plan, content, labels, say=say)
    say(f"checking every interpreter inside {content} (no network)")
    check = check_image(client, made, pythons, toolkits)
    if not check.ok:
        client.images.remove(made, force=True)
        raise ConfigError(
            f"the image does not work: {'; '.join(check.failures)}",
            key="--python",
            hint="the interpreters' shared libraries must exist in the Debian base; "
            "see the list above",
        )
    client.api.tag(made, repository, tag)
    return PythonImageResult(
        id=made,
        made=True,
        check=check,
        seconds=time.monotonic() - start,
        warnings=check.warnings,
        **result,
    )


def _toolkit(path: Path) -> CudaToolkit:
    home = path.resolve()
    version = nvcc_version(str(home / "bin" / "nvcc"))
    if version is None:
        raise UsageError(
            f"{path} holds no working bin/nvcc",
            key="--cuda",
            hint="pass a CUDA toolkit folder, e.g. /usr/local/cuda-13.0",
        )
    return CudaToolkit(home=home, version=f"{version.major}.{version.minor}")


def _site_layer(python: HostPython, requirements: tuple[str, ...]) -> Path:
    """pip, setuptools and wheel for the interpreter's clean site-packages (the build runs
    `pip wheel --no-build-isolation --no-index` with the image's interpreter)."""
    log = user_cache_dir() / "builder-image.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        return requirements_layer(
            python.interpreter(),
            list(requirements),
            env={**os.environ, "PIP_NO_INPUT": "1"},
            log=log,
            deadline=time.monotonic() + 600,
        )
    except BuildFailure as exc:
        raise EnvironmentFault(
            f"cannot install {', '.join(requirements)} for {python.label}: {exc}",
            hint=f"see {log}; the wheelhouse in {user_cache_dir() / 'wheelhouse'} is filled "
            "from the configured package index once",
        ) from None


def _build(
    client: Any, plan: ImageRoot, tag: str, labels: dict[str, str], *, say: Callable[[str], None]
) -> str:
    folder = user_cache_dir() / "builder-context"
    with contextlib.ExitStack() as stack:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="ctx-", dir=folder))
            context = Path(scratch) / "context.tar"
            say(f"writing the build context ({len(plan.pythons)} Pythons, {len(plan.cuda)} CUDA)")
            _write_context(plan, context, Path(scratch))
        except OSError as exc:  # disk full, permission denied: the ~1 GB context is ours
            raise EnvironmentFault(
                f"cannot write the build context in {folder}: {exc.strerror or exc}",
                hint="free space there (or set RELFORGE_CACHE_DIR) and rerun",
            ) from None
        say(f"docker build {tag} (FROM {plan.base}, no network)")
        with context.open("rb") as fh, _engine_errors(tag):
            stream = client.api.build(
                fileobj=fh,
                custom_context=True,
                tag=tag,
                rm=True,
                forcerm=True,
                network_mode="none",
                labels=labels,
                decode=True,
            )
            for chunk in stream:
                if "error" in chunk:
                    raise ConfigError(
                        f"docker build of {tag} failed: {str(chunk['error']).strip()}"
                    )
    made = image_id(client, tag)
    if made is None:
        raise ConfigError(f"docker build did not create {tag}")
    return made


@contextlib.contextmanager
def _engine_errors(tag: str) -> Iterator[None]:
    import docker.errors

    try:
        yield
    except docker.errors.DockerException as exc:
        raise ConfigError(f"docker build of {tag} failed: {exc}") from None


def _write_context(plan: ImageRoot, context: Path, scratch: Path) -> None:
    dockerfile = f"FROM {plan.base}\nCOPY rootfs/ /\n".encode()
    patchelf = str(patchelf_path())
    # 1 MiB copies (tarfile's default is 16 KiB): half the CPU for a context of a gigabyte
    with tarfile.TarFile(context, "w", format=tarfile.PAX_FORMAT, copybufsize=1 << 20) as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile))
        made: set[str] = set()
        for entry in plan.entries():
            parent = entry.arcname.rsplit("/", 1)[0]
            _parents(tar, parent, made)
            if entry.link is not None:
                info = tarfile.TarInfo(entry.arcname)
                info.type = tarfile.SYMTYPE
                info.linkname = entry.link
                info.mode = 0o777
                tar.addfile(info)
            elif entry.source is None or entry.source.is_dir():
                if entry.arcname not in made:
                    info = tarfile.TarInfo(entry.arcname)
                    info.type = tarfile.DIRTYPE
                    info.mode = entry.source.stat().st_mode & 0o7777 if entry.source else 0o755
                    tar.addfile(info)
                    made.add(entry.arcname)
            elif entry.replace:
                data = entry.rewritten()
                info = tar.gettarinfo(entry.source, arcname=entry.arcname)
                info.size = len(data)
                tar.addfile(_root_owned(info), io.BytesIO(data))
            elif entry.patch_rpath is not None:
                patched = scratch / "patched"
                shutil.copy2(entry.source, patched)
                done = subprocess.run(
                    [patchelf, "--set-rpath", entry.patch_rpath, str(patched)],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if done.returncode != 0:
                    raise ConfigError(
                        f"patchelf cannot set the RUNPATH of {entry.source}: "
                        f"{done.stderr.strip() or done.returncode}",
                        key="--python",
                    )
                tar.add(patched, arcname=entry.arcname, filter=_root_owned)
                patched.unlink()
            else:
                tar.add(entry.source, arcname=entry.arcname, filter=_root_owned)


def _parents(tar: tarfile.TarFile, folder: str, made: set[str]) -> None:
    parts = folder.split("/")
    for depth in range(1, len(parts) + 1):
        name = "/".join(parts[:depth])
        if name not in made:
            info = tarfile.TarInfo(name)
            info.type = tarfile.DIRTYPE
            info.mode = 0o755
            tar.addfile(info)
            made.add(name)


def _root_owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info
