"""The typed matrix: frozen dataclasses that mirror the YAML file key for key.

Every class is built by `relforge.matrix.convert` from located YAML nodes, so each object knows
where it (and each of its keys) was written: `obj.at("cudnn")` is a file:line:column.
A field with a default is optional in YAML; one without is required.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from relforge.errors import NOWHERE, Span
from relforge.matrix.values import LimitedApi, PythonVersion

AcceleratorKind = Literal["cpu", "cuda", "rocm", "xpu"]
ACCELERATOR_KINDS: tuple[AcceleratorKind, ...] = ("cpu", "cuda", "rocm", "xpu")
Status = Literal["stable", "experimental"]
OperatingSystem = Literal["linux", "windows", "macos"]
VersionScheme = Literal["dev-date", "final"]
ChannelName = Literal["nightly", "test", "release"]
CHANNEL_NAMES: tuple[ChannelName, ...] = ("nightly", "test", "release")


class Requirement508(str):
    """A PEP 508 requirement string, checked by `packaging` when loaded; kept as written."""


class PlatformTag(str):
    """A wheel platform tag such as `manylinux_2_28_x86_64` (several may be joined with `.`)."""


class Ed25519Key(str):
    """An Ed25519 public key, checked when loaded and kept as the base64 of its 32 raw bytes."""


class PinnedRelforge(str):
    """`ci.relforge`: `relforge==X.Y.Z` or `relforge @ URL#sha256=…`, checked when loaded."""


class Match(dict[str, tuple[str, ...]]):
    """A rule's condition: cell field → accepted values (see relforge.matrix.selector)."""


@dataclass(frozen=True, kw_only=True)
class Located:
    """Where an object and each of its keys came from."""

    span: Span = field(default=NOWHERE, compare=False, repr=False)
    spans: Mapping[str, Span] = field(default_factory=dict, compare=False, repr=False)

    def at(self, key: str) -> Span:
        return self.spans.get(key, self.span)


@dataclass(frozen=True, kw_only=True)
class Build(Located):
    """How the project builds one cell (used by `relforge build`)."""

    command: tuple[str, ...] = field(
        default=(),
        metadata={"doc": "argv run in the source tree; empty means a PEP 517 wheel build"},
    )
    archive_command: tuple[str, ...] = field(
        default=(),
        metadata={
            "doc": "argv run in the source tree for native archive (libtorch) cells; it writes "
            "one zip to $RELFORGE_OUTPUT_DIR (default: `command`)"
        },
    )
    smoke: tuple[str, ...] = field(
        default=(),
        metadata={
            "doc": "argv run in a fresh environment with the artifact installed (default: "
            "`python -c 'import M'`, M the project's import_name)"
        },
    )
    gpu_smoke: tuple[str, ...] = field(
        default=(),
        metadata={
            "doc": "argv that runs a kernel on the GPU, run for every CUDA cell on a machine with "
            "an NVIDIA GPU in the fresh environment (a torch extension: one op on a CUDA tensor)"
        },
    )
    gpu_smoke_timeout: int = field(
        default=60,
        metadata={"doc": "seconds the GPU smoke command may take; a hang past it is a failure"},
    )
    arch_list_env: str = field(
        default="CUDA_ARCH_LIST",
        metadata={
            "doc": "variable that carries the CUDA arch list (PyTorch: TORCH_CUDA_ARCH_LIST)"
        },
    )
    version_env: str = field(
        default="RELFORGE_VERSION",
        metadata={
            "doc": "variable that carries the stamped version (RELFORGE_VERSION is always set; "
            "PyTorch: PYTORCH_BUILD_VERSION)"
        },
    )
    source: str = field(
        default="",
        metadata={
            "doc": "source tree, relative to the matrix file (default: the current directory)"
        },
    )
    max_jobs: int = field(
        default=0, metadata={"doc": "MAX_JOBS of one build (0: the cores shared among --jobs)"}
    )
    timeout_minutes: int = field(default=120, metadata={"doc": "a cell's build is stopped after"})

    def command_for(self, package_type: str) -> tuple[str, ...]:
        """The argv that builds a cell of this package type (empty: the PEP 517 wheel build)."""
        if package_type != "wheel" and self.archive_command:
            return self.archive_command
        return self.command


@dataclass(frozen=True, kw_only=True)
class Project(Located):
    name: str = field(metadata={"doc": "distribution name on the index (e.g. torch)"})
    display_name: str = field(default="", metadata={"doc": "name used in docs (default: name)"})
    version_file: str = field(default="version.txt", metadata={"doc": "file holding X.Y.Z"})
    import_name: str = field(
        default="",
        metadata={
            "doc": "the top-level module the runtime checks import (default: the name, "
            "lowercased, - and . as _)"
        },
    )
    download_url: str = field(
        default="",
        metadata={"doc": "base URL the channel prefixes hang off (https://download.pytorch.org)"},
    )
    size_limit_mb: int = field(default=100, metadata={"doc": "largest artifact the index accepts"})
    repository: str = field(
        default="",
        metadata={
            "doc": "GitHub owner/name; generated workflows call their reusable workflow there "
            "at a ref (`workflows generate --ref`)"
        },
    )
    build: Build = field(default_factory=Build)
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def title(self) -> str:
        return self.display_name or self.name


@dataclass(frozen=True, kw_only=True)
class Channel(Located):
    version_scheme: VersionScheme = field(
        metadata={"doc": "dev-date: X.Y.Z.devYYYYMMDD+variant; final: X.Y.Z+variant (RCs too)"}
    )
    prefix: str = field(metadata={"doc": "storage prefix of wheels, e.g. whl/test"})
    libtorch_prefix: str = field(default="", metadata={"doc": "storage prefix of native archives"})
    root_index: bool = field(
        default=True,
        metadata={
            "doc": "write channel-root pages (<prefix>/<project>/) listing every variant "
            "folder's files, so `--index-url <download_url>/<prefix>` works; false removes them"
        },
    )


def _channel(scheme: VersionScheme, prefix: str, libtorch: str) -> Channel:
    return Channel(version_scheme=scheme, prefix=prefix, libtorch_prefix=libtorch)


@dataclass(frozen=True, kw_only=True)
class Channels(Located):
    nightly: Channel = field(
        default_factory=lambda: _channel("dev-date", "whl/nightly", "libtorch/nightly")
    )
    test: Channel = field(default_factory=lambda: _channel("final", "whl/test", "libtorch/test"))
    release: Channel = field(default_factory=lambda: _channel("final", "whl", "libtorch"))
    default: ChannelName = field(
        default="nightly",
        metadata={
            "doc": "channel this branch's builds target when no --channel is given; "
            "`relforge release cut` sets it to test on the release branch"
        },
    )

    def get(self, name: ChannelName) -> Channel:
        channel: Channel = getattr(self, name)
        return channel

    def pick(self, given: ChannelName | None) -> ChannelName:
        """The channel a command works on: the one given, else this branch's default."""
        return given or self.default


@dataclass(frozen=True, kw_only=True)
class Mirror(Located):
    """An extra store that `publish` and `promote` fill exactly like the main one."""

    name: str = field(metadata={"doc": "how `relforge verify --store NAME` selects it"})
    url: str = field(metadata={"doc": "file://PATH or s3://bucket/prefix"})
    endpoint_url: str = field(default="", metadata={"doc": "S3-compatible endpoint (R2, MinIO)"})


@dataclass(frozen=True, kw_only=True)
class Publishing(Located):
    store: str = field(
        default="", metadata={"doc": "file://PATH or s3://bucket/prefix; empty: .relforge/store"}
    )
    s3_endpoint_url: str = ""
    s3_attempts: int = field(
        default=8,
        metadata={
            "doc": "tries per S3 request (1 = no retry) before a transient fault (5xx, "
            "throttling, a reset or unreachable endpoint) ends the command (exit 6)"
        },
    )
    s3_multipart_threshold_mb: int = field(
        default=64,
        metadata={
            "doc": "S3 objects larger than this (MiB) are uploaded, and copied between "
            "endpoints, as multipart uploads: parts sent in parallel, resumable"
        },
    )
    s3_part_size_mb: int = field(
        default=8,
        metadata={
            "doc": "size (MiB, at least 5) of each part of a multipart upload or copy; grown "
            "for objects that would need more than 10,000 parts"
        },
    )
    s3_part_concurrency: int = field(
        default=16,
        metadata={
            "doc": "parts in flight at once (all the stores a command writes together); the "
            "memory parts hold is about this times s3_part_size_mb"
        },
    )
    s3_copy_threshold_mb: int = field(
        default=5120,
        metadata={
            "doc": "server-side copies larger than this (MiB, at most 5120: S3 copies at most "
            "5 GiB in one request) are made part by part (UploadPartCopy)"
        },
    )
    backup_store: str = ""
    pypi_repository_url: str = ""
    pypi_file_limit_mb: int = field(
        default=100,
        metadata={
            "doc": "the PyPI project's per-file limit (MiB; PyPI's default 100, raised on "
            "request): `pypi stage` and `pypi upload` refuse a larger file before any upload"
        },
    )
    pypi_project_limit_mb: int = field(
        default=10240,
        metadata={
            "doc": "the PyPI project's total size quota (MiB; PyPI's default 10 GiB): the "
            "project's current usage plus the release must fit, checked before any upload"
        },
    )
    nightly_keep: int = field(default=30, metadata={"doc": "nightly versions kept per package"})
    trusted_keys: tuple[Ed25519Key, ...] = field(
        default=(),
        metadata={
            "doc": "Ed25519 public keys (base64 of the raw 32 bytes, or PEM); when set, every "
            "stored manifest must carry a valid signature by one of them"
        },
    )
    mirrors: tuple[Mirror, ...] = field(
        default=(), metadata={"doc": "extra stores written with the same checks as the store"}
    )


@dataclass(frozen=True, kw_only=True)
class Ci(Located):
    """What the generated workflows run relforge with (`relforge workflows generate`)."""

    relforge: PinnedRelforge | None = field(
        default=None,
        metadata={
            "doc": "the relforge every job installs: relforge==X.Y.Z, or relforge @ URL#sha256=… "
            "(hash-checked); default: relforge==<the version that generated the workflows>"
        },
    )
    python: PythonVersion = field(
        default_factory=lambda: PythonVersion.parse("3.12"),
        metadata={"doc": "the Python relforge runs on in every job (its own venv)"},
    )
    runner: str = field(
        default="ubuntu-24.04",
        metadata={
            "doc": "runner label of relforge's own jobs (upload, index, site, promote, PyPI, "
            "bot); a self-hosted label where GitHub-hosted runners are not available"
        },
    )


@dataclass(frozen=True, kw_only=True)
class Platform(Located):
    os: OperatingSystem
    arch: str
    platform_tag: PlatformTag = field(metadata={"doc": "default wheel platform tag"})
    cxx11_abi: bool = True
    build_runner: str = ""
    test_runners: Mapping[AcceleratorKind, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    repair_options: tuple[str, ...] = field(
        default=(),
        metadata={
            "doc": "extra options of the platform's wheel repair: auditwheel repair (Linux), "
            "delocate-wheel (macOS), delvewheel repair (Windows), e.g. [--exclude, libfoo.so] "
            "or [--no-dll, foo.dll]"
        },
    )


@dataclass(frozen=True, kw_only=True)
class VariantOnPlatform(Located):
    """A variant's settings on one platform; the keys override the platform's defaults."""

    image: str = ""
    platform_tag: PlatformTag | None = None
    cxx11_abi: bool | None = None
    bundle_libraries: bool = field(
        default=False,
        metadata={
            "doc": "bundle the libraries in the wheel instead of declaring extra_install_requires"
        },
    )
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Variant(Located):
    """One accelerator build: `cpu`, `cu128`, `rocm6.4`, `xpu`, `cpu-cxx11-abi`…"""

    kind: AcceleratorKind
    version: Version | None = field(default=None, metadata={"doc": "full toolkit version"})
    status: Status = "stable"
    cudnn: Version | None = None
    nccl: Version | None = None
    arch_list: tuple[str, ...] = ()
    nvcc_flags: tuple[str, ...] = ()
    extra_install_requires: tuple[Requirement508, ...] = ()
    platforms: Mapping[str, VariantOnPlatform] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    description: str = ""
    abi3: LimitedApi | None = field(
        default=None,
        metadata={
            "doc": "limited-API floor X.Y: the variant's wheels for Pythons from X.Y on (not "
            "free-threaded) are one cpXY-abi3 wheel per platform (default: the release's abi3)"
        },
    )

    @property
    def short_version(self) -> str:
        """`12.8` for CUDA 12.8.1; the whole version for ROCm 6.2.4; empty for CPU."""
        if self.version is None:
            return ""
        if self.kind == "cuda":
            return f"{self.version.major}.{self.version.minor}"
        return str(self.version)


LibtorchConfig = Literal["release", "debug"]


@dataclass(frozen=True, kw_only=True)
class LibtorchOnPlatform(Located):
    """What one platform builds of the native archives; a key left out keeps the section's."""

    accelerators: tuple[str, ...] | None = None
    variants: tuple[str, ...] | None = None
    configs: tuple[LibtorchConfig, ...] | None = None
    cxx11_abi: bool | None = None
    file_name: str | None = field(
        default=None, metadata={"doc": "the platform's archive file name (see file_name)"}
    )


@dataclass(frozen=True, kw_only=True)
class LibtorchSet:
    """The archives of one platform, the section's defaults and its per-platform keys merged."""

    accelerators: tuple[str, ...]
    variants: tuple[str, ...]
    configs: tuple[LibtorchConfig, ...]
    cxx11_abi: bool | None


@dataclass(frozen=True, kw_only=True)
class Libtorch(Located):
    """Native archives (libtorch-style): accelerators × variants × configs per platform."""

    platforms: tuple[str, ...]
    accelerators: tuple[str, ...]
    variants: tuple[str, ...]
    configs: tuple[LibtorchConfig, ...] = field(
        default=("release",), metadata={"doc": "release and/or debug builds"}
    )
    cxx11_abi: bool | None = field(
        default=None,
        metadata={
            "doc": "C++11 ABI of the archives (default: as the variant builds on the platform)"
        },
    )
    images: Mapping[str, Mapping[str, str]] = field(
        default_factory=dict, metadata={"doc": "platform → accelerator variant → builder image"}
    )
    per_platform: Mapping[str, LibtorchOnPlatform] = field(
        default_factory=dict,
        metadata={
            "doc": "platform → accelerators, variants, configs or cxx11_abi that differ there "
            "(e.g. Windows builds release and debug)"
        },
    )
    file_name: str = field(
        default="{project}-{platform}-{libtorch_variant}-{libtorch_config}-{version}.zip",
        metadata={
            "doc": "the archive's file name, a template over {project} (normalized), {platform}, "
            "{libtorch_variant}, {libtorch_config}, {debug} (`-debug` or empty), {variant} and "
            "{version}; the build gets it as $RELFORGE_ARCHIVE_NAME and must write exactly this "
            "name; docs and the site link to it (the default is the name `validate --dist` "
            "binds to the cell)"
        },
    )

    def on(self, platform: str) -> LibtorchSet:
        """What `platform` builds: its `per_platform` keys over the section's."""
        over = self.per_platform.get(platform) or LibtorchOnPlatform()
        return LibtorchSet(
            accelerators=self.accelerators if over.accelerators is None else over.accelerators,
            variants=self.variants if over.variants is None else over.variants,
            configs=self.configs if over.configs is None else over.configs,
            cxx11_abi=self.cxx11_abi if over.cxx11_abi is None else over.cxx11_abi,
        )


@dataclass(frozen=True, kw_only=True)
class Rule(Located):
    match: Match
    reason: str


@dataclass(frozen=True, kw_only=True)
class ExcludeRule(Rule):
    """Cells matching `match` are not built."""


@dataclass(frozen=True, kw_only=True)
class ExtraCellSettings(Located):
    bundle_libraries: bool | None = None
    upload_subfolder: str = field(default="", metadata={"doc": "may use {variant}"})
    root_index: bool | None = field(
        default=None,
        metadata={
            "doc": "false keeps the copies' folder off the channel-root pages (for copies whose "
            "wheels have the variant's file names; needs upload_subfolder)"
        },
    )
    image: str = ""
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class IncludeRule(Rule):
    """One-off extra cells: copies of the matched cells with a suffix and some settings changed."""

    suffix: str
    set: ExtraCellSettings = field(default_factory=ExtraCellSettings)


@dataclass(frozen=True, kw_only=True)
class AxisValue(Located):
    """One value of a dependency axis: what the build installs, and what the wheel then needs."""

    install: tuple[Requirement508, ...] = field(
        metadata={"doc": "requirements installed into the build environment (offline, prefetched)"}
    )
    index: str = field(
        default="",
        metadata={
            "doc": "index they come from: empty = pip's configured index; a URL, which may use "
            "{channel}, {prefix} (the channel's storage prefix) and {variant}; `same-channel` = "
            "project.download_url/{prefix}/{variant}, the channel this cell is published to"
        },
    )
    requires: tuple[Requirement508, ...] = field(
        default=(), metadata={"doc": "Requires-Dist the built wheel declares (torch==2.9.*)"}
    )


@dataclass(frozen=True, kw_only=True)
class VariantProvider(Located):
    """The plugin an installer asks whether a namespace's properties fit the machine."""

    requires: tuple[Requirement508, ...] = field(
        metadata={"doc": "the provider plugin's requirements (nvidia-variant-provider…)"}
    )
    plugin_api: str = field(default="", metadata={"doc": "module:attribute of the plugin"})


@dataclass(frozen=True, kw_only=True)
class VariantLabelRule(Located):
    """Cells matching `match` become variant wheels with this label and these properties."""

    match: Match
    label: str = field(metadata={"doc": "variant label in the file name ([0-9a-z_.]+; null)"})
    properties: tuple[str, ...] = field(
        default=(), metadata={"doc": "`namespace :: feature :: value`; none for the null label"}
    )


@dataclass(frozen=True, kw_only=True)
class WheelVariants(Located):
    """Experimental: PEP 825 variant wheels made from this release's wheels."""

    providers: Mapping[str, VariantProvider] = field(
        metadata={"doc": "namespace → provider, in priority order"}
    )
    wheels: tuple[VariantLabelRule, ...] = field(metadata={"doc": "first matching rule wins"})
    folder: str = field(default="variant", metadata={"doc": "index folder under the channel"})


@dataclass(frozen=True, kw_only=True)
class RequiresRule(Rule):
    """Runtime requirements every matching wheel cell declares (appended to its variant's
    extra_install_requires), written once per release instead of in each variant's list."""

    add: tuple[Requirement508, ...]


@dataclass(frozen=True, kw_only=True)
class Release(Located):
    name: str = field(default="", metadata={"internal": True, "doc": "the release key, X.Y"})
    extends: str = ""
    version: Version | None = field(default=None, metadata={"doc": "full version, default X.Y.0"})
    date: datetime.date | None = None
    cxx_standard: str = ""
    python: tuple[PythonVersion, ...]
    requires_python: SpecifierSet | None = None
    platforms: Mapping[str, Platform]
    accelerators: Mapping[str, Variant]
    pypi_default: Mapping[str, str] = field(default_factory=dict)
    libtorch: Libtorch | None = None
    exclude: tuple[ExcludeRule, ...] = ()
    include: tuple[IncludeRule, ...] = ()
    runtime_requires: tuple[RequiresRule, ...] = field(
        default=(),
        metadata={
            "doc": "rules adding requirements to the wheels they match (e.g. triton for CUDA)"
        },
    )
    env: Mapping[str, str] = field(default_factory=dict)
    notes: str = ""
    axes: Mapping[str, Mapping[str, AxisValue]] = field(
        default_factory=dict,
        metadata={
            "doc": "build-time dependency axes: name → value → AxisValue; they multiply cells"
        },
    )
    variants: WheelVariants | None = field(
        default=None, metadata={"doc": "experimental PEP 825 variant wheels"}
    )
    abi3: LimitedApi | None = field(
        default=None,
        metadata={
            "doc": "limited-API floor X.Y of every variant that names none: its wheels for "
            "Pythons from X.Y on (not free-threaded) are one cpXY-abi3 wheel per platform"
        },
    )
    local_label: str = field(
        default="+{variant}",
        metadata={
            "doc": "the version's local label, a template over cell fields (docs/guide/matrix.md); "
            "empty: no label, one index folder per axis value"
        },
    )

    @property
    def full_version(self) -> Version:
        return self.version or Version(f"{self.name}.0")

    @property
    def python_specifier(self) -> SpecifierSet:
        if self.requires_python is not None:
            return self.requires_python
        return SpecifierSet(f">={min(p.version for p in self.python)}")


@dataclass(frozen=True, kw_only=True)
class Matrix(Located):
    schema_version: Literal[1] = 1
    project: Project
    channels: Channels = field(default_factory=Channels)
    publishing: Publishing = field(default_factory=Publishing)
    ci: Ci = field(default_factory=Ci)
    releases: Mapping[str, Release] = field(metadata={"internal": True})
    file: str = field(default="", metadata={"internal": True, "doc": "path it was read from"})

    def release(self, name: str) -> Release:
        from relforge.errors import UsageError

        try:
            return self.releases[name]
        except KeyError:
            known = ", ".join(self.releases) or "none"
            raise UsageError(
                f"release {name!r} is not in {self.file} (releases: {known})", key="--release"
            ) from None
