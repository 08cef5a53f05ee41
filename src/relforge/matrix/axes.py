"""Dependency axes and local-label templates: how one offered cell becomes one cell per axis
value, what each such cell installs, declares and is called.

A release's `axes:` (e.g. `numpy: {"1.26": …, "2.x": …}`) multiply its cells in file order; each
value adds `-{axis}{value}` to the cell id, `RELFORGE_AXIS_<AXIS>` to its environment, and its
runtime requirement to `axis_requires` (a Requires-Dist of the wheel).  The local version label
is the template `local_label` over cell fields (`+{variant}` by default, PyTorch's scheme); an
empty template means no label, and then every axis value gets its own index folder.
"""

from __future__ import annotations

import itertools
import re
import string
from collections.abc import Iterator

from relforge.errors import ConfigError
from relforge.matrix.cell import Cell
from relforge.matrix.schema import AxisValue, Matrix, Release
from relforge.matrix.values import check_name, local_version

SAME_CHANNEL = "same-channel"
DEFAULT_LABEL = "+{variant}"
ENV_PREFIX = "RELFORGE_AXIS_"
REQUIRES_ENV = "RELFORGE_AXIS_REQUIRES"
# Variables of the prefix relforge sets itself (here and for the build:
# builders/inputs/depwheels.py).
RESERVED_ENV = frozenset({REQUIRES_ENV, "RELFORGE_AXIS_WHEELS", "RELFORGE_AXIS_INSTALL"})
_AXIS_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
# Cell fields a label may use besides the axes (and `{axis}_major`, `{axis}_minor` of each).
LABEL_FIELDS = (
    "variant",
    "accelerator",
    "accelerator_version",
    "accelerator_nodot",
    "cuda_major",
    "cxx11_abi",
    "python",
    "platform",
    "os",
    "arch",
)
INDEX_FIELDS = ("channel", "prefix", "variant")
_URL = re.compile(r"(https?://[^/\s\"'`$<>\\]+|file://)[^\s\"'`$<>\\]*\Z")


def env_name(axis: str) -> str:
    """The variable carrying an axis's value to the build: numpy → RELFORGE_AXIS_NUMPY."""
    return ENV_PREFIX + axis.upper()


def template_names(template: str) -> list[str]:
    """The placeholders of a `{name}` template; ValueError for anything but plain names."""
    names = []
    for _, name, spec, conversion in string.Formatter().parse(template):
        if name is None:
            continue
        if spec or conversion or not name.isidentifier():
            raise ValueError(f"{{{name}}} is not a plain placeholder")
        names.append(name)
    return names


def label_names(release: Release) -> tuple[str, ...]:
    axes = tuple(release.axes)
    derived = tuple(f"{a}_{part}" for a in axes for part in ("major", "minor"))
    return (*LABEL_FIELDS, *axes, *derived)


def check_axes(release: Release, forbidden: frozenset[str]) -> None:
    """Load-time checks of `axes:` and `local_label:` (names, requirements, indexes)."""
    path = f"releases.{release.name}"
    for axis, values in release.axes.items():
        where = release.at("axes")
        if not _AXIS_NAME.match(axis) or axis in forbidden or axis in LABEL_FIELDS:
            raise ConfigError(
                f"axis name {axis!r} must be lowercase letters, digits and '_' (starting with a "
                "letter) and not a cell field",
                where=where,
                key=f"{path}.axes.{axis}",
                hint="name it after the dependency, e.g. torch or numpy",
            )
        if env_name(axis) in RESERVED_ENV:
            raise ConfigError(
                f"axis name {axis!r} would be carried in {env_name(axis)}, which relforge sets "
                "itself",
                where=where,
                key=f"{path}.axes.{axis}",
                hint="name it after the dependency, e.g. torch or numpy",
            )
        if not values:
            raise ConfigError(
                "an axis needs at least one value", where=where, key=f"{path}.axes.{axis}"
            )
        for key, value in values.items():
            _check_value(axis, key, value, f"{path}.axes.{axis}.{key}")
    template = release.local_label
    try:
        names = template_names(template)
    except ValueError as exc:
        where = release.at("local_label")
        raise ConfigError(str(exc), where=where, key=f"{path}.local_label") from None
    if template and not template.startswith("+"):
        raise ConfigError(
            f"{template!r} must start with '+' (or be empty for no local label)",
            where=release.at("local_label"),
            key=f"{path}.local_label",
            hint="e.g. '+{variant}' or '+cu{cuda_major}torch{torch_minor}'",
        )
    allowed = label_names(release)
    for name in names:
        if name not in allowed:
            raise ConfigError(
                f"unknown placeholder {{{name}}}",
                where=release.at("local_label"),
                key=f"{path}.local_label",
                hint="placeholders: " + ", ".join(f"{{{n}}}" for n in allowed),
            )


def _check_value(axis: str, key: str, value: AxisValue, path: str) -> None:
    try:
        check_name(key, "axis value")
    except ValueError as exc:
        raise ConfigError(str(exc), where=value.span, key=path) from None
    if not value.install:
        raise ConfigError(
            "list at least one requirement to install", where=value.at("install"), key=path
        )
    index = value.index
    if not index or index == SAME_CHANNEL:
        return
    try:
        names = template_names(index)
    except ValueError as exc:
        raise ConfigError(str(exc), where=value.at("index"), key=f"{path}.index") from None
    unknown = [n for n in names if n not in INDEX_FIELDS]
    if unknown or not _URL.match(index):
        raise ConfigError(
            f"{index!r} is not an http(s) or file URL with only "
            + ", ".join(f"{{{n}}}" for n in INDEX_FIELDS),
            where=value.at("index"),
            key=f"{path}.index",
            hint=f"or `{SAME_CHANNEL}` for the channel this cell is published to",
        )


def expand_axes(cell: Cell, release: Release) -> Iterator[Cell]:
    """The cell once per combination of axis values (once when there are none), labelled."""
    if not release.axes and release.local_label == DEFAULT_LABEL:
        yield cell  # PyTorch's scheme, already the cell's: no copy (load and expand stay fast)
        return
    names = list(release.axes)
    choices = [list(release.axes[n].items()) for n in names]
    for combo in itertools.product(*choices):
        chosen = {n: key for n, (key, _) in zip(names, combo, strict=True)}
        values = {n: value for n, (_, value) in zip(names, combo, strict=True)}
        suffix = "".join(f"-{n}{key}" for n, key in chosen.items())
        requires = tuple(r for v in values.values() for r in v.requires)
        env = dict(cell.env)
        if chosen:
            env["RELFORGE_CELL_ID"] = cell.id + suffix
            env.update({env_name(n): key for n, key in chosen.items()})
            env[REQUIRES_ENV] = "\n".join(requires)
        newest = all(key == list(release.axes[n])[-1] for n, key in chosen.items())
        axed = cell.replace(
            id=cell.id + suffix,
            pypi_default=cell.pypi_default and newest,  # PyPI holds one wheel per platform
            axes=chosen,
            axis_install={n: tuple(v.install) for n, v in values.items()},
            axis_index={n: v.index for n, v in values.items()},
            axis_requires=requires,
            env=env,
        )
        label = render_label(axed, release)
        folder = cell.upload_subfolder if label or not chosen else f"{cell.variant}{suffix}"
        yield axed.replace(local_version=label, upload_subfolder=folder)


def render_label(cell: Cell, release: Release) -> str:
    """The cell's PEP 440 local label (normalized, without '+'), or '' for none."""
    template = release.local_label
    if not template:
        return ""
    fields = label_fields(cell)
    text = template.format_map(fields)[1:]
    where = release.at("local_label")
    key = f"releases.{release.name}.local_label"
    if not text:
        raise ConfigError(f"{template!r} is empty for cell {cell.id}", where=where, key=key)
    try:
        return local_version(text)
    except ValueError:
        raise ConfigError(
            f"{template!r} gives {text!r} for cell {cell.id}, not a PEP 440 local label "
            "(letters, digits and '.')",
            where=where,
            key=key,
        ) from None


def label_fields(cell: Cell) -> dict[str, str]:
    version = cell.accelerator_version or ""
    fields = {
        "variant": cell.variant,
        "accelerator": cell.accelerator,
        "accelerator_version": version,
        "accelerator_nodot": version.replace(".", ""),
        "cuda_major": version.split(".")[0] if cell.accelerator == "cuda" else "",
        "cxx11_abi": "TRUE" if cell.cxx11_abi else "FALSE",
        "python": cell.python or "",
        "platform": cell.platform,
        "os": cell.os,
        "arch": cell.arch,
    }
    for axis, value in cell.axes.items():
        parts = value.split(".")
        fields[axis] = value
        fields[f"{axis}_major"] = parts[0]
        fields[f"{axis}_minor"] = ".".join(parts[:2])
    return fields


def resolve_index(template: str, matrix: Matrix, cell: Cell, prefix: str) -> str:
    """An axis value's index for a cell stamped on a channel ('' stays pip's own index)."""
    if not template:
        return ""
    if template == SAME_CHANNEL:
        template = matrix.project.download_url.rstrip("/") + "/{prefix}/{variant}"
    return template.format(channel=cell.channel or "", prefix=prefix, variant=cell.variant)


def needs_name_check(release: Release) -> bool:
    """Axes and label templates are what can make two cells share a file name."""
    return bool(release.axes) or release.local_label != DEFAULT_LABEL


def check_file_names(matrix: Matrix, release: Release, cells: list[Cell]) -> None:
    """Two wheels of one release must never share a file name in one index folder."""
    seen: dict[tuple[str, ...], Cell] = {}
    for cell in cells:
        if cell.package_type != "wheel":
            continue
        key = (
            cell.upload_subfolder,
            cell.local_version,
            cell.abi_tag or "",
            cell.platform_tag or "",
        )
        other = seen.setdefault(key, cell)
        if other is not cell:
            label = f"+{cell.local_version}" if cell.local_version else "no local label"
            raise ConfigError(
                f"cells {other.id} and {cell.id} both make the same wheel file name ({label}, "
                f"{cell.abi_tag}, {cell.platform_tag}) in index folder {cell.upload_subfolder}/",
                where=release.at("local_label"),
                key=f"releases.{release.name}.local_label",
                hint="put the field that tells them apart in the label (e.g. "
                + ("{" + next(iter(cell.axes)) + "}" if cell.axes else "{variant}")
                + "), or leave the label empty for one index folder per axis value",
            )


def same_channel_needs_url(matrix: Matrix) -> None:
    """`index: same-channel` is built from project.download_url, which must then be set."""
    if matrix.project.download_url:
        return
    for release in matrix.releases.values():
        for axis, values in release.axes.items():
            for key, value in values.items():
                if value.index == SAME_CHANNEL:
                    raise ConfigError(
                        "same-channel needs project.download_url (the base of the channels)",
                        where=value.at("index"),
                        key=f"releases.{release.name}.axes.{axis}.{key}.index",
                        hint="set project.download_url, or give the index URL",
                    )
