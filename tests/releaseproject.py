"""A small project on real git for the release tests: version.txt, a matrix, workflows; plus a
byte-level snapshot of a clone and its bare origin to prove dry runs change nothing."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from relforge.workflows.render import RenderRequest, render_workflows
from tests.conftest import EXAMPLE
from tests.gitrepos import Repos, git, make_repos

WORKFLOW = """\
name: build
on: [push]
jobs:
  build:
    uses: acme/hello/.github/workflows/_build.yml@main
    with:
      channel: nightly
  lint:
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683  # v4.2.2
      - uses: acme/hello/.github/actions/setup@main
      - uses: "acme/infra/.github/actions/cache@main"
      - uses: other/thing@main
      - uses: ./.github/actions/local
      - run: echo main
"""

# The example matrix as project acme/hello, so its workflows can be rendered with `--ref main`.
MATRIX = EXAMPLE.read_text(encoding="utf-8").replace(
    "  name: hello-native\n", "  name: hello-native\n  repository: acme/hello\n", 1
)
GENERATED_WHEELS = ".github/workflows/relforge-linux-wheel.yml"


def generated_workflows(matrix_text: str = MATRIX, ref: str = "main") -> dict[str, str]:
    """What `relforge workflows generate matrix/example.yaml --release 1.0 --out
    .github/workflows --ref REF --no-upload` writes for this project (its store is a folder)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "matrix").mkdir()
        (root / "matrix" / "example.yaml").write_text(matrix_text, encoding="utf-8")
        rendered = render_workflows(
            RenderRequest(
                matrix_file=root / "matrix" / "example.yaml",
                release="1.0",
                out_dir=root / ".github" / "workflows",
                ref=ref,
                root=root,
                upload=False,
            )
        )
    return {f".github/workflows/{f.name}": f.text for f in rendered.files}


def project_files(version: str = "2.9.0a0") -> dict[str, str]:
    return {
        "version.txt": f"{version}\n",
        "matrix/example.yaml": MATRIX,
        ".github/workflows/build.yml": WORKFLOW,
        **generated_workflows(),
        "src/hello.c": "int main(void) { return 0; }\n",
    }


def make_project(root: Path, version: str = "2.9.0a0") -> Repos:
    """A bare origin whose main holds the project, and a clone on main."""
    return make_repos(root, project_files(version))


def remote_ref(repos: Repos, ref: str) -> str | None:
    out = git(repos.origin, "for-each-ref", "--format=%(objectname)", ref)
    return out or None


def remote_file(repos: Repos, rev: str, path: str) -> str:
    return git(repos.origin, "show", f"{rev}:{path}") + "\n"


def _tree_digest(root: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith(skip):
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def snapshot(repos: Repos) -> dict[str, object]:
    """Everything a dry run must leave alone: the whole bare origin, byte for byte; the clone's
    refs, HEAD, index, config, FETCH_HEAD and work tree (only new objects may appear)."""
    dot_git = repos.clone / ".git"
    return {
        "origin": _tree_digest(repos.origin),
        "refs": git(repos.clone, "for-each-ref", "--format=%(refname) %(objectname)"),
        "meta": {
            name: hashlib.sha256((dot_git / name).read_bytes()).hexdigest()
            for name in ("HEAD", "index", "config", "FETCH_HEAD", "packed-refs")
            if (dot_git / name).exists()
        },
        "ref_files": _tree_digest(dot_git / "refs"),
        "work_tree": _tree_digest(repos.clone, skip=(".git/",)),
        "status": git(repos.clone, "--no-optional-locks", "status", "--porcelain", "--ignored"),
    }
