"""The connection to the Docker engine (docker SDK), with errors that say how to get one."""

from __future__ import annotations

import os
from typing import Any

from relforge.errors import ConfigError

START_HINT = (
    "start the engine (e.g. `dockerd &`, or `systemctl start docker`) and point DOCKER_HOST at "
    "its socket if it is not /var/run/docker.sock; or build on the host with --builder host"
)


def engine_address() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def connect(timeout: int = 60) -> Any:
    """A docker.DockerClient for the engine of DOCKER_HOST; ConfigError when it does not answer."""
    import docker
    import docker.errors
    import requests.exceptions

    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise ConfigError(
            f"cannot reach the Docker engine at {engine_address()}: {_first_line(exc)}",
            key="--builder docker",
            hint=START_HINT,
        ) from None
    return client


def image_id(client: Any, name: str) -> str | None:
    """The id of a local image, or None when the engine does not have it (never pulls)."""
    import docker.errors

    try:
        found: str = client.images.get(name).id
    except docker.errors.ImageNotFound:
        return None
    return found


def missing_image_hint(name: str) -> str:
    if name.startswith("relforge/builder"):
        return f"make it: relforge builder-image --name {name}  (debootstrap + docker import)"
    return f"pull it: docker pull {name}, or build with --builder docker --pull missing"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
