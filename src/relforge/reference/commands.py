"""The reference of every command: its `--help`, read from the click app at a fixed width."""

from __future__ import annotations

from collections.abc import Iterator

import click

from relforge.reference.pageparts import anchor, banner

WIDTH = 88  # the help is wrapped here whatever the terminal, so the page does not drift


def _walk(
    command: click.Command, name: str, parent: click.Context | None
) -> Iterator[tuple[str, click.Context]]:
    # the command's own context settings (`-h` beside `--help`), as `relforge … --help` has
    # them: click caches a command's help option from the first context that asks for it
    settings = {**command.context_settings, "terminal_width": WIDTH, "max_content_width": WIDTH}
    ctx = click.Context(command, info_name=name, parent=parent, **settings)
    yield ctx.command_path, ctx
    if isinstance(command, click.Group):
        for sub_name in command.list_commands(ctx):
            sub = command.get_command(ctx, sub_name)
            if sub is not None and not sub.hidden:
                yield from _walk(sub, sub_name, ctx)


def commands_page(cli: click.Group, prog: str = "relforge") -> str:
    """Every command's help, the top-level group first, then depth first in name order."""
    entries = list(_walk(cli, prog, None))
    lines = [
        banner("commands.py"),
        "# Commands",
        "",
        "Every command's `--help`, as `relforge … --help` prints it.  Mutating commands print "
        "their plan and change nothing without `--execute`.",
        "",
    ]
    lines += [f"- [`{path}`](#{anchor(path)})" for path, _ in entries]
    lines.append("")
    for path, ctx in entries:
        help_text = ctx.command.get_help(ctx).rstrip()
        lines += [f"## {path} {{#{anchor(path)}}}", "", "```text", help_text, "```", ""]
    return "\n".join(lines).rstrip() + "\n"
