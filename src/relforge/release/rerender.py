"""Re-render generated workflows for a release branch instead of editing them with `sed`.

Each generated file names, in its header, the `relforge workflows generate …` command that made
it.  For the release branch the same command runs again on the branch's tree (the matrix already
switched to the test channel), with `--ref release/X.Y` when the files were rendered with a ref,
so the input hash in the header stays true and `--check` passes on the branch.
"""

from __future__ import annotations

import shlex
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from relforge.errors import ConfigError
from relforge.workflows.render import GENERATED_MARKER, render_workflows
from relforge.workflows.render import RenderRequest as WorkflowRequest

_FLAGS = frozenset({"--no-upload"})  # options of `workflows generate` that take no value


def is_generated(text: str) -> bool:
    """Files `relforge workflows generate` wrote start with its header line."""
    return text.startswith(GENERATED_MARKER)


@dataclass(frozen=True)
class Generation:
    """The arguments of one `relforge workflows generate` run, read back from a header."""

    matrix: str
    release: str
    out: str
    templates: str | None
    ref: str | None
    upload: bool = True  # False: rendered with --no-upload


def generation_of(path: str, text: str) -> Generation:
    """The command in a generated file's header (`… then run `relforge workflows generate …``)."""
    header = "".join(text.splitlines(keepends=True)[:3])
    start = header.find("`relforge workflows generate ")
    end = header.find("`", start + 1)
    if start < 0 or end < 0:
        raise ConfigError(
            "the generated header names no `relforge workflows generate` command",
            key=path,
            hint="regenerate the file with relforge",
        )
    argv = shlex.split(header[start + 1 : end])[3:]
    options: dict[str, str] = {}
    positional = []
    it = iter(argv)
    for arg in it:
        if arg in _FLAGS:
            options[arg] = ""
        elif arg.startswith("--"):
            options[arg] = next(it, "")
        else:
            positional.append(arg)
    if len(positional) != 1 or "--release" not in options:
        raise ConfigError(f"cannot read the generate command in its header: {argv}", key=path)
    return Generation(
        matrix=positional[0],
        release=options["--release"],
        out=options.get("--out", "."),
        templates=options.get("--templates"),
        ref=options.get("--ref"),
        upload="--no-upload" not in options,
    )


def rerender(
    files: Mapping[str, str],
    generated: tuple[str, ...],
    ref: str,
    read_tree: Callable[[str], Mapping[str, str]],
) -> dict[str, str]:
    """path → text of every generated workflow re-rendered for the release branch `ref`.

    `files` holds the tree's workflow files and matrix (already switched); `read_tree(prefix)`
    returns other files of the tree (a custom templates directory)."""
    runs = {generation_of(p, files[p]) for p in generated}
    out: dict[str, str] = {}
    for run in sorted(runs, key=lambda r: (r.matrix, r.release, r.out)):
        tree = dict(read_tree(run.templates)) if run.templates else {}
        if run.matrix not in files:
            tree |= read_tree(run.matrix)
        with tempfile.TemporaryDirectory(prefix="relforge-rerender-") as tmp:
            root = Path(tmp)
            for rel, text in {**tree, **files}.items():
                target = root / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
            rendered = render_workflows(
                WorkflowRequest(
                    matrix_file=root / run.matrix,
                    release=run.release,
                    out_dir=root / run.out,
                    templates_dir=root / run.templates if run.templates else None,
                    ref=ref if run.ref else None,
                    root=root,
                    upload=run.upload,
                )
            )
        prefix = "" if run.out in ("", ".") else run.out.rstrip("/") + "/"
        out.update({f"{prefix}{f.name}": f.text for f in rendered.files})
    return out
