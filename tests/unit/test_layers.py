"""The layering of src/relforge, read from the source (no import is executed).

The rules: no module outside `relforge.cli` imports `relforge.cli` (the CLI parses, calls and
prints; stages never reach back into it); the modules import each other without cycles; every
package sits in one of the LAYERS and imports only from its own package or from layers below its
own; the CLI imports each package by its front door (`relforge.promote`, never
`relforge.promote.plans.storeplan`).
Every import counts: module level, class bodies, `if`/`try`/`with`/`match` blocks, function
bodies (marked "in a function": a deferred import hides a cycle from the interpreter, not from a
reader) and `if TYPE_CHECKING:` blocks (marked "for type checking": they never run, but a type
one module needs from another ties them as much as a call does).
Importing `a.b.c` also runs the package `__init__` of `a.b`, so that is an edge too (except to
the importer's own packages, which are already loading).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
ROOT_PACKAGE = "relforge"
CLI = "relforge.cli"
# `python -m relforge` starts the CLI: the one module outside it allowed to import it.
CLI_IMPORTERS_ALLOWED = frozenset({"relforge.__main__"})

# The layers of relforge, lowest first, each a set of its top-level packages and modules
# (`relforge.X`; "relforge" is the package's own __init__).  A package imports only from itself and
# from layers below its own: two packages of one layer never import each other, so each can be
# read, tested and changed without the other.  The foundation is the exception: its small
# modules (formats, files, processes, git, the forge API) build on each other, without cycles.
_FOUNDATION_MODULES = [
    "relforge",
    "errors",
    "output",
    "atomic",
    "locations",
    "cachedir",
    "tomlcompat",
    "protocols",
    "providedlibs",
    "record",
    "simplepages",
    "versiontags",
    "envfaults",
    "pipcommand",
    "forges",
    "manifest",
    "signing",
    "wheelformat",
    "zipcopy",
    "gitfaults",
    "wheelversion",
    "git",
    "actions",
    "wheelplatform",
]
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("foundation", frozenset(_FOUNDATION_MODULES)),
    ("object stores", frozenset({"stores"})),
    ("the matrix", frozenset({"matrix"})),
    ("the matrix's stores, opened", frozenset({"matrixstores"})),
    (
        "readers of the matrix",
        frozenset({"axiswheels", "interpreters", "workflows", "site", "variants", "deps"}),
    ),
    ("stages", frozenset({"promote", "release", "validate"})),
    ("stages on stages", frozenset({"builders", "bot"})),
    ("front ends of stages", frozenset({"init", "upstream", "reference"})),
    ("command line", frozenset({"cli"})),
    ("entry point", frozenset({"__main__"})),
)
FOUNDATION = LAYERS[0][0]


@dataclass(frozen=True, kw_only=True)
class Edge:
    source: str
    target: str
    where: str  # file:line of the import, relative to the source root
    # "" at load time; "in a function" (runs on the first call) or "for type checking" (never
    # runs): edges the interpreter does not follow when it loads the module
    deferred: str
    written: str  # the module the statement names (`from X import y`, `import X`): X


def module_files(src: Path, package: str) -> dict[str, Path]:
    """Dotted module name → file, for every module of `package` under `src`."""
    modules: dict[str, Path] = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(
    body: Sequence[ast.stmt], *, deferred: str
) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement, each with why it is not run at load time ("" when it is)."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, deferred
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _runtime_imports(node.body, deferred=deferred or "for type checking")
            yield from _runtime_imports(node.orelse, deferred=deferred)
        else:
            function = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            now_deferred = deferred or ("in a function" if function else "")
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    yield from _runtime_imports([child], deferred=now_deferred)
                elif isinstance(child, ast.ExceptHandler | ast.match_case):
                    yield from _runtime_imports(child.body, deferred=now_deferred)


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _absolute(module: str, path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = _package_of(module, path).split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _with_packages(name: str, importer: str, modules: Mapping[str, Path]) -> Iterator[str]:
    """`name` and the packages whose `__init__` importing it runs, known modules only."""
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        candidate = ".".join(parts[:i])
        is_own_package = importer == candidate or importer.startswith(candidate + ".")
        if candidate in modules and (i == len(parts) or not is_own_package):
            yield candidate


def _is_within(module: str, package: str) -> bool:
    return module.startswith(package + ".")


def _where(root: Path, path: Path, line: int) -> str:
    return f"{path.relative_to(root).as_posix()}:{line}"


def import_edges(root: Path, modules: Mapping[str, Path]) -> list[Edge]:
    """Every import from one of `modules` to another (or to a package of one) that can run."""
    edges: list[Edge] = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, deferred in _runtime_imports(tree.body, deferred=""):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
                written = {name: name for name in targets}
            else:
                base = _absolute(module, path, node)
                names = [f"{base}.{alias.name}" for alias in node.names]
                # `from pkg import sub` inside pkg needs only pkg.sub: pkg is already loading
                only_modules = all(n in modules for n in names) and _is_within(module, base)
                targets = names if only_modules else [base, *names]
                written = dict.fromkeys(targets, base)
            seen: set[str] = set()
            for target in targets:
                for hit in _with_packages(target, module, modules):
                    if hit != module and hit not in seen:
                        seen.add(hit)
                        where = _where(root, path, node.lineno)
                        edge = Edge(
                            source=module,
                            target=hit,
                            where=where,
                            deferred=deferred,
                            written=written[target],
                        )
                        edges.append(edge)
    return edges


def strongly_connected(nodes: Sequence[str], edges: Sequence[Edge]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components of more than one module (the cycles)."""
    graph: dict[str, list[str]] = {n: [] for n in nodes}
    for e in edges:
        graph[e.source].append(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            successors = graph[node]
            if i < len(successors):
                work.append((node, i + 1))
                nxt = successors[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return sorted(components)


def cycle_in(component: Sequence[str], edges: Sequence[Edge]) -> list[Edge]:
    """One cycle through the component's first module, as the chain of imports."""
    members = set(component)
    by_source: dict[str, list[Edge]] = {}
    for e in edges:
        if e.source in members and e.target in members:
            by_source.setdefault(e.source, []).append(e)
    start = component[0]
    # breadth-first from `start` back to `start`: the shortest chain, easiest to read
    paths: dict[str, list[Edge]] = {start: []}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for e in by_source.get(node, []):
                if e.target == start:
                    return [*paths[node], e]
                if e.target not in paths:
                    paths[e.target] = [*paths[node], e]
                    following.append(e.target)
        frontier = following
    raise AssertionError(f"{component} is strongly connected but has no cycle through {start}")


def describe(chain: Sequence[Edge]) -> str:
    return "\n".join(
        f"  {e.source} → {e.target}  ({e.where}{', ' + e.deferred if e.deferred else ''})"
        for e in chain
    )


def _in_cli(module: str) -> bool:
    return module == CLI or module.startswith(CLI + ".")


def cli_back_edges(edges: Sequence[Edge]) -> list[Edge]:
    """Imports of the CLI by modules outside it, one per import statement."""
    found: dict[tuple[str, str], Edge] = {}
    for e in edges:
        if _in_cli(e.target) and not _in_cli(e.source) and e.source not in CLI_IMPORTERS_ALLOWED:
            found.setdefault((e.source, e.where), e)
    return list(found.values())


def cycles(modules: Mapping[str, Path], edges: Sequence[Edge]) -> list[str]:
    """Each cycle as its module list and one chain of imports through it."""
    return [
        f"cycle among {', '.join(c)}:\n{describe(cycle_in(c, edges))}"
        for c in strongly_connected(sorted(modules), edges)
    ]


def top_level(module: str) -> str:
    """`relforge.promote.plans.storeplan` → `promote`; the package's own __init__ → `relforge`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer_of(module: str, layers: Sequence[tuple[str, frozenset[str]]]) -> tuple[int, str] | None:
    top = top_level(module)
    for rank, (name, members) in enumerate(layers):
        if top in members:
            return rank, name
    return None


def layer_breaches(
    edges: Sequence[Edge], layers: Sequence[tuple[str, frozenset[str]]], *, foundation: str
) -> list[str]:
    """Imports that go up a layer, or across to another package of the same layer."""
    found: dict[tuple[str, str], str] = {}
    for e in edges:
        source, target = layer_of(e.source, layers), layer_of(e.target, layers)
        if source is None or target is None or top_level(e.source) == top_level(e.target):
            continue
        upward = target[0] > source[0]
        sideways = target[0] == source[0] and source[1] != foundation
        if upward or sideways:
            way = "up to" if upward else "across"
            found.setdefault(
                (e.source, e.where),
                f"  {e.source} ({source[1]}) → {e.target} ({way} {target[1]})  ({e.where})",
            )
    return sorted(found.values())


def behind_front_doors(edges: Sequence[Edge], modules: Mapping[str, Path]) -> list[Edge]:
    """Imports by the CLI that name a module inside another package (not its front door);
    `from relforge.bot import dispatch` names the front door, whatever `dispatch` is."""
    found: dict[tuple[str, str], Edge] = {}
    for e in edges:
        if not _in_cli(e.source) or _in_cli(e.written):
            continue
        parts = e.written.split(".")
        package = ".".join(parts[:2])
        if len(parts) > 2 and modules[package].name == "__init__.py":
            found.setdefault((e.source, e.where), e)
    return list(found.values())


# --- the rules, on the real tree ---------------------------------------------------------------


@pytest.fixture(scope="module")
def modules() -> dict[str, Path]:
    return module_files(SRC, ROOT_PACKAGE)


@pytest.fixture(scope="module")
def edges(modules: dict[str, Path]) -> list[Edge]:
    return import_edges(SRC, modules)


def test_no_module_outside_the_cli_imports_the_cli(edges: list[Edge]) -> None:
    # imports in function bodies count: a stage that prints through the CLI is still tied to it
    offenders = cli_back_edges(edges)
    assert not offenders, "modules outside relforge.cli import it:\n" + describe(offenders)


def test_no_import_cycles_at_load_time(modules: dict[str, Path], edges: list[Edge]) -> None:
    found = cycles(modules, [e for e in edges if not e.deferred])
    assert not found, "\n".join(found)


def test_no_import_cycles_through_imports_in_functions_or_for_type_checking(
    modules: dict[str, Path], edges: list[Edge]
) -> None:
    # an import moved into a function (or under TYPE_CHECKING) hides a cycle from the
    # interpreter, not from a reader: the two modules still cannot be understood, tested or
    # moved apart
    found = cycles(modules, edges)
    assert not found, "\n".join(found)


def test_every_package_has_a_layer(modules: dict[str, Path]) -> None:
    placed = set().union(*(members for _, members in LAYERS))
    unplaced = sorted({top_level(m) for m in modules} - placed)
    assert not unplaced, f"packages in no layer of LAYERS (tests/unit/test_layers.py): {unplaced}"
    gone = sorted(placed - {top_level(m) for m in modules})
    assert not gone, f"LAYERS names packages that no longer exist: {gone}"


def test_imports_go_down_the_layers(edges: list[Edge]) -> None:
    breaches = layer_breaches(edges, LAYERS, foundation=FOUNDATION)
    assert not breaches, "imports against the layers (LAYERS, lowest first):\n" + "\n".join(
        breaches
    )


def test_the_stores_serve_deps_site_and_variants_without_promote(edges: list[Edge]) -> None:
    # the object stores used to live in promote, and these three reached into it for them
    into_promote = sorted(
        f"{e.source} → {e.target} ({e.where})"
        for e in edges
        if top_level(e.source) in {"deps", "site", "variants"} and top_level(e.target) == "promote"
    )
    assert not into_promote
    for reader in ("deps", "site"):
        assert {top_level(e.target) for e in edges if top_level(e.source) == reader} >= {"stores"}
    # and promote reads the dependency records deps writes, not the other way round
    assert any(
        e.source.startswith("relforge.promote.") and e.target == "relforge.deps.mirrorrecord"
        for e in edges
    )


ARCHITECTURE = SRC.parent / "docs" / "architecture.md"
PICTURE_HEADING = "**Who reads whom.**"


def picture_layers(text: str) -> list[list[str]]:
    """The layers the picture in docs/architecture.md draws, highest first: the first fenced
    block after PICTURE_HEADING, one layer per line (its names, comma-separated, before a gap
    of two spaces; a line indented by four continues the layer's names, one indented deeper
    only its description)."""
    after = text.split(PICTURE_HEADING, 1)[1]
    block = after.split("```", 2)[1].split("\n")[1:]
    drawn: list[list[str]] = []
    for line in block:
        indent = len(line) - len(line.lstrip())
        if not line.strip() or line.lstrip().startswith("▲") or indent > 4:
            continue
        names = [n.strip() for n in line.strip().split("  ", 1)[0].split(",") if n.strip()]
        if indent == 4 and drawn:
            drawn[-1] += names
        else:
            drawn.append(names)
    return drawn


def test_the_architecture_picture_draws_the_checked_layers() -> None:
    drawn = picture_layers(ARCHITECTURE.read_text(encoding="utf-8"))
    want = [
        [FOUNDATION] if name == FOUNDATION else sorted(packages)
        for name, packages in reversed(LAYERS)
    ]
    assert [sorted(layer) for layer in drawn] == want, (
        f"the picture under {PICTURE_HEADING!r} in {ARCHITECTURE.name} (highest layer first) "
        f"no longer matches LAYERS:\n  drawn: {drawn}\n  LAYERS: {want}"
    )


def test_the_picture_reader_sees_a_missing_package() -> None:
    text = (
        f"{PICTURE_HEADING}\n\n```\n  cli  the CLI\n  a, b,    x\n    c\n  foundation  f,\n"
        "                g\n```\n"
    )
    assert picture_layers(text) == [["cli"], ["a", "b", "c"], ["foundation"]]
    assert picture_layers(text.replace("    c\n", "")) == [["cli"], ["a", "b"], ["foundation"]]


def test_the_cli_imports_front_doors_only(modules: dict[str, Path], edges: list[Edge]) -> None:
    offenders = behind_front_doors(edges, modules)
    assert not offenders, "the CLI imports behind a package's front door:\n" + describe(offenders)


def test_the_scan_sees_the_whole_package(modules: dict[str, Path], edges: list[Edge]) -> None:
    # a scan that found nothing would pass every rule; make sure it reads what it should
    assert {"relforge.cli", "relforge.errors", "relforge.stores.objectstore"} <= set(modules)
    assert any(e.source == "relforge.__main__" and e.target == CLI for e in edges)
    assert len(modules) > 150 and len(edges) > 400


BUILDERS = "relforge.builders"
# The rooms of relforge.builders, lowest first: a room imports only rooms below it, and only by
# their front doors (`relforge.builders.inputs`, never `relforge.builders.inputs.buildreqs`); the
# package's own modules (plan, executor, cache, progress, manifest) sit above every room.  Nothing
# outside relforge.builders reaches into a room: the package's front door is its way in.
BUILDER_ROOMS = ("control", "inputs", "artifacts", "images", "backends")
ROOM_LIMIT = 30  # modules per room, and the package's own modules besides its rooms


def room_of(module: str) -> str | None:
    """`relforge.builders.images.pull` → "images"; a module of the package itself → ""."""
    if module != BUILDERS and not module.startswith(BUILDERS + "."):
        return None
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[2] in BUILDER_ROOMS else ""


def room_breaches(edges: Sequence[Edge]) -> list[str]:
    """Imports into a room from outside it that skip its front door, go up the rooms, or come
    from outside relforge.builders."""
    rank = {room: n for n, room in enumerate(BUILDER_ROOMS)}
    rank[""] = len(BUILDER_ROOMS)
    found: dict[tuple[str, str], str] = {}
    for e in edges:
        target_room = room_of(e.target)
        if not target_room:
            continue
        source_room = room_of(e.source)
        if source_room == target_room:
            continue
        door = f"{BUILDERS}.{target_room}"
        why = ""
        if source_room is None:
            why = f"reaches into relforge.builders' {target_room} room (import {BUILDERS})"
        elif e.written != door and e.target != door:
            why = f"skips the front door {door}"
        elif rank[target_room] > rank[source_room]:
            why = f"goes up the rooms ({' < '.join(BUILDER_ROOMS)})"
        if why:
            found.setdefault((e.source, e.where), f"  {e.source} → {e.target}: {why}  ({e.where})")
    return sorted(found.values())


def test_builders_rooms_are_entered_by_their_front_doors(edges: list[Edge]) -> None:
    breaches = room_breaches(edges)
    assert not breaches, "imports against relforge.builders' rooms:\n" + "\n".join(breaches)


def test_builders_rooms_are_the_ones_named_and_none_is_crowded(modules: dict[str, Path]) -> None:
    inside: dict[str, int] = {}
    for module in modules:
        room = room_of(module)
        if room is not None:
            inside[room] = inside.get(room, 0) + 1
    folders = {p.name for p in (SRC / "relforge" / "builders").iterdir() if p.is_dir()}
    assert folders - {"__pycache__"} == set(BUILDER_ROOMS)
    crowded = {room or "(the package itself)": n for room, n in inside.items() if n > ROOM_LIMIT}
    assert not crowded, f"more than {ROOM_LIMIT} modules: {crowded}"


def test_the_room_rule_sees_a_skipped_front_door_and_an_upward_import() -> None:
    def edge(source: str, target: str, written: str) -> Edge:
        return Edge(source=source, target=target, where="x.py:1", deferred="", written=written)

    ok = edge(
        "relforge.builders.backends.host", "relforge.builders.inputs", "relforge.builders.inputs"
    )
    skip = edge(
        "relforge.builders.backends.host",
        "relforge.builders.inputs.buildreqs",
        "relforge.builders.inputs.buildreqs",
    )
    up = edge(
        "relforge.builders.inputs.buildenv",
        "relforge.builders.images",
        "relforge.builders.images",
    )
    outside = edge(
        "relforge.cli.build",
        "relforge.builders.images",
        "relforge.builders.images",
    )
    assert room_breaches([ok]) == []
    assert [len(room_breaches([e])) for e in (skip, up, outside)] == [1, 1, 1]
    assert "front door" in room_breaches([skip])[0]
    assert "up the rooms" in room_breaches([up])[0]
    assert "reaches into" in room_breaches([outside])[0]


# --- the checker itself, on small trees written here --------------------------------------------


def _tree(tmp_path: Path, files: Mapping[str, str]) -> dict[str, Path]:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return module_files(tmp_path, "pkg")


def _components(tmp_path: Path, files: Mapping[str, str], *, deferred: bool) -> list[list[str]]:
    modules = _tree(tmp_path, files)
    edges = [e for e in import_edges(tmp_path, modules) if deferred or not e.deferred]
    return strongly_connected(sorted(modules), edges)


def test_a_cycle_is_found_and_shown_as_a_chain(tmp_path: Path) -> None:
    modules = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import x\n",
            "pkg/b.py": "import os\nfrom . import c\n",
            "pkg/c.py": "def f() -> None:\n    from .a import y\n",
            "pkg/d.py": "from pkg import a\n",
        },
    )
    edges = import_edges(tmp_path, modules)
    assert strongly_connected(sorted(modules), edges) == [["pkg.a", "pkg.b", "pkg.c"]]
    assert cycles(modules, edges) == [
        "cycle among pkg.a, pkg.b, pkg.c:\n"
        "  pkg.a → pkg.b  (pkg/a.py:1)\n"
        "  pkg.b → pkg.c  (pkg/b.py:2)\n"
        "  pkg.c → pkg.a  (pkg/c.py:2, in a function)"
    ]


def test_imports_in_functions_and_for_type_checking_are_deferred_edges(
    tmp_path: Path,
) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/a.py": "import pkg.b\nimport pkg.c\n",
        "pkg/b.py": "def f() -> None:\n    if True:\n        from pkg.a import g\n",
        "pkg/c.py": "import typing\nif typing.TYPE_CHECKING:\n    from pkg.a import A\n",
    }
    assert _components(tmp_path, files, deferred=False) == []
    assert _components(tmp_path, files, deferred=True) == [["pkg.a", "pkg.b", "pkg.c"]]
    modules = _tree(tmp_path, files)
    why = {(e.source, e.target): e.deferred for e in import_edges(tmp_path, modules)}
    assert why[("pkg.b", "pkg.a")] == "in a function"
    assert why[("pkg.c", "pkg.a")] == "for type checking"
    assert why[("pkg.a", "pkg.c")] == ""


def test_a_package_init_importing_its_users_is_a_cycle(tmp_path: Path) -> None:
    # importing pkg.sub.x runs pkg/sub/__init__.py, which imports pkg.other, which imports pkg.sub.x
    files = {
        "pkg/__init__.py": "",
        "pkg/sub/__init__.py": "from pkg.other import run\n",
        "pkg/sub/x.py": "",
        "pkg/other.py": "from pkg.sub.x import thing\n",
    }
    assert _components(tmp_path, files, deferred=False) == [["pkg.other", "pkg.sub"]]


def test_a_package_init_importing_its_own_submodules_is_no_cycle(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/sub/__init__.py": "from pkg.sub.x import run\n",
        "pkg/sub/x.py": "from pkg.sub.y import helper\n",
        "pkg/sub/y.py": "",
    }
    assert _components(tmp_path, files, deferred=True) == []


def test_imports_in_class_bodies_try_and_match_blocks_count(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/a.py": "try:\n    import pkg.b\nexcept ImportError:\n    pass\n",
        "pkg/b.py": "class K:\n    from pkg import a\n",
        "pkg/c.py": "match 1:\n    case 1:\n        import pkg.d\n",
        "pkg/d.py": "try:\n    pass\nexcept ImportError:\n    from pkg import c\n",
    }
    assert _components(tmp_path, files, deferred=False) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.d"]]


def test_an_upward_or_sideways_import_is_a_breach(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "relforge/__init__.py": "",
            "relforge/errors.py": "",
            "relforge/git.py": "from relforge import errors\n",
            "relforge/low/__init__.py": "def f() -> None:\n    from relforge.high import x\n",
            "relforge/high/__init__.py": "from relforge.errors import E\n",
            "relforge/peer/__init__.py": "from relforge.high import y\n",
        },
    )
    modules = module_files(tmp_path, "relforge")
    layers = (
        ("base", frozenset({"relforge", "errors", "git"})),
        ("low", frozenset({"low"})),
        ("high", frozenset({"high", "peer"})),
    )
    assert layer_breaches(import_edges(tmp_path, modules), layers, foundation="base") == [
        "  relforge.low (low) → relforge.high (up to high)  (relforge/low/__init__.py:2)",
        "  relforge.peer (high) → relforge.high (across high)  (relforge/peer/__init__.py:1)",
    ]


def test_a_cli_import_behind_a_front_door_is_named(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "relforge/__init__.py": "",
            "relforge/errors.py": "",
            "relforge/cli/__init__.py": "from relforge.cli import sub\nfrom relforge import errors",
            "relforge/cli/sub.py": "from relforge.stage import deep\nimport relforge.stage.deep",
            "relforge/stage/__init__.py": "from relforge.stage.deep import deep\n",
            "relforge/stage/deep.py": "",
        },
    )
    modules = module_files(tmp_path, "relforge")
    behind = behind_front_doors(import_edges(tmp_path, modules), modules)
    assert [(e.written, e.where) for e in behind] == [
        ("relforge.stage.deep", "relforge/cli/sub.py:2")
    ]


def test_a_back_edge_into_the_cli_is_named(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "relforge/__init__.py": "",
            "relforge/__main__.py": "from relforge.cli import main\n",
            "relforge/cli/__init__.py": "from relforge.cli.output import x\n",
            "relforge/cli/output.py": "from relforge.stage import report\n",
            "relforge/stage/__init__.py": "",
            "relforge/stage/report.py": "def f() -> None:\n    from relforge.cli.output import x\n",
        },
    )
    modules = module_files(tmp_path, "relforge")
    back = cli_back_edges(import_edges(tmp_path, modules))
    assert [(e.source, e.where, e.deferred) for e in back] == [
        ("relforge.stage.report", "relforge/stage/report.py:2", "in a function")
    ]
