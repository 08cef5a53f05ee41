"""`relforge release cut` on real repositories: a bare origin and clones in tmp_path."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.errors import RefusedError
from relforge.git import Git
from relforge.matrix.load import load_matrix
from relforge.release.apply import apply_plan
from relforge.release.cut import CutRequest, plan_cut
from relforge.release.versions import Line
from relforge.workflows.render import RenderRequest, render_workflows
from tests.conftest import Result
from tests.gitrepos import git, make_repos
from tests.releaseproject import (
    GENERATED_WHEELS,
    MATRIX,
    WORKFLOW,
    generated_workflows,
    make_project,
    project_files,
    remote_file,
    remote_ref,
    snapshot,
)

Run = Callable[..., Result]
GH = ("--github-repo", "acme/hello")


def cut(run: Run, repos_clone: Path, *extra: str) -> Result:
    return run("release", "cut", "2.9", "--repo", str(repos_clone), *GH, *extra)


def test_dry_run_changes_nothing_then_execute_cuts_exactly_once(tmp_path: Path, run: Run) -> None:
    repos = make_project(tmp_path)
    cut_point = git(repos.clone, "rev-parse", "HEAD")
    before = snapshot(repos)

    dry = cut(run, repos.clone)
    assert dry.code == 0, dry.err
    assert "dry run" in dry.out and "pass --execute" in dry.out
    assert "+    uses: acme/hello/.github/workflows/_build.yml@release/2.9" in dry.out
    assert "+  default: test" in dry.out and "+2.10.0a0" in dry.out
    assert snapshot(repos) == before  # refs, index, work tree, config and the whole origin

    done = cut(run, repos.clone, "--execute")
    assert done.code == 0, done.err
    assert "applied: 3 ref(s) pushed" in done.out
    assert snapshot(repos) != before
    release = remote_ref(repos, "refs/heads/release/2.9")
    assert remote_ref(repos, "refs/heads/orig/release/2.9") == cut_point
    assert git(repos.origin, "rev-parse", "release/2.9^") == cut_point
    assert git(repos.origin, "log", "-1", "--format=%s", "release/2.9") == (
        "[RELEASE-ONLY CHANGES] Branch Cut for Release 2.9"
    )
    assert git(repos.origin, "rev-parse", "main^") == cut_point
    assert remote_file(repos, "main", "version.txt") == "2.10.0a0\n"
    assert remote_file(repos, "release/2.9", "version.txt") == "2.9.0a0\n"

    # (a) the project's own reusable refs follow the branch; others stay as they were
    build = remote_file(repos, "release/2.9", ".github/workflows/build.yml")
    assert "acme/hello/.github/workflows/_build.yml@release/2.9" in build
    assert "acme/hello/.github/actions/setup@release/2.9" in build
    assert '"acme/infra/.github/actions/cache@main"' in build  # same owner, other repository
    assert "other/thing@main" in build and "./.github/actions/local\n" in build
    assert "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683  # v4.2.2" in build
    assert "run: echo main" in build
    # generated workflows are re-rendered for the branch: current for `--check --ref release/2.9`
    generated = generated_workflows(
        branch_matrix_text := remote_file(repos, "release/2.9", "matrix/example.yaml"),
        ref="release/2.9",
    )
    for path, text in generated.items():
        assert remote_file(repos, "release/2.9", path) == text, path
    wheels = remote_file(repos, "release/2.9", GENERATED_WHEELS)
    assert "uses: acme/hello/.github/workflows/relforge-build.yml@release/2.9" in wheels
    assert "--ref release/2.9" in wheels and "@main" not in wheels
    assert "default: test" in branch_matrix_text
    # (b) the branch's builds target the test channel; main stays nightly
    branch_matrix = remote_file(repos, "release/2.9", "matrix/example.yaml")
    main_matrix = remote_file(repos, "main", "matrix/example.yaml")
    assert load_matrix("m.yaml", text=branch_matrix).channels.default == "test"
    assert load_matrix("m.yaml", text=main_matrix).channels.default == "nightly"
    # local clone: remote-tracking refs updated, work tree and local main untouched
    assert git(repos.clone, "rev-parse", "origin/release/2.9") == release
    assert git(repos.clone, "rev-parse", "main") == cut_point
    assert git(repos.clone, "status", "--porcelain") == ""

    after = snapshot(repos)
    again = cut(run, repos.clone, "--execute")
    assert again.code == 3, again.err
    assert "nothing to do" in again.out and "left alone" in again.out
    assert snapshot(repos) == after
    assert git(repos.origin, "rev-list", "--count", "orig/release/2.9..release/2.9") == "1"
    assert git(repos.origin, "rev-list", "--count", "main") == "2"


def test_dry_run_does_not_even_refresh_the_index(tmp_path: Path, run: Run) -> None:
    repos = make_project(tmp_path)
    version = repos.clone / "version.txt"
    stat = version.stat()
    os.utime(version, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))  # stale stat
    before = snapshot(repos)
    assert cut(run, repos.clone).code == 0
    assert snapshot(repos) == before


def test_json_plan(tmp_path: Path, run: Run) -> None:
    repos = make_project(tmp_path)
    result = cut(run, repos.clone, "--format", "json")
    assert result.code == 0, result.err
    plan = json.loads(result.out)
    assert plan["executed"] is False and plan["nothing_to_do"] is False
    pushes = {a["ref"]: a for a in plan["actions"] if a["action"] == "push"}
    assert set(pushes) == {
        "refs/heads/orig/release/2.9",
        "refs/heads/release/2.9",
        "refs/heads/main",
    }
    assert pushes["refs/heads/release/2.9"]["commit"] == "release-only"
    assert pushes["refs/heads/release/2.9"]["old"] is None
    commits = [a for a in plan["actions"] if a["action"] == "commit"]
    commit = next(a for a in commits if a["key"] == "release-only")
    assert [c["path"] for c in commit["changes"]] == [
        ".github/workflows/build.yml",
        ".github/workflows/relforge-bot.yml",
        ".github/workflows/relforge-build.yml",
        ".github/workflows/relforge-linux-archive.yml",
        ".github/workflows/relforge-linux-wheel.yml",
        "matrix/example.yaml",
    ]
    applied = cut(run, repos.clone, "--format", "json", "--execute")
    assert applied.code == 0, applied.err
    results = json.loads(applied.out)["results"]
    assert results["refs/heads/release/2.9"] == remote_ref(repos, "refs/heads/release/2.9")
    rerun = cut(run, repos.clone, "--format", "json", "--execute")
    assert rerun.code == 3 and "already done" in rerun.err
    assert json.loads(rerun.out)["nothing_to_do"] is True


def test_remote_only_release_branch_is_detected_and_left_alone(tmp_path: Path, run: Run) -> None:
    repos = make_project(tmp_path)
    cut_point = git(repos.clone, "rev-parse", "HEAD")
    other = repos.another_clone("colleague")
    git(other, "switch", "-q", "-c", "release/2.9")
    handmade = repos.commit("hand-made release change", where=other)
    git(other, "push", "-q", "origin", "release/2.9")
    git(other, "switch", "-q", "main")
    repos.commit("more on main", where=other)
    git(other, "push", "-q", "origin", "main")
    assert git(repos.clone, "branch", "-a") == "* main\n  remotes/origin/main"  # never fetched

    before = snapshot(repos)
    dry = cut(run, repos.clone)
    assert dry.code == 0, dry.err
    assert f"release/2.9 exists on origin at {handmade[:12]}; left alone" in dry.out
    assert snapshot(repos)["origin"] == before["origin"]
    assert snapshot(repos)["refs"] == before["refs"]

    assert cut(run, repos.clone, "--execute").code == 0
    assert remote_ref(repos, "refs/heads/release/2.9") == handmade
    assert remote_ref(repos, "refs/heads/orig/release/2.9") == cut_point  # the fork point
    assert remote_file(repos, "main", "version.txt") == "2.10.0a0\n"


def test_cut_from_another_source_branch(tmp_path: Path, run: Run) -> None:
    repos = make_project(tmp_path)
    viable = git(repos.clone, "rev-parse", "HEAD")
    git(repos.clone, "push", "-q", "origin", "HEAD:refs/heads/viable/strict")
    repos.commit("not yet green", {"src/new.c": "int x;\n"})
    git(repos.clone, "push", "-q", "origin", "main")
    tip = git(repos.clone, "rev-parse", "HEAD")

    assert cut(run, repos.clone, "--from", "viable/strict", "--execute").code == 0
    assert remote_ref(repos, "refs/heads/orig/release/2.9") == viable
    assert git(repos.origin, "rev-parse", "release/2.9^") == viable
    assert git(repos.origin, "rev-parse", "main^") == tip


def test_existing_test_channel_and_no_workflows(tmp_path: Path, run: Run) -> None:
    repos = make_project(tmp_path)
    git(repos.clone, "rm", "-q", "-r", ".github")
    matrix = repos.clone / "matrix" / "example.yaml"
    matrix.write_text(matrix.read_text().replace("default: nightly", "default: test"))
    repos.commit("no CI here")
    git(repos.clone, "push", "-q", "origin", "main")
    result = run("release", "cut", "2.9", "--repo", str(repos.clone), "--execute")
    assert result.code == 0, result.err
    assert "no release-only change to make" in result.out
    assert remote_ref(repos, "refs/heads/release/2.9") == remote_ref(
        repos, "refs/heads/orig/release/2.9"
    )


def test_a_project_without_a_matrix_is_cut_with_the_channel_switch_skipped(
    tmp_path: Path, run: Run
) -> None:
    """A project that only wants the release commands: version.txt and a workflow, no matrix."""
    repos = make_repos(
        tmp_path,
        {
            "version.txt": "2.9.0a0\n",
            ".github/workflows/build.yml": WORKFLOW,
            # a YAML file in matrix/'s parent is not a matrix; nor is one two levels down
            "config/matrix.yaml": "not: a relforge matrix\n",
            "matrix/sub/x.yaml": "neither: this\n",
        },
    )
    before = snapshot(repos)
    dry = cut(run, repos.clone)
    assert dry.code == 0, dry.err
    assert "channel switch skipped: origin/main has no relforge matrix" in dry.out
    assert "+    uses: acme/hello/.github/workflows/_build.yml@release/2.9" in dry.out
    assert "+2.10.0a0" in dry.out and "default: test" not in dry.out
    assert snapshot(repos) == before

    done = cut(run, repos.clone, "--execute")
    assert done.code == 0, done.err
    assert "applied: 3 ref(s) pushed" in done.out
    build = remote_file(repos, "release/2.9", ".github/workflows/build.yml")
    assert "acme/hello/.github/workflows/_build.yml@release/2.9" in build
    changed = git(repos.origin, "diff", "--name-only", "orig/release/2.9", "release/2.9")
    assert changed == ".github/workflows/build.yml"
    message = git(repos.origin, "log", "-1", "--format=%B", "release/2.9")
    assert "test channel" not in message
    assert remote_file(repos, "main", "version.txt") == "2.10.0a0\n"
    assert cut(run, repos.clone, "--execute").code == 3

    # with neither a matrix nor a workflow to pin, the branch starts at the cut point
    (tmp_path / "bare").mkdir()
    bare = make_repos(tmp_path / "bare", {"version.txt": "2.9.0a0\n"})
    only = cut(run, bare.clone, "--execute")
    assert only.code == 0, only.err
    assert "channel switch skipped" in only.out and "no release-only change" in only.out
    assert remote_ref(bare, "refs/heads/release/2.9") == remote_ref(
        bare, "refs/heads/orig/release/2.9"
    )


def test_a_matrix_elsewhere_is_found_through_the_generated_workflows(
    tmp_path: Path, run: Run
) -> None:
    """Not matrix.yaml nor matrix/*.yaml, but the generated workflows name it: it is switched."""
    root = tmp_path / "render"
    (root / "ci").mkdir(parents=True)
    (root / "ci" / "m.yaml").write_text(MATRIX)
    rendered = render_workflows(
        RenderRequest(
            matrix_file=root / "ci" / "m.yaml",
            release="1.0",
            out_dir=root / ".github" / "workflows",
            root=root,
            upload=False,
        )
    )
    files = {f".github/workflows/{f.name}": f.text for f in rendered.files}
    repos = make_repos(tmp_path, {"version.txt": "2.9.0a0\n", "ci/m.yaml": MATRIX, **files})
    dry = cut(run, repos.clone)
    assert dry.code == 0, dry.err
    assert "ci/m.yaml" in dry.out and "+  default: test" in dry.out
    assert "channel switch skipped" not in dry.out


def test_two_matrix_files_need_matrix(tmp_path: Path, run: Run) -> None:
    files = project_files()
    repos = make_repos(tmp_path, {**files, "matrix/other.yaml": files["matrix/example.yaml"]})
    two = cut(run, repos.clone)
    assert two.code == 2 and "has 2 matrix files" in two.err and "--matrix" in two.err
    named = cut(run, repos.clone, "--matrix", "matrix/other.yaml")
    assert named.code == 0, named.err
    assert "matrix/other.yaml" in named.out and "+  default: test" in named.out


def test_refusals_and_config_errors(tmp_path: Path, run: Run) -> None:
    repos = make_project(tmp_path, version="2.8.0a0")
    clone = str(repos.clone)

    mismatch = run("release", "cut", "2.9", "--repo", clone, *GH)
    assert mismatch.code == 5
    assert "version.txt at origin/main" in mismatch.err and "says 2.8.0a0" in mismatch.err

    missing = run("release", "cut", "2.8", "--repo", clone, "--remote", "upstream", *GH)
    assert missing.code == 2 and "no git remote named 'upstream'" in missing.err

    no_owner = run("release", "cut", "2.8", "--repo", clone)
    assert no_owner.code == 2 and "--github-repo" in no_owner.err
    assert ".github/workflows/build.yml:5:" in no_owner.err

    bad = run("release", "cut", "2.8.1", "--repo", clone, *GH)
    assert bad.code == 2 and "not a plain version like 2.9" in bad.err

    no_source = run("release", "cut", "2.8", "--repo", clone, "--from", "nope", *GH)
    assert no_source.code == 2 and "no branch or tag 'nope'" in no_source.err

    two = run("release", "cut", "2.8", "--repo", clone, "--matrix", "nope.yaml", *GH)
    assert two.code == 2 and "has no file nope.yaml" in two.err

    (repos.clone / "version.txt").write_text("dirty\n")
    dirty = run("release", "cut", "2.8", "--repo", clone, *GH)
    assert dirty.code == 5 and "uncommitted changes" in dirty.err
    git(repos.clone, "checkout", "-q", "--", "version.txt")

    git(repos.clone, "checkout", "-q", "--detach")
    detached = run("release", "cut", "2.8", "--repo", clone, *GH)
    assert detached.code == 2 and "detached HEAD" in detached.err
    assert "Traceback" not in detached.err + dirty.err + mismatch.err


def test_a_remote_that_moved_after_planning_is_refused_atomically(tmp_path: Path) -> None:
    repos = make_project(tmp_path)
    g = Git(repos.clone)
    plan = plan_cut(g, CutRequest(line=Line(2, 9), github_repo="acme/hello"))
    other = repos.another_clone("racer")
    repos.commit("raced", where=other)
    git(other, "push", "-q", "origin", "main")
    origin_before = snapshot(repos)["origin"]
    with pytest.raises(RefusedError, match="rejected") as info:
        apply_plan(g, plan)
    assert info.value.exit_code == 5
    assert snapshot(repos)["origin"] == origin_before  # atomic: no branch was created
    # planning again on the new remote state works
    assert apply_plan(g, plan_cut(g, CutRequest(line=Line(2, 9), github_repo="acme/hello")))


def test_a_remote_that_moves_during_the_push_is_refused_with_the_reason(tmp_path: Path) -> None:
    repos = make_project(tmp_path)
    g = Git(repos.clone)
    plan = plan_cut(g, CutRequest(line=Line(2, 9), github_repo="acme/hello"))
    racer = repos.another_clone("racer")
    # git checks the leases, then runs pre-push, then sends the update: the racer's push lands
    # in between, so it is the remote that rejects the update ("[remote rejected]").
    hook = repos.clone / ".git" / "hooks" / "pre-push"
    hook.write_text(
        "#!/bin/sh\n"
        "unset GIT_DIR GIT_INDEX_FILE GIT_WORK_TREE\n"
        f"cd '{racer}' && echo raced > raced.txt && git add raced.txt && "
        "git -c user.name=R -c user.email=r@example.org commit -qm raced && "
        "git push -q origin main\n"
    )
    hook.chmod(0o755)
    with pytest.raises(RefusedError) as info:
        apply_plan(g, plan)
    assert info.value.exit_code == 5
    assert "remote rejected" in info.value.message and "refs/heads/main" in info.value.message
    heads = git(repos.origin, "for-each-ref", "--format=%(refname)", "refs/heads")
    assert heads.split() == ["refs/heads/main"]  # atomic: no release branch was created


def test_a_missing_version_file_says_what_to_write(tmp_path: Path, run: Run) -> None:
    files = project_files()
    del files["version.txt"]
    repos = make_repos(tmp_path, files)
    result = cut(run, repos.clone)
    assert result.code == 2, result.out + result.err
    assert "origin/main has no file version.txt: relforge reads the release's X.Y.Z" in result.err
    assert "hint: commit one line like 2.9.0a0 to version.txt on origin/main" in result.err
    assert "--version-file PATH" in result.err and "Traceback" not in result.err


def test_the_next_step_tags_the_version_the_file_says(tmp_path: Path, run: Run) -> None:
    """A 0.0.1a0 file is released as 0.0.1: `release tag 0.0.0 --rc` would be refused."""
    repos = make_repos(tmp_path, project_files("0.0.1a0"))
    result = run("release", "cut", "0.0", "--repo", str(repos.clone), *GH, "--execute")
    assert result.code == 0, result.err
    assert "relforge release tag 0.0.1 --rc --execute" in result.out
    assert "tag 0.0.0" not in result.out
    git(repos.clone, "fetch", "-q", "origin")
    rerun = run("release", "cut", "0.0", "--repo", str(repos.clone), *GH)
    assert rerun.code == 3 and "relforge release tag 0.0.1 --rc" in rerun.err  # branch exists
    tagged = run("release", "tag", "0.0.1", "--rc", "--repo", str(repos.clone), "--execute")
    assert tagged.code == 0, tagged.out + tagged.err
    assert remote_ref(repos, "refs/tags/v0.0.1-rc1") is not None


# -- the cut is made from the remote's commit: local commits it would leave out are refused ---


def _refused_and_nothing_pushed(run: Run, repos_clone: Path, before: object, *extra: str) -> str:
    """Dry run, JSON dry run and --execute all refuse (exit 5); returns the refusal."""
    errs = []
    for more in ((), ("--format", "json"), ("--execute",)):
        done = cut(run, repos_clone, *extra, *more)
        assert done.code == 5, done.out + done.err
        assert done.out == "" and "Traceback" not in done.err
        errs.append(done.err)
    assert errs[0] == errs[1] == errs[2]  # the dry run's outcome is the refusal itself
    return errs[0]


def test_unpushed_commits_with_the_matrix_are_refused_not_cut_from_origin(
    tmp_path: Path, run: Run
) -> None:
    """The field case: origin has version.txt only; the matrix and CI are two local commits."""
    repos = make_repos(tmp_path, {"version.txt": "2.9.0a0\n"})
    files = project_files()
    repos.commit("the matrix", {"matrix/example.yaml": files.pop("matrix/example.yaml")})
    repos.commit("the CI", files)
    before = snapshot(repos)
    err = _refused_and_nothing_pushed(run, repos.clone, before)
    assert "refused: --repo: main is 2 commits ahead of origin/main;" in err
    assert "relforge releases origin/main" in err and "which lacks them" in err
    assert "hint: git push origin main first" in err
    assert "channel switch skipped" not in err
    assert snapshot(repos) == before  # nothing pushed, fetched or tagged
    assert remote_ref(repos, "refs/heads/release/2.9") is None

    git(repos.clone, "push", "-q", "origin", "main")  # pushed: now the cut has its matrix
    done = cut(run, repos.clone, "--execute")
    assert done.code == 0, done.err
    assert "channel switch skipped" not in done.out and "behind" not in done.out
    assert "default: test" in remote_file(repos, "release/2.9", "matrix/example.yaml")


def test_a_local_trunk_diverged_from_the_remote_is_refused(tmp_path: Path, run: Run) -> None:
    repos = make_project(tmp_path)
    other = repos.another_clone("colleague")
    repos.commit("theirs one", where=other)
    repos.commit("theirs two", where=other)
    git(other, "push", "-q", "origin", "main")
    repos.commit("mine")
    git(repos.clone, "fetch", "-q", "origin")  # so the counts are of what git knows
    before = snapshot(repos)
    err = _refused_and_nothing_pushed(run, repos.clone, before)
    assert "main and origin/main have diverged (1 commit only on main, 2 commits only on " in err
    assert "origin/main)" in err and "git pull --rebase origin main" in err
    assert snapshot(repos) == before


def test_a_diverged_trunk_is_refused_before_the_remote_is_fetched(tmp_path: Path, run: Run) -> None:
    """The clone never fetched the remote's new commit: relforge downloads it to count."""
    repos = make_project(tmp_path)
    other = repos.another_clone("colleague")
    repos.commit("theirs", where=other)
    git(other, "push", "-q", "origin", "main")
    repos.commit("mine")
    origin = snapshot(repos)["origin"]
    done = cut(run, repos.clone, "--execute")
    assert done.code == 5 and "(1 commit only on main, 1 commit only on origin/main)" in done.err
    assert snapshot(repos)["origin"] == origin


def test_a_local_trunk_behind_the_remote_cuts_the_remote_commit_and_says_so(
    tmp_path: Path, run: Run
) -> None:
    repos = make_project(tmp_path)
    other = repos.another_clone("colleague")
    theirs = repos.commit("theirs", where=other)
    git(other, "push", "-q", "origin", "main")
    dry = cut(run, repos.clone)
    assert dry.code == 0, dry.err
    assert "your main is 1 commit behind origin/main; relforge uses origin/main" in dry.out
    assert f"({theirs[:12]})" in dry.out
    done = cut(run, repos.clone, "--execute")
    assert done.code == 0, done.err
    assert remote_ref(repos, "refs/heads/orig/release/2.9") == theirs


def test_a_branch_in_sync_cuts_without_a_note(tmp_path: Path, run: Run) -> None:
    repos = make_project(tmp_path)
    done = cut(run, repos.clone, "--execute")
    assert done.code == 0, done.err
    assert "behind" not in done.out and "ahead" not in done.out


def test_an_uncommitted_matrix_is_refused_not_skipped(tmp_path: Path, run: Run) -> None:
    """In sync with origin, but the matrix was never committed: origin/main has none."""
    files = project_files()
    matrix = files.pop("matrix/example.yaml")
    repos = make_repos(tmp_path, files)
    (repos.clone / "matrix").mkdir()
    (repos.clone / "matrix" / "example.yaml").write_text(matrix)
    before = snapshot(repos)
    err = _refused_and_nothing_pushed(run, repos.clone, before)
    assert "origin/main (" in err and ") has no relforge matrix, but" in err
    assert "has matrix/example.yaml (not committed)" in err
    assert "hint: push the matrix first: git add matrix/example.yaml" in err
    assert "git push origin main" in err
    assert snapshot(repos) == before

    # named with --matrix: refused the same way (a path that exists nowhere stays exit 2)
    (repos.clone / "matrix" / "example.yaml").rename(repos.clone / "ci.yaml")
    named = _refused_and_nothing_pushed(run, repos.clone, before, "--matrix", "ci.yaml")
    assert "has ci.yaml (not committed)" in named and "git add ci.yaml" in named
    typo = cut(run, repos.clone, "--matrix", "nope.yaml")
    assert typo.code == 2 and "has no file nope.yaml" in typo.err


def test_generated_workflows_naming_a_matrix_the_tree_lacks_are_refused(
    tmp_path: Path, run: Run
) -> None:
    files = project_files()
    del files["matrix/example.yaml"]  # the workflows were rendered from it, never committed
    repos = make_repos(tmp_path, files)
    before = snapshot(repos)
    err = _refused_and_nothing_pushed(run, repos.clone, before)
    assert "the generated workflows of origin/main" in err
    assert "were rendered from matrix/example.yaml, which origin/main does not have" in err
    assert "hint: push matrix/example.yaml first" in err
    assert snapshot(repos) == before


def test_cutting_from_a_ref_without_the_trunks_matrix_is_refused(tmp_path: Path, run: Run) -> None:
    """viable/strict lags behind the commit that brought the matrix to main."""
    files = project_files()
    matrix = files.pop("matrix/example.yaml")
    workflows = {p: files.pop(p) for p in list(files) if p.startswith(".github/")}
    repos = make_repos(tmp_path, files)
    git(repos.clone, "push", "-q", "origin", "HEAD:refs/heads/viable/strict")
    repos.commit("the matrix", {"matrix/example.yaml": matrix, **workflows})
    git(repos.clone, "push", "-q", "origin", "main")
    before = snapshot(repos)
    err = _refused_and_nothing_pushed(run, repos.clone, before, "--from", "viable/strict")
    assert "refused: --from: origin/viable/strict (" in err
    assert "has no relforge matrix, but origin/main has matrix/example.yaml" in err
    assert snapshot(repos) == before
