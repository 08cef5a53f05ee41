"""The wheels of a build manifest as `deps mirror` resolves them: cell id → the wheel file, for a
manifest of the channel being filled (its entries' files, relative to the manifest)."""

from __future__ import annotations

from pathlib import Path

from relforge.errors import UsageError
from relforge.manifest import load_manifest
from relforge.matrix.schema import ChannelName


def built_wheels(path: Path, channel: ChannelName) -> dict[str, Path]:
    """Cell id → wheel file of the manifest's wheel entries; a manifest of another channel,
    or one naming a file that is not there, is a usage error."""
    manifest = load_manifest(path)
    if manifest.channel != channel:
        raise UsageError(
            f"{path} is a manifest of the {manifest.channel} channel, not {channel}",
            key="--manifest",
            hint=f"pass --channel {manifest.channel}, or the manifest of a {channel} build",
        )
    out = {}
    for entry in manifest.entries.values():
        if entry.package_type != "wheel":
            continue
        wheel = path.parent / entry.file
        if not wheel.is_file():
            raise UsageError(f"{path}: {entry.cell_id}'s file {wheel} is missing", key="--manifest")
        out[entry.cell_id] = wheel
    return out
