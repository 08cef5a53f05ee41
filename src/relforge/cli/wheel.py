"""`relforge wheel …`: commands on one wheel file, no matrix needed."""

from __future__ import annotations

from pathlib import Path

import click

from relforge.cli.options import format_option, jobs_option
from relforge.errors import RelforgeError, UsageError, ValidationFailed
from relforge.output import console, print_json


@click.group()
def wheel() -> None:
    """Look at (and fix up) single wheel files."""


@wheel.command("inspect")
@click.argument("path", metavar="WHEEL", type=click.Path(path_type=Path))
@format_option("table", "json")
@jobs_option("Threads reading ELF files.", default=2)
@click.option(
    "--with",
    "with_wheels",
    multiple=True,
    metavar="DEP.whl",
    type=click.Path(path_type=Path),
    help="A dependency's wheel: its files provide libraries and symbols (repeatable).",
)
@click.option(
    "--index",
    "index_url",
    metavar="URL",
    help="PEP 503 index (a channel's) to find the dependency wheels in that ship the libraries "
    "WHEEL needs.",
)
def inspect_command(
    path: Path, fmt: str, jobs: int, with_wheels: tuple[Path, ...], index_url: str | None
) -> None:
    """Tags, the symbol-version ceiling the ELF files need, external libraries, C++ ABI and size
    of WHEEL; exit 4 when the wheel contradicts its own tag or breaks its ABI contract."""
    from relforge.validate import inspect_wheel
    from relforge.wheelformat import WheelError

    for given, key in ((path, "WHEEL"), *((w, "--with") for w in with_wheels)):
        if not given.is_file():
            what = "a directory, not a wheel file" if given.is_dir() else "no such file"
            raise _reported(UsageError(f"{given}: {what}", key=key), given, fmt)
    try:
        found = inspect_wheel(path, jobs=jobs, dependencies=with_wheels, index_url=index_url)
    except WheelError as exc:
        raise _reported(UsageError(str(exc), key="--with"), path, fmt) from None
    except UsageError as exc:  # the index cannot be read
        raise _reported(exc, path, fmt) from None
    if found.facts.error:
        raise _reported(ValidationFailed(found.facts.error, key="WHEEL"), path, fmt)
    if fmt == "json":
        print_json(found.to_json())
    else:
        _print(found)
    if found.contradictions:
        from relforge.reference import explained

        first = found.contradictions[0].check
        raise ValidationFailed(
            f"{path.name} contradicts its own tag: "
            + "; ".join(f"{v.check} {v.message}" for v in found.contradictions),
            hint=explained(first),
        )


def _reported(error: RelforgeError, path: Path, fmt: str) -> RelforgeError:
    """With --format json, a JSON error object on stdout too (a consumer parses stdout)."""
    if fmt == "json":
        print_json(
            {
                "file": path.name,
                "status": "error",
                "error": {"exit_code": error.exit_code, "message": error.message},
            }
        )
    return error


def _print(found: object) -> None:
    from rich.table import Table

    from relforge.validate import CHECKS, Inspection

    assert isinstance(found, Inspection)
    f = found.facts
    out = console()
    out.print(f"[bold]{f.file_name}[/bold]  {f.size / 1e6:.1f} MB")
    out.print(f"  name / version   {f.metadata_name} {f.metadata_version}")
    out.print(f"  tags             {', '.join(f.tags)}")
    highest = ", ".join(f"{k}_{v}" for k, v in found.highest.items()) or "none"
    out.print(f"  needs            {found.needs_policy or 'no manylinux policy'} ({highest})")
    out.print(f"  C++ ABI          {found.abi}")
    out.print(f"  ELF files        {len(f.elves)}")
    if f.machos or f.pes:
        out.print(f"  Mach-O / PE      {len(f.machos)} / {len(f.pes)}")
    externals = found.externals()
    if externals:
        table = Table(title="external libraries", title_justify="left")
        for column in ("library", "status", "needed by"):
            table.add_column(column)
        for lib, entry in externals.items():
            paths = entry["needed_by"]
            more = f" (+{len(paths) - 2})" if len(paths) > 2 else ""
            table.add_row(lib, entry["status"], ", ".join(paths[:2]) + more)
        out.print(table)
    device = [
        (e.path, e.info.device)
        for e in f.elves
        if e.info is not None and e.info.device is not None and e.info.device.present
    ]
    if device:  # like cuobjdump --list-elf --list-ptx, one row per file
        table = Table(title="device code", title_justify="left")
        for column in ("file", "SASS", "PTX", "gfx", "compressed"):
            table.add_column(column, overflow="fold")
        for path, code in device:
            packed = sorted({i.compressed for i in code.images if i.compressed})
            table.add_row(
                path,
                ", ".join(code.sass()) or "—",
                ", ".join(code.ptx()) or "—",
                ", ".join(code.gfx()) or "—",
                ", ".join(packed) or "no",
            )
            if code.error:
                table.add_row("", f"[red]unreadable: {code.error}[/red]", "", "", "")
        out.print(table)
    if f.machos or f.pes:  # like delocate-listdeps and delvewheel show: what each links
        table = Table(title="macOS and Windows binaries", title_justify="left")
        for column in ("file", "format", "arches", "min OS", "links"):
            table.add_column(column, overflow="fold")
        for m in f.machos:
            if m.info is None:
                table.add_row(m.path, "Mach-O", f"[red]unreadable: {m.error}[/red]", "", "")
                continue
            minos = sorted({p.minos for p in m.info.slices if p.minos})
            links = sorted({d.path for p in m.info.slices for d in p.dylibs})
            table.add_row(
                m.path,
                "Mach-O (universal)" if m.info.fat else "Mach-O",
                ", ".join(m.info.arches),
                ", ".join(f"macOS {v}" for v in minos) or "—",
                "\n".join(links) or "—",
            )
        for p in f.pes:
            if p.info is None:
                table.add_row(p.path, "PE", f"[red]unreadable: {p.error}[/red]", "", "")
                continue
            links = [*p.info.imports, *(f"{d} (delay-loaded)" for d in p.info.delay_imports)]
            table.add_row(p.path, "PE", p.info.machine, "—", "\n".join(links) or "—")
        out.print(table)
    for v in found.verdicts:
        if CHECKS[v.check].scope == "artifact":
            out.print(f"  {v.status:4}  {v.check} {CHECKS[v.check].name}: {v.message}")


@wheel.command("strip-local")
@click.argument("wheel_path", metavar="IN.whl", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory for the rewritten wheel.",
)
def strip_local(wheel_path: Path, out_dir: Path) -> None:
    """Write IN.whl without its local version (METADATA Version, .dist-info name, RECORD, file
    name) and without classifiers PyPI rejects, copying the other members' compressed bytes.
    An identical output is kept; a different file at the output is never overwritten."""
    from relforge.promote import strip_local as rewrite

    if not wheel_path.is_file():
        raise UsageError(f"{wheel_path} does not exist", key="IN.whl")
    result = rewrite(wheel_path, out_dir)
    state = "wrote" if result.written else "already there:"
    click.echo(f"{state} {result.path} ({result.size} B, sha256 {result.sha256})")
    for change in result.changes:
        click.echo(f"  {change}")
