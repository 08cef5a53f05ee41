"""Load-time checks that need more than one key: references between sections, names that must
agree with versions, pins that must agree with the cuDNN/NCCL/CUDA versions they belong to.

Each failure is a ConfigError at the key that is wrong.  Policy questions (is this a good matrix?)
belong to `relforge.matrix.lint`, not here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from packaging.utils import InvalidName, canonicalize_name
from packaging.version import InvalidVersion, Version

from relforge.errors import ConfigError
from relforge.matrix.archivenames import check_file_name
from relforge.matrix.archlist import is_gfx_target, parse_cuda_arch
from relforge.matrix.axes import check_axes, same_channel_needs_url
from relforge.matrix.cell import ALL_FIELDS
from relforge.matrix.schema import (
    CHANNEL_NAMES,
    Ci,
    Located,
    Matrix,
    Publishing,
    Release,
    Variant,
)
from relforge.matrix.selector import SELECTABLE, selector_from_match
from relforge.matrix.values import (
    base_url_problem,
    check_name,
    local_version,
    parse_requirement,
    pinned_version,
    platform_tag_problem,
    requirement_name,
)
from relforge.matrix.variants import check_wheel_variants

# Packages whose pin must equal a variant field (nvidia-cudnn-cu12==X ⇔ cudnn: X).
_PINNED_FIELDS = {"nvidia-cudnn": "cudnn", "nvidia-nccl": "nccl"}
_CUDA_SUFFIX = re.compile(r"-cu(\d+)\Z")  # nvidia-cudnn-cu12: built for CUDA 12
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_RUNNER_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_SEGMENT = re.compile(r"[A-Za-z0-9._+-]+\Z")  # one folder of a channel's storage prefix
# The base URL of the channel indexes; it reaches generated workflows, so no quotes, `$`, braces.
_URL = re.compile(r"(https?://[^/\s\"'`$<>{}\\]+|file://)[^\s\"'`$<>{}\\]*\Z")


def pinned_field(name: str) -> str | None:
    """The variant key a pin of this distribution must agree with (nvidia-cudnn-cu12 → cudnn)."""
    return _PINNED_FIELDS.get(_CUDA_SUFFIX.sub("", canonicalize_name(name)))


def _store_url(url: str) -> bool:
    return (url.startswith("file://") and len(url) > 7) or (
        url.startswith("s3://") and bool(url[5:].strip("/"))
    )


def _check_ci(ci: Ci) -> None:
    if ci.python.free_threaded or ci.python.version < Version("3.10"):
        raise _fail(
            f"relforge runs on CPython 3.10 or newer with the GIL, not {ci.python}",
            ci,
            "python",
            "ci",
        )
    if not _RUNNER_LABEL.match(ci.runner):
        raise _fail(
            f"runner label {ci.runner!r} may hold only letters, digits, '.', '_' and '-'",
            ci,
            "runner",
            "ci",
        )


def _check_mirrors(publishing: Publishing) -> None:
    """Mirror names are unique folder-safe words other than `main`; URLs are store URLs, none
    the main store's."""
    seen: set[str] = set()
    main = (publishing.store or "file://.relforge/store").rstrip("/")
    for i, mirror in enumerate(publishing.mirrors):
        path = f"publishing.mirrors[{i}]"
        if not _SEGMENT.match(mirror.name) or mirror.name == "main":
            raise _fail(
                f"{mirror.name!r} is not a mirror name (letters, digits, . _ - ; not 'main')",
                mirror,
                "name",
                path,
            )
        if mirror.name in seen:
            raise _fail(f"a second mirror named {mirror.name!r}", mirror, "name", path)
        seen.add(mirror.name)
        if not _store_url(mirror.url):
            raise _fail(
                f"{mirror.url!r} is neither file://PATH nor s3://BUCKET[/PREFIX]",
                mirror,
                "url",
                path,
            )
        if mirror.url.rstrip("/") == main and mirror.endpoint_url == publishing.s3_endpoint_url:
            raise _fail("names the main store (publishing.store)", mirror, "url", path)
        if mirror.endpoint_url and not _URL.match(mirror.endpoint_url):
            raise _fail(
                f"{mirror.endpoint_url!r} is not an http(s) URL",
                mirror,
                "endpoint_url",
                path,
                hint="e.g. https://ACCOUNT.r2.cloudflarestorage.com",
            )


def _check_transfers(publishing: Publishing) -> None:
    """The multipart settings stay within what S3 takes: parts of 5 MiB to 5 GiB, single
    requests of at most 5 GiB; the PyPI limits are positive."""
    bounds = {
        "s3_multipart_threshold_mb": (5, 5120, "S3 takes at most 5 GiB in one request"),
        "s3_part_size_mb": (5, 5120, "S3 parts are 5 MiB to 5 GiB"),
        "s3_part_concurrency": (1, 64, "one to 64 parts in flight"),
        "s3_copy_threshold_mb": (5, 5120, "S3 copies at most 5 GiB in one request"),
        "pypi_file_limit_mb": (1, None, "a positive number of MiB"),
        "pypi_project_limit_mb": (1, None, "a positive number of MiB"),
    }
    for key, (low, high, why) in bounds.items():
        value = getattr(publishing, key)
        if value < low or (high is not None and value > high):
            within = f"from {low} to {high}" if high is not None else f"at least {low}"
            raise _fail(f"{value} is out of range: {within} ({why})", publishing, key, "publishing")


def _fail(message: str, obj: Located, key: str, path: str, hint: str | None = None) -> ConfigError:
    return ConfigError(message, where=obj.at(key), key=f"{path}.{key}" if key else path, hint=hint)


def check_matrix(matrix: Matrix) -> None:
    project = matrix.project
    try:
        canonicalize_name(project.name, validate=True)
    except InvalidName:
        raise _fail(
            f"{project.name!r} is not a valid distribution name", project, "name", "project"
        ) from None
    if project.size_limit_mb < 1:
        raise _fail("must be at least 1", project, "size_limit_mb", "project")
    _check_env(project.env, project, "project")
    for key in ("arch_list_env", "version_env"):
        if not _ENV_NAME.match(getattr(project.build, key)):
            raise _fail("not an environment variable name", project.build, key, "project.build")
    if project.build.max_jobs < 0:
        raise _fail("must be 0 (automatic) or more", project.build, "max_jobs", "project.build")
    if project.build.timeout_minutes < 1:
        raise _fail("must be at least 1", project.build, "timeout_minutes", "project.build")
    store = matrix.publishing.store
    if store and not (
        (store.startswith("file://") and len(store) > 7)
        or (store.startswith("s3://") and store[5:].strip("/"))
    ):
        raise _fail(
            f"{store!r} is neither file://PATH nor s3://BUCKET[/PREFIX]",
            matrix.publishing,
            "store",
            "publishing",
        )
    if matrix.publishing.nightly_keep < 1:
        raise _fail("must be at least 1", matrix.publishing, "nightly_keep", "publishing")
    if matrix.publishing.s3_attempts < 1:
        raise _fail(
            "must be at least 1 (one try, no retry)", matrix.publishing, "s3_attempts", "publishing"
        )
    _check_mirrors(matrix.publishing)
    _check_ci(matrix.ci)
    _check_transfers(matrix.publishing)
    if matrix.channels.default == "release":
        raise _fail(
            "the release channel is filled only by promotion; a branch targets nightly or test",
            matrix.channels,
            "default",
            "channels",
        )
    problem = project.download_url and (
        ("is not an http(s) or file URL" if not _URL.match(project.download_url) else None)
        or base_url_problem(project.download_url)
    )
    if problem:
        raise _fail(
            f"{project.download_url!r} {problem}",
            project,
            "download_url",
            "project",
            hint="e.g. https://download.pytorch.org",
        )
    for name in CHANNEL_NAMES:
        channel = matrix.channels.get(name)
        if not channel.prefix.strip("/"):
            raise _fail("must not be empty", channel, "prefix", f"channels.{name}")
        for key in ("prefix", "libtorch_prefix"):
            prefix = getattr(channel, key).strip("/")
            if prefix and not all(
                _SEGMENT.match(part) and part not in (".", "..") for part in prefix.split("/")
            ):
                raise _fail(
                    f"{prefix!r} must be folder names joined by '/' (letters, digits, '.', '_', "
                    "'-', '+'; no '..')",
                    channel,
                    key,
                    f"channels.{name}",
                )
    for release in matrix.releases.values():
        _check_release(release)
    same_channel_needs_url(matrix)


def _check_release(release: Release) -> None:
    path = f"releases.{release.name}"
    if release.version is not None and release.version.release[:2] != Version(release.name).release:
        raise _fail(
            f"version {release.version} does not belong to release {release.name}",
            release,
            "version",
            path,
            hint=f"use {release.name}.N",
        )
    _check_pythons(release, path)
    _check_env(release.env, release, path)
    check_axes(release, frozenset((*SELECTABLE, *ALL_FIELDS)))
    check_wheel_variants(release)
    _check_platforms(release, path)
    if not release.accelerators:
        raise _fail("at least one accelerator variant is needed", release, "accelerators", path)
    for vname, variant in release.accelerators.items():
        _check_variant(release, vname, variant, f"{path}.accelerators.{vname}")
    for pname, vname in release.pypi_default.items():
        _ref(pname, release.platforms, "platform", release, "pypi_default", path)
        _ref(vname, release.accelerators, "accelerator variant", release, "pypi_default", path)
    _check_libtorch(release, path)
    _check_rules(release, path)
    _check_runtime_requires(release, path)


def _check_pythons(release: Release, path: str) -> None:
    """At least one Python, none twice, each allowed by requires_python."""
    if not release.python:
        raise _fail("at least one Python version is needed", release, "python", path)
    seen = set()
    for python in release.python:
        if python in seen:
            raise _fail(f"Python {python} is listed twice", release, "python", path)
        seen.add(python)
        if release.requires_python is not None and not release.requires_python.contains(
            str(python.version), prereleases=True
        ):
            raise _fail(
                f"Python {python} is built but requires_python "
                f"'{release.requires_python}' excludes it",
                release,
                "requires_python",
                path,
            )


def _check_platforms(release: Release, path: str) -> None:
    """At least one platform, each with a valid name, arch, tag and env."""
    if not release.platforms:
        raise _fail("at least one platform is needed", release, "platforms", path)
    for pname, platform in release.platforms.items():
        ppath = f"{path}.platforms.{pname}"
        _check_name(pname, "platform name", release, "platforms", path)
        _check_name(platform.arch, "architecture", platform, "arch", ppath)
        problem = platform_tag_problem(platform.platform_tag, platform.os, platform.arch)
        if problem:
            raise _fail(problem, platform, "platform_tag", ppath)
        _check_env(platform.env, platform, ppath)


def _check_libtorch(release: Release, path: str) -> None:
    """The libtorch section lists names once each, all of them defined."""
    lib = release.libtorch
    if lib is None:
        return
    lpath = f"{path}.libtorch"
    for key, names in (
        ("variants", lib.variants),
        ("configs", lib.configs),
        ("platforms", lib.platforms),
        ("accelerators", lib.accelerators),
    ):
        if not names:
            raise _fail("must list at least one name", lib, key, lpath)
        if len(set(names)) != len(names):
            raise _fail("lists a name twice", lib, key, lpath)
        for name in names:
            _check_name(name, key[:-1], lib, key, lpath)
    for pname in (*lib.platforms, *lib.images):
        _ref(pname, release.platforms, "platform", lib, "platforms", lpath)
    for vname in lib.accelerators:
        _ref(vname, release.accelerators, "accelerator variant", lib, "accelerators", lpath)
    for images in lib.images.values():
        for vname in images:
            _ref(vname, release.accelerators, "accelerator variant", lib, "images", lpath)
    _check_libtorch_platforms(release, lpath)
    check_file_name(lib, lpath)


def _check_rules(release: Release, path: str) -> None:
    """Every rule has a reason and a valid match; includes a valid suffix, folder, env."""
    rules = [
        *((f"exclude[{i}]", r) for i, r in enumerate(release.exclude)),
        *((f"include[{i}]", r) for i, r in enumerate(release.include)),
        *((f"runtime_requires[{i}]", r) for i, r in enumerate(release.runtime_requires)),
    ]
    for where, rule in rules:
        rpath = f"{path}.{where}"
        if not rule.reason.strip():
            raise _fail("every rule needs a reason", rule, "reason", rpath)
        try:
            selector_from_match(rule.match, release.axes)
        except ValueError as exc:
            raise _fail(str(exc), rule, "match", rpath) from None
    for j, inc in enumerate(release.include):
        rpath = f"{path}.include[{j}]"
        _check_name(inc.suffix, "suffix", inc, "suffix", rpath)
        subfolder = inc.set.upload_subfolder
        try:
            folder = subfolder.format(variant="v")
        except (KeyError, IndexError, ValueError, AttributeError, TypeError):
            raise _fail(
                "may only use the placeholder {variant}",
                inc.set,
                "upload_subfolder",
                f"{rpath}.set",
            ) from None
        if subfolder and not _is_name(folder):
            raise _fail(
                f"{subfolder!r} must name one folder (lowercase letters, digits, '.', '_', '-'; "
                "no '/')",
                inc.set,
                "upload_subfolder",
                f"{rpath}.set",
                hint="e.g. {variant}_full",
            )
        if inc.set.root_index is False and not subfolder:
            raise _fail(
                "root_index: false needs the copies' own upload_subfolder (a folder the "
                "variant's cells share stays on the channel-root pages)",
                inc.set,
                "root_index",
                f"{rpath}.set",
                hint="e.g. upload_subfolder: {variant}_full",
            )
        _check_env(inc.set.env, inc.set, f"{rpath}.set")


def _check_libtorch_platforms(release: Release, lpath: str) -> None:
    """`per_platform` names a platform the section builds, variants the release defines, and
    no empty or repeated list."""
    lib = release.libtorch
    assert lib is not None
    for pname, over in lib.per_platform.items():
        opath = f"{lpath}.per_platform.{pname}"
        if pname not in lib.platforms:
            raise _fail(
                f"platform {pname!r} is not one of the archive platforms {list(lib.platforms)}",
                lib,
                "per_platform",
                lpath,
                hint=f"add it to {lpath}.platforms, or remove its per_platform entry",
            )
        for key in ("accelerators", "variants", "configs"):
            names = getattr(over, key)
            if names is None:
                continue
            if not names:
                raise _fail("must list at least one name", over, key, opath)
            if len(set(names)) != len(names):
                raise _fail("lists a name twice", over, key, opath)
            for name in names:
                _check_name(name, key[:-1], over, key, opath)
        for vname in over.accelerators or ():
            _ref(vname, release.accelerators, "accelerator variant", over, "accelerators", opath)


def _check_runtime_requires(release: Release, path: str) -> None:
    for i, rule in enumerate(release.runtime_requires):
        if not rule.add:
            raise _fail("lists no requirement", rule, "add", f"{path}.runtime_requires[{i}]")
        names = [requirement_name(r) for r in rule.add]
        if len(set(names)) != len(names):
            raise _fail("names a distribution twice", rule, "add", f"{path}.runtime_requires[{i}]")


def _check_variant(release: Release, name: str, variant: Variant, path: str) -> None:
    where = release.spans.get("accelerators")
    try:
        check_name(name, "variant name")
        local_version(name)
    except ValueError as exc:
        raise ConfigError(str(exc), where=where, key=path) from None
    kind = variant.kind
    if kind in ("cuda", "rocm") and variant.version is None:
        raise _fail(
            f"a {kind} variant needs its full toolkit version",
            variant,
            "",
            path,
            hint="add e.g. `version: 12.8.1`",
        )
    if kind == "cpu" and variant.version is not None:
        raise _fail("a cpu variant has no accelerator version", variant, "version", path)
    if kind != "cuda":
        for key in ("cudnn", "nccl", "nvcc_flags"):
            if getattr(variant, key):
                raise _fail(f"only CUDA variants have {key}", variant, key, path)
    if kind not in ("cuda", "rocm") and variant.arch_list:
        raise _fail("only CUDA and ROCm variants have an arch list", variant, "arch_list", path)
    for arch in variant.arch_list:
        if kind == "cuda" and parse_cuda_arch(arch) is None:
            raise _fail(
                f"{arch!r} is not a CUDA arch like 8.0, 9.0a, 10.0f or 12.0+PTX",
                variant,
                "arch_list",
                path,
            )
        if kind == "rocm" and not is_gfx_target(arch):
            raise _fail(
                f"{arch!r} is not a ROCm target like gfx90a or gfx942:xnack+",
                variant,
                "arch_list",
                path,
            )
    if variant.version is not None:
        expected = {
            "cuda": f"cu{variant.version.major}{variant.version.minor}",
            "rocm": f"rocm{variant.version}",
        }.get(kind)
        if expected and _names_version(name, kind) and name != expected:
            raise _fail(
                f"variant {name!r} says a different version than {variant.version}",
                variant,
                "version",
                path,
                hint=f"a {kind} {variant.version} variant is named {expected!r}",
            )
    for pname, on in variant.platforms.items():
        _ref(pname, release.platforms, "platform", variant, "platforms", path)
        platform = release.platforms[pname]
        if on.platform_tag:
            problem = platform_tag_problem(on.platform_tag, platform.os, platform.arch)
            if problem:
                raise _fail(problem, on, "platform_tag", f"{path}.platforms.{pname}")
        _check_env(on.env, on, f"{path}.platforms.{pname}")
    _check_env(variant.env, variant, path)
    _check_pins(variant, path)


def _names_version(name: str, kind: str) -> bool:
    """Whether a variant name is the conventional one that spells a version (cu128, rocm6.4)."""
    if kind == "cuda":
        return name.startswith("cu") and name[2:].isdigit()
    if kind == "rocm" and name.startswith("rocm"):
        try:
            Version(name[4:])
        except InvalidVersion:
            return False
        return True
    return False


def _check_pins(variant: Variant, path: str) -> None:
    seen: dict[tuple[str, str], str] = {}
    for text in variant.extra_install_requires:
        req = parse_requirement(text)
        name = canonicalize_name(req.name)
        key = (name, str(req.marker or ""))
        if key in seen:
            raise _fail(
                f"{req.name} is required twice ({seen[key]!r} and {text!r})",
                variant,
                "extra_install_requires",
                path,
            )
        seen[key] = text
        if variant.kind != "cuda" or variant.version is None:
            continue
        cuda = variant.version
        suffix = _CUDA_SUFFIX.search(name)
        if suffix and int(suffix.group(1)) != cuda.major:
            raise _fail(
                f"{req.name} is built for CUDA {suffix.group(1)}, but this variant is CUDA {cuda}",
                variant,
                "extra_install_requires",
                path,
            )
        pinned = pinned_version(text)
        if pinned is None:
            continue
        base = name[: suffix.start()] if suffix else name
        field = pinned_field(name)
        declared = getattr(variant, field) if field else None
        if field and declared and pinned != declared:
            raise _fail(
                f"{field} {declared} contradicts the pin {text!r}",
                variant,
                field,
                path,
                hint=f"make `{field}:` and the {base} pin name the same version",
            )
        if base == "nvidia-cuda-runtime" and pinned.release[:2] != cuda.release[:2]:
            raise _fail(
                f"the pin {text!r} is not CUDA {cuda.major}.{cuda.minor}",
                variant,
                "extra_install_requires",
                path,
            )


def _is_name(text: str) -> bool:
    try:
        check_name(text, "name")
    except ValueError:
        return False
    return True


def _check_name(name: str, what: str, obj: Located, key: str, path: str) -> None:
    try:
        check_name(name, what)
    except ValueError as exc:
        raise _fail(str(exc), obj, key, path) from None


def _ref(
    name: str, known: Mapping[str, object], what: str, obj: Located, key: str, path: str
) -> None:
    if name not in known:
        raise _fail(
            f"{what} {name!r} is not defined in this release",
            obj,
            key,
            path,
            hint="defined: " + ", ".join(known),
        )


def _check_env(env: Mapping[str, str], obj: Located, path: str) -> None:
    for name in env:
        if not _ENV_NAME.match(name):
            raise _fail(f"{name!r} is not an environment variable name", obj, "env", path)
