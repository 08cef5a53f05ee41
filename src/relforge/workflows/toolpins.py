"""Tool pins: the tools a generated workflow installs besides relforge (uv, which installs
relforge), each pinned to one version and to the sha256 of every wheel of that version.

The pins are data (`relforge/resources/tool_pins.yaml`, refreshed by
`scripts/refresh_tool_pins.py`).  A job installs a tool with `pip --require-hashes`, which takes
the one wheel for the runner's platform and refuses bytes that match none of the hashes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources

import yaml
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from relforge.errors import ConfigError, Span

TOOL_PINS_NAME = "tool_pins.yaml"
_SHA256 = re.compile(r"[0-9a-f]{64}\Z")


@dataclass(frozen=True, kw_only=True)
class ToolPin:
    name: str
    version: str
    sha256: tuple[str, ...]  # one per wheel of the version

    @property
    def requirement(self) -> str:
        """The tool as one line of a requirements file for `pip install --require-hashes`."""
        hashes = " ".join(f"--hash=sha256:{digest}" for digest in self.sha256)
        return f"{self.name}=={self.version} {hashes}"


@functools.cache
def package_tool_pins() -> Mapping[str, ToolPin]:
    """The pins relforge ships (read once a process)."""
    text = resources.files("relforge.resources").joinpath(TOOL_PINS_NAME).read_text("utf-8")
    return parse_tool_pins(text, f"relforge/resources/{TOOL_PINS_NAME}")


def parse_tool_pins(text: str, where: str) -> dict[str, ToolPin]:
    """Pins from one tool_pins.yaml text; ConfigError names the file and the key."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"not valid YAML: {exc}", where=Span(where)) from None
    if not isinstance(data, Mapping):
        raise ConfigError("expected a mapping of tool → {version, sha256}", where=Span(where))
    pins: dict[str, ToolPin] = {}
    for name, entry in data.items():
        if not isinstance(entry, Mapping) or set(entry) != {"version", "sha256"}:
            raise ConfigError(
                "expected exactly the keys version and sha256", where=Span(where), key=str(name)
            )
        try:
            version = str(Version(str(entry["version"])))
        except InvalidVersion:
            raise ConfigError(
                f"{entry['version']!r} is not a PEP 440 version",
                where=Span(where),
                key=f"{name}.version",
            ) from None
        digests = entry["sha256"]
        if (
            not isinstance(digests, list)
            or not digests
            or not all(isinstance(d, str) and _SHA256.match(d) for d in digests)
            or len(set(digests)) != len(digests)
        ):
            raise ConfigError(
                "expected a list of distinct sha256 digests (64 lowercase hex digits), one per "
                "wheel of the version",
                where=Span(where),
                key=f"{name}.sha256",
                hint="refresh the file with scripts/refresh_tool_pins.py",
            )
        tool = canonicalize_name(str(name))
        pins[tool] = ToolPin(name=tool, version=version, sha256=tuple(digests))
    return pins
