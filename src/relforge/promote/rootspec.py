"""A channel's root index as the matrix describes it: its prefix, its variant folders, and the
names a project there cannot take (a variant folder, another channel's nested prefix).

Read from the matrix alone, before anything is uploaded: the pages themselves are
relforge.promote.index.folder.rootpages; what the manifests vouch for reads the spec (vouch.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from packaging.utils import canonicalize_name

from relforge.errors import ConfigError, Span
from relforge.matrix.cell import Cell
from relforge.matrix.schema import CHANNEL_NAMES, ChannelName, Matrix
from relforge.promote.cells import ChannelCells


@dataclass(frozen=True, kw_only=True)
class RootSpec:
    """A channel's root index as the matrix describes it."""

    channel: str
    prefix: str  # whl, whl/test
    folders: tuple[str, ...]  # the channel's variant folders (whl/cpu, …)
    enabled: bool = True
    # a name the root cannot give a project (a variant folder, a nested channel prefix) → the
    # matrix key that claims it
    reserved: Mapping[str, str] = field(default_factory=dict)
    where: Mapping[str, Span] = field(default_factory=dict)  # name → where the key is

    def relative(self, folder: str) -> str:
        return folder[len(self.prefix) + 1 :]


def root_spec(cells: ChannelCells) -> RootSpec:
    """The channel's root index; a project name that is also a folder name is a config error."""
    matrix, channel = cells.matrix, cells.channel
    chan = matrix.channels.get(channel)
    prefix = chan.prefix.strip("/")
    folders: set[str] = set()
    reserved: dict[str, str] = {}
    where: dict[str, Span] = {}
    names: dict[tuple[str, str, str, str], Cell] = {}  # a wheel file name's parts → its cell
    for name, release in matrix.releases.items():
        for cell in cells.of(name):
            if cell.package_type != "wheel" or not cell.upload_prefix:
                continue
            folder = cell.upload_prefix.rstrip("/")
            if not cell.off_root_index:
                folders.add(folder)
            if chan.root_index and not cell.off_root_index:
                parts = (name, cell.local_version, cell.abi_tag or "", cell.platform_tag or "")
                first_cell = names.setdefault(parts, cell)
                if first_cell.upload_prefix != cell.upload_prefix:
                    raise _one_name_twice(matrix, channel, first_cell, cell)
            first = _canonical(folder[len(prefix) + 1 :].split("/", 1)[0])
            if first in reserved:
                continue
            accelerator = release.accelerators.get(cell.variant)
            if cell.upload_subfolder.startswith(cell.variant) and accelerator is not None:
                reserved[first] = f"releases.{name}.accelerators.{cell.variant}"
                where[first] = accelerator.span
            else:
                reserved[first] = f"releases.{name} (upload_subfolder {cell.upload_subfolder!r})"
                where[first] = release.span
    for other in CHANNEL_NAMES:
        chan_other = matrix.channels.get(other)
        theirs = chan_other.prefix.strip("/")
        if other != channel and theirs.startswith(prefix + "/"):
            first = _canonical(theirs[len(prefix) + 1 :].split("/", 1)[0])
            reserved.setdefault(first, f"channels.{other}.prefix")
            where.setdefault(first, chan_other.at("prefix"))
    spec = RootSpec(
        channel=channel,
        prefix=prefix,
        folders=tuple(sorted(folders)),
        enabled=chan.root_index,
        reserved=reserved,
        where=where,
    )
    if spec.enabled:
        check_name(spec, _canonical(matrix.project.name))
    return spec


def _one_name_twice(matrix: Matrix, channel: ChannelName, one: Cell, two: Cell) -> ConfigError:
    """Two folders of the channel hold wheels of one name (a release without a local label
    that tells its variant folders apart): the root page, which lists every folder's files by
    name, cannot hold both.  Caught from the matrix, before anything is uploaded."""
    chan = matrix.channels.get(channel)
    release = matrix.release(two.release)
    label = f"+{two.local_version}" if two.local_version else "no local label"
    return ConfigError(
        f"cells {one.id} and {two.id} make wheels of one file name ({label}, {two.abi_tag}, "
        f"{two.platform_tag}) in {one.upload_prefix} and {two.upload_prefix}: the root index "
        f"of the {channel} channel lists every variant folder's files by name and cannot hold "
        "both",
        where=chan.at("root_index") if "root_index" in chan.spans else release.at("local_label"),
        key=f"channels.{channel}.root_index",
        hint=f"set channels.{channel}.root_index: false, or put what tells the folders apart "
        f"in releases.{release.name}.local_label",
    )


def check_name(spec: RootSpec, project: str) -> None:
    claimed = spec.reserved.get(project)
    if claimed is not None:
        raise ConfigError(
            f"project {project!r} has the name of the folder {spec.prefix}/{project}/ that "
            f"{claimed} uses; the root index of the {spec.channel} channel cannot hold both",
            where=spec.where.get(project),
            key=claimed,
            hint=f"rename the folder, or set channels.{spec.channel}.root_index: false",
        )


def _canonical(name: str) -> str:
    return str(canonicalize_name(name))
