"""The builders, registered in one dict, and the choice of a builder for each cell."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from typing_extensions import assert_never

from relforge.builders.backends.base import Builder, BuilderName
from relforge.builders.images import PullPolicy, engine_address
from relforge.errors import RelforgeError
from relforge.matrix.cell import Cell

BuilderChoice = Literal["auto", "docker", "host"]
BUILDER_CHOICES: tuple[BuilderChoice, ...] = ("auto", "docker", "host")


@dataclass(frozen=True, kw_only=True)
class BuilderOptions:
    network: bool = False  # give containers a network (default: none)
    pull: PullPolicy = "never"  # relforge.builders.images.pull; `auto` never pulls
    say: Callable[[str], None] = field(default=lambda _text: None, compare=False)


def _docker(options: BuilderOptions) -> Builder:
    from relforge.builders.backends.container import DockerBuilder  # imports the docker SDK

    return DockerBuilder(network=options.network, pull=options.pull, say=options.say)


def _host(options: BuilderOptions) -> Builder:
    from relforge.builders.backends.host import HostBuilder

    return HostBuilder()


BUILDERS: dict[BuilderName, Callable[[BuilderOptions], Builder]] = {
    "docker": _docker,
    "host": _host,
}


@dataclass(frozen=True, kw_only=True)
class Assignment:
    """Which builder builds each cell, and (for `auto`) why."""

    builders: Mapping[str, Builder]  # cell id → builder
    reasons: Mapping[str, str]  # cell id → why that builder ("" for an explicit choice)


def assign_builders(
    cells: Sequence[Cell], choice: BuilderChoice, options: BuilderOptions
) -> Assignment:
    """cell id → builder.  `auto` takes Docker for a cell the local engine can build (the image
    is there and, when relforge made it, holds the cell's Python and CUDA) and the host
    otherwise, saying why for each cell; an explicit choice checks up front that its builder
    can start."""
    match choice:
        case "docker" | "host":
            builder = BUILDERS[choice](options)
            builder.check(cells)
            return Assignment(builders={c.id: builder for c in cells}, reasons={})
        case "auto":
            host = BUILDERS["host"](options)
            docker = BUILDERS["docker"](replace(options, pull="never"))
            builders: dict[str, Builder] = {}
            reasons: dict[str, str] = {}
            for cell in cells:
                no_docker = _docker_lacks(docker, cell)
                if no_docker is None:
                    builders[cell.id] = docker
                    reasons[cell.id] = f"the engine has {cell.image} and it fits the cell"
                    continue
                builders[cell.id] = host
                no_host = host.unsatisfied(cell)
                reasons[cell.id] = f"not Docker: {no_docker}" + (
                    f"; the host cannot either: {no_host}" if no_host else ""
                )
            return Assignment(builders=builders, reasons=reasons)
        case _:
            assert_never(choice)


def _docker_lacks(docker: Builder, cell: Cell) -> str | None:
    try:
        return docker.unsatisfied(cell)
    except RelforgeError:
        return f"no Docker engine answers at {engine_address()}"
