"""The builders, registered in one dict, and the choice of a builder for each cell."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from typing_extensions import assert_never

from relforge.builders.base import Builder, BuilderName
from relforge.matrix.cell import Cell

BuilderChoice = Literal["auto", "docker", "host"]
BUILDER_CHOICES: tuple[BuilderChoice, ...] = ("auto", "docker", "host")


@dataclass(frozen=True, kw_only=True)
class BuilderOptions:
    network: bool = False  # give containers a network (default: none)


def _docker(options: BuilderOptions) -> Builder:
    from relforge.builders.container import DockerBuilder  # imports the docker SDK

    return DockerBuilder(network=options.network)


def _host(options: BuilderOptions) -> Builder:
    from relforge.builders.host import HostBuilder

    return HostBuilder()


BUILDERS: dict[BuilderName, Callable[[BuilderOptions], Builder]] = {
    "docker": _docker,
    "host": _host,
}


def assign_builders(
    cells: Sequence[Cell], choice: BuilderChoice, options: BuilderOptions
) -> Mapping[str, Builder]:
    """cell id → builder.  `auto` takes Docker for a cell whose image the local engine has, and
    the host otherwise; an explicit choice checks up front that its builder can start."""
    match choice:
        case "docker" | "host":
            builder = BUILDERS[choice](options)
            builder.check(cells)
            return {c.id: builder for c in cells}
        case "auto":
            from relforge.builders.container import DockerBuilder

            host = BUILDERS["host"](options)
            docker = BUILDERS["docker"](options)
            assert isinstance(docker, DockerBuilder)
            return {c.id: docker if c.image and docker.has_image(c.image) else host for c in cells}
        case _:
            assert_never(choice)
