"""Where relforge keeps things outside the project: the user cache (rootfs tarballs, the build
wheelhouse, container tools).  RELFORGE_CACHE_DIR overrides it."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    explicit = os.environ.get("RELFORGE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "relforge"
