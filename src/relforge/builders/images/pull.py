"""Getting a cell's image onto the engine: the pull policy of `relforge build --builder docker`.

- `missing` (the default with `--builder docker`): pull an image the engine does not have;
- `always`: pull every image the cells name (a moving tag such as `:cuda13.0` gets its newest
  build);
- `never`: use what the engine has; a missing image stops the build before any cell starts.

`--builder auto` never pulls: it builds in Docker the cells whose image the engine already has.
Images named as `relforge builder-image` names them (relforge/builder:…) are made, never pulled.
A pull is never silent: it says which image and why, and afterwards the digest it got
(`name@sha256:…`), which is also what the build records and the cache keys on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from relforge.builders.images.engine import engine_address
from relforge.errors import ConfigError, EnvironmentFault

PullPolicy = Literal["never", "missing", "always"]
PULL_POLICIES: tuple[PullPolicy, ...] = ("missing", "always", "never")
# What a registry says when it does not have the image (or will not say): the name is wrong.
_ABSENT = ("manifest unknown", "not found", "pull access denied", "repository does not exist")


@dataclass(frozen=True, kw_only=True)
class Pulled:
    name: str
    id: str  # the image id on the engine (sha256:…)
    digest: str  # name@sha256:… as the registry gave it ("" when it gave none)


# Names `relforge builder-image` gives the images it makes on this engine: there is nothing to
# pull them from (Docker Hub has no relforge/…), so they are never pulled; a missing one is made.
LOCAL_ONLY = ("relforge/builder:", "relforge/builder-base:")


def wants_pull(policy: PullPolicy, present: bool, name: str = "") -> bool:
    if name.startswith(LOCAL_ONLY):
        return False
    return policy == "always" or (policy == "missing" and not present)


def pull(client: Any, name: str, why: str, say: Callable[[str], None]) -> Pulled:
    """Pull `name` through the engine; EnvironmentFault (exit 6) when the registry cannot be
    reached, ConfigError (exit 2) when it has no such image."""
    import docker.errors
    import requests.exceptions
    from docker.utils import parse_repository_tag

    say(f"pulling {name} ({why}) through {engine_address()}")
    repository, tag = parse_repository_tag(name)
    try:
        for event in client.api.pull(repository, tag=tag or "latest", stream=True, decode=True):
            if isinstance(event, dict) and event.get("error"):
                raise docker.errors.APIError(str(event["error"]))
        image = client.images.get(name)
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise _pull_error(name, exc) from None
    digests = [d for d in image.attrs.get("RepoDigests") or [] if d.startswith(repository + "@")]
    pulled = Pulled(name=name, id=str(image.id), digest=digests[0] if digests else "")
    say(f"pulled {name}: {pulled.digest or 'no registry digest'} (image {pulled.id[:19]})")
    return pulled


def repo_digest(client: Any, name: str) -> str:
    """The registry digest (`name@sha256:…`) of a local image, or "" (built here, never pulled)."""
    import docker.errors
    from docker.utils import parse_repository_tag

    try:
        attrs = client.images.get(name).attrs
    except docker.errors.ImageNotFound:
        return ""
    repository, _tag = parse_repository_tag(name)
    found = [d for d in attrs.get("RepoDigests") or [] if d.startswith(repository + "@")]
    return str(found[0]) if found else ""


def _pull_error(name: str, exc: BaseException) -> ConfigError | EnvironmentFault:
    text = " ".join(str(getattr(exc, "explanation", "") or exc).split())
    if any(word in text.lower() for word in _ABSENT):
        return ConfigError(
            f"cannot pull {name}: the registry has no such image ({text})",
            key="image",
            hint="push it to that registry (docker push), or correct the image the matrix names "
            "for this cell",
        )
    return EnvironmentFault(
        f"cannot pull {name}: {text}",
        key="image",
        hint="check that the engine reaches the registry (its address, TLS, credentials: "
        "`docker login`), then rerun; or make the image on this engine and build with "
        "--pull never",
    )
