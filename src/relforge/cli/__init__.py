"""The `relforge` command: a thin click layer over the stage packages.

Subcommand groups live in their own modules and are imported only when used, so `relforge
matrix list` does not pay for docker or boto3.  Errors become one paragraph on stderr and the
exit code of their class (see relforge.errors); an OSError that says the machine is at fault
(read-only or full file system, permission denied) and escaped every stage is still reported as
an environment fault (exit 6), never as a bug; `--debug` shows the traceback.  Under GitHub
Actions the error is also an `::error` annotation at its file:line (relforge.actions).
"""

from __future__ import annotations

import importlib
import sys
import traceback
from typing import NoReturn

import click

from relforge import __version__
from relforge.actions import annotate_error
from relforge.envfaults import environment_fault, is_environment_fault
from relforge.errors import EXIT_CODES, RelforgeError

# command name → "module:attribute"; each stage registers its group here.
COMMANDS: dict[str, str] = {
    "init": "relforge.cli.init:init",
    "matrix": "relforge.cli.matrix:matrix",
    "workflows": "relforge.cli.workflows:workflows",
    "bot": "relforge.cli.bot:bot",
    "cherry-pick": "relforge.cli.bot:cherry_pick",
    "release": "relforge.cli.release:release",
    "publish": "relforge.cli.publish:publish",
    "index": "relforge.cli.publish:index",
    "promote": "relforge.cli.publish:promote",
    "yank": "relforge.cli.yank:yank",
    "verify": "relforge.cli.verify:verify",
    "pypi": "relforge.cli.pypi:pypi",
    "build": "relforge.cli.build:build",
    "builder-image": "relforge.cli.build:builder_image",
    "validate": "relforge.cli.validate:validate",
    "wheel": "relforge.cli.wheel:wheel",
    "site": "relforge.cli.site:site",
    "variant": "relforge.cli.variant:variant",
    "store": "relforge.cli.store:store",
    "deps": "relforge.cli.deps:deps",
    "upstream": "relforge.cli.upstream:upstream",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS:
            module, _, attr = COMMANDS[cmd_name].partition(":")
            command: click.Command = getattr(importlib.import_module(module), attr)
            return command
        return super().get_command(ctx, cmd_name)


_EPILOG = "Exit codes: " + "; ".join(f"{code} {text}" for code, text in EXIT_CODES.items()) + "."


@click.group(
    cls=LazyGroup, epilog=_EPILOG, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.version_option(__version__, prog_name="relforge")
@click.option("--debug", is_flag=True, help="Show tracebacks of errors.")
def cli(debug: bool) -> None:
    """Release engineering for projects that ship native wheels, from one typed build matrix."""


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args
    try:
        cli.main(args=args, prog_name="relforge", standalone_mode=False)
    except RelforgeError as exc:
        if debug:
            traceback.print_exc()
        click.echo(exc.render(), err=True)
        annotate_error(exc)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2 if isinstance(exc, click.UsageError) else exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except OSError as exc:
        if not is_environment_fault(exc):
            _internal(exc, debug)
        if debug:
            traceback.print_exc()
        fault = environment_fault(exc, "the command could not read or write a file")
        click.echo(fault.render(), err=True)
        annotate_error(fault)
        sys.exit(fault.exit_code)
    except Exception as exc:
        _internal(exc, debug)


def _internal(exc: Exception, debug: bool) -> NoReturn:
    """A bug: say so, without a traceback unless asked."""
    if debug:
        traceback.print_exc()
    else:
        click.echo(
            f"internal error: {type(exc).__name__}: {exc}\n"
            "  hint: rerun with --debug and report the traceback",
            err=True,
        )
    sys.exit(1)
