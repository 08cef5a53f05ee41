"""Load a matrix file: YAML → located nodes → `extends` resolved → typed Matrix → checked."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from packaging.version import InvalidVersion, Version

from relforge.errors import ConfigError, Span
from relforge.git import GitMissing, run_git_bytes
from relforge.gitfaults import fault_of
from relforge.matrix.axes import check_file_names, needs_name_check
from relforge.matrix.consistency import check_matrix
from relforge.matrix.convert import convert
from relforge.matrix.expand import candidates
from relforge.matrix.schema import Matrix, Release, Variant
from relforge.matrix.source import Map, Node, Scalar, merge, parse_yaml, without
from relforge.matrix.variants import check_variant_names

# Keys that describe one release only; a release that extends another does not inherit them.
_NOT_INHERITED = ("extends", "version", "date", "notes")


def load_matrix(path: str | Path, *, text: str | None = None) -> Matrix:
    """Read and check a matrix file. Raises ConfigError (exit 2) on any problem."""
    file = str(path)
    if text is None:
        text = read_text(file)
    root = parse_yaml(text, file)
    return matrix_from_node(root, file)


def read_text(file: str) -> str:
    """The text of `file`, or of `REV:PATH` in the enclosing git repository."""
    path = Path(file)
    if not path.exists() and ":" in file:
        return _git_show(file)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            "no such file",
            where=Span(file),
            hint="give the path of a matrix YAML file, or REV:PATH for a git revision",
        ) from None
    except IsADirectoryError:
        raise ConfigError("is a directory, not a matrix file", where=Span(file)) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"not UTF-8 text ({exc.reason} at byte {exc.start})", where=Span(file)
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", where=Span(file)) from None


def _git_show(spec: str) -> str:
    rev, _, rel = spec.partition(":")
    try:
        shown = top = run_git_bytes("rev-parse", "--show-toplevel")
        if top.code == 0:
            shown = prefix = run_git_bytes("rev-parse", "--show-prefix")
            if prefix.code == 0:
                where = f"{rev}:{prefix.out.decode().strip()}{rel}"
                shown = run_git_bytes("cat-file", "blob", where, cwd=top.out.decode().strip())
    except GitMissing:
        raise ConfigError("git is not installed", where=Span(spec)) from None
    if shown.code != 0:
        fault = fault_of(shown)
        if fault is not None:
            raise fault
        detail = shown.err.strip().splitlines()
        if detail and detail[-1].endswith("bad file"):  # the path names a tree
            raise ConfigError("is a directory at that revision", where=Span(spec)) from None
        raise ConfigError(
            f"not a file, and git cannot show it: {detail[-1] if detail else shown.code}",
            where=Span(spec),
            hint="use PATH or REV:PATH (e.g. HEAD~1:matrix.yaml)",
        )
    try:
        return shown.out.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"not UTF-8 text ({exc.reason} at byte {exc.start})", where=Span(spec)
        ) from None


def matrix_from_node(root: Node, file: str) -> Matrix:
    if not isinstance(root, Map):
        raise ConfigError("the top level of a matrix file must be a mapping", where=root.span)
    node = root.get("releases")
    if node is None:
        raise ConfigError("missing required key 'releases'", where=root.span)
    if not isinstance(node, Map) or not node.entries:
        raise ConfigError(
            "expected a non-empty mapping of release names (X.Y) to releases",
            where=node.span,
            key="releases",
        )
    releases = {
        name: _canonical_order(convert(merged, Release, f"releases.{name}", name=name))
        for name, merged in _resolve_extends(node).items()
    }
    matrix: Matrix = convert(without(root, "releases"), Matrix, "", releases=releases, file=file)
    check_matrix(matrix)
    for release in matrix.releases.values():
        if needs_name_check(release) or release.variants is not None:
            # expanding costs; only axes, labels and variant labels can make names collide
            built = [c.cell for c in candidates(matrix, release) if c.built]
            check_file_names(matrix, release, built)
            taken = {name for other in matrix.releases.values() for name in other.accelerators}
            check_variant_names(release, built, taken)
    return matrix


_KIND_ORDER = {"cpu": 0, "cuda": 1, "rocm": 2, "xpu": 3}


def _canonical_order(release: Release) -> Release:
    """Variants in a fixed order (CPU, CUDA, ROCm, XPU; older versions first), whatever order
    `extends` merged them in, so cells, docs and diffs list them the same way every time."""

    def key(item: tuple[str, Variant]) -> tuple[int, Version, str]:
        name, variant = item
        return (_KIND_ORDER[variant.kind], variant.version or Version("0"), name)

    ordered = dict(sorted(release.accelerators.items(), key=key))
    return dataclasses.replace(release, accelerators=ordered)


def _resolve_extends(releases: Map) -> dict[str, Node]:
    for entry in releases:
        _check_release_name(entry.key, entry.key_span)
    resolved: dict[str, Node] = {}

    def resolve(name: str, chain: tuple[str, ...]) -> Node:
        if name in resolved:
            return resolved[name]
        own = releases.entries[name].value
        base_name = own.get("extends") if isinstance(own, Map) else None
        if base_name is None:
            resolved[name] = own
            return own
        path = f"releases.{name}.extends"
        if (
            not isinstance(base_name, Scalar)
            or base_name.is_null
            or isinstance(base_name.value, bool)
        ):
            raise ConfigError(
                "expected the name of another release", where=base_name.span, key=path
            )
        target = base_name.text
        if target not in releases.entries:
            raise ConfigError(
                f"extends {target!r}, which is not a release in this file",
                where=base_name.span,
                key=path,
                hint="releases: " + ", ".join(releases.entries),
            )
        if target in chain or target == name:
            loop = " → ".join((*chain, name, target))
            raise ConfigError(f"extends forms a cycle: {loop}", where=base_name.span, key=path)
        base = resolve(target, (*chain, name))
        if isinstance(base, Map):
            base = without(base, *_NOT_INHERITED)
        merged = merge(base, own, path=f"releases.{name}", base_name=target)
        resolved[name] = merged
        return merged

    return {entry.key: resolve(entry.key, ()) for entry in releases}


def _check_release_name(name: str, span: Span) -> None:
    try:
        version = Version(name)
    except InvalidVersion:
        version = None
    if version is None or len(version.release) != 2 or str(version) != name:
        raise ConfigError(
            f"release names are X.Y versions; {name!r} is not",
            where=span,
            key=f"releases.{name}",
            hint="quote it if YAML changed it: '2.10'",
        )
