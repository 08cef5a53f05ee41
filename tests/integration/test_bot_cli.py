"""`relforge cherry-pick` and `relforge bot handle|workflow` on real repositories."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from relforge.git import token_env
from tests.botworld import FIXES, REPO, World, comment_event, pull_event
from tests.conftest import EXAMPLE, Result
from tests.fakegithub import FakeGitHub
from tests.gitrepos import git

Run = Callable[..., Result]


def pick(world: World, run: Run, pr: int, *args: str) -> Result:
    return run("cherry-pick", str(pr), "--repo", str(world.bot_clone), "--github-repo", REPO, *args)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--onto", "release/2.9; rm -rf /", "-c", "docs"], "is not a release branch"),
        (["--onto", "main", "-c", "docs"], "is not a release branch"),
        (["--onto", "release/2.9", "-c", "regression"], "-c regression needs --fixes"),
        (
            ["--onto", "release/2.9", "-c", "docs", "--fixes", "http://x.org/a/b/issues/1"],
            "not a link",
        ),
        (["--onto", "release/2.9", "--onto", "release/2.9", "-c", "docs"], "given twice"),
        (["--onto", "release/2.9", "-c", "hotfix"], "'hotfix' is not one of"),
        (["--onto", "release/2.9"], "Missing option '-c'"),
    ],
)
def test_arguments_are_checked_before_git_or_github(
    fake_github: FakeGitHub, tmp_path: Path, run: Run, args: list[str], message: str
) -> None:
    # --repo is not even a git repository: a bad argument must be found first.
    result = run("cherry-pick", "12", "--repo", str(tmp_path), *args)
    assert result.code == 2, result.err
    assert message in result.err and "Traceback" not in result.err
    assert fake_github.requests == []


def test_dry_run_then_execute_then_rerun(world: World, run: Run) -> None:
    pr, _ = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    heads, local = world.remote_heads(), git(world.bot_clone, "for-each-ref")
    args = ["--onto", "release/2.9", "--onto", "release/2.8", "-c", "critical", "--fixes", FIXES]

    dry = pick(world, run, pr, *args)
    assert dry.code == 0, dry.err
    assert f"cherry-pick #{pr} 'Fix'" in dry.out
    assert f"- release/2.9: would push `cherry-pick/{pr}-onto-release-2.9`" in dry.out
    assert "dry run: nothing was pushed or posted; rerun with --execute" in dry.out
    assert world.fake.writes() == [] and world.remote_heads() == heads
    assert git(world.bot_clone, "for-each-ref") == local  # no local branch either

    done = pick(world, run, pr, *args, "--execute")
    assert done.code == 0, done.err
    assert done.out.count("opened pull request") == 2
    assert len(world.new_pulls()) == 2
    assert len(world.fake.comments_on(REPO, world.trackers["2.9"])) == 1
    [note] = world.fake.comments_on(REPO, pr)
    assert note.startswith(f"cherry-pick of #{pr} (category critical, fixes {FIXES}; landed as")

    heads, writes = world.remote_heads(), len(world.fake.writes())
    again = pick(world, run, pr, *args, "--execute")
    assert again.code == 0, again.err
    assert again.out.count("reused pull request") == 2
    assert world.remote_heads() == heads and len(world.fake.writes()) == writes


def test_exit_codes_for_conflict_already_and_reverted(world: World, run: Run) -> None:
    clone = world.repos.clone
    git(clone, "checkout", "-q", "release/2.9")
    world.repos.commit("diverge", {"src/lib.py": "def answer():\n    return 40\n"})
    git(clone, "push", "-q", "origin", "release/2.9")
    git(clone, "checkout", "-q", "main")
    pr, fix = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})

    conflict = pick(world, run, pr, "--onto", "release/2.9", "-c", "docs", "--execute")
    assert conflict.code == 4
    assert "validation failed: release/2.9 conflicts in src/lib.py" in conflict.err
    assert world.new_pulls() == []

    world.on_release("release/2.8", "cherry-pick", "-x", fix)
    already = pick(world, run, pr, "--onto", "release/2.8", "-c", "docs")
    assert already.code == 3 and "already on release/2.8" in already.out

    git(clone, "revert", "--no-edit", fix)
    git(clone, "push", "-q", "origin", "main")
    reverted = pick(world, run, pr, "--onto", "release/2.8", "-c", "docs")
    assert reverted.code == 5 and "was reverted on main by" in reverted.err


def test_github_repo_comes_from_the_remote_url(world: World, run: Run) -> None:
    pr, _ = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    args = ["cherry-pick", str(pr), "--repo", str(world.bot_clone), "--onto", "release/2.9"]
    unknown = run(*args, "-c", "docs")
    assert unknown.code == 2 and "--github-repo" in unknown.err
    # A GitHub URL that git rewrites to the local origin (as a mirror would).
    url = "https://github.com/acme/widget.git"
    git(world.bot_clone, "remote", "set-url", "origin", url)
    git(world.bot_clone, "config", f"url.{world.repos.origin}.insteadOf", url)
    result = run(*args, "-c", "docs")
    assert result.code == 0, result.err
    assert f"would push `cherry-pick/{pr}-onto-release-2.9`" in result.out


def test_bot_handle_dry_run_and_execute(
    world: World, run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pr, _ = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    event = tmp_path / "event.json"
    event.write_text(
        json.dumps(comment_event("@relforge-bot cherry-pick --onto release/2.9 -c docs", number=pr))
    )
    summary = tmp_path / "summary.md"
    args = ["bot", "handle", str(event), "--repo", str(world.bot_clone)]

    dry = run(*args)
    assert dry.code == 0, dry.err
    assert dry.out.startswith("handled: cherry-pick\ndry run, would post on #")
    assert world.fake.writes() == []

    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    done = run(*args, "--execute")
    assert done.code == 0, done.err
    assert f"posted on #{pr}" in done.out and len(world.new_pulls()) == 1
    assert "opened pull request" in summary.read_text()

    other = run(*args, "--github-repo", "someone/else")
    assert other.code == 2 and "not 'someone/else'" in other.err
    event.write_text("[1, 2]")
    assert run(*args).code == 2
    event.write_text(json.dumps({"action": "created"}))
    bad = run(*args)
    assert bad.code == 2 and "not an issue_comment event payload" in bad.err


def test_generated_bot_workflow_runs_the_handler_with_execute(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "wf"
    result = run(
        "workflows", "generate", str(EXAMPLE), "--release", "1.0", "--out", str(out), "--no-upload"
    )
    assert result.code == 0, result.err
    text = (out / "relforge-bot.yml").read_text()
    data = yaml.safe_load(text)
    assert data[True] == {  # YAML 1.1 reads `on` as true
        "issue_comment": {"types": ["created"]},
        "pull_request_target": {"types": ["labeled", "closed"]},
    }
    assert data["permissions"] == {"contents": "read"}
    job = data["jobs"]["handle"]
    assert job["permissions"] == {"contents": "write", "pull-requests": "write", "issues": "write"}
    steps = [step.get("run", "").strip() for step in job["steps"]]
    # relforge by its path: nothing goes to $GITHUB_PATH in a job an outsider's comment starts
    assert '"$RUNNER_TEMP/relforge-bin/relforge" bot handle "$GITHUB_EVENT_PATH" --execute' in steps
    assert "${{" not in " ".join(steps)  # no expression is expanded into a shell line
    [checkout] = [s for s in job["steps"] if "actions/checkout" in s.get("uses", "")]
    assert checkout["with"]["ref"] == "${{ github.event.repository.default_branch }}"
    assert checkout["with"]["persist-credentials"] is False
    assert "head" not in json.dumps(data)  # no PR head ref or sha anywhere in the workflow
    assert "github.event.pull_request.merged" in job["if"]
    reason = text.split("zizmor: ignore[dangerous-triggers]")[2].split("\n")[0]
    assert "never the PR head" in reason


def test_bot_handle_answers_a_pull_request_label_event(
    world: World, run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pr, _ = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    world.fake.add_label(REPO, pr, "cherry-pick/release-2.9", actor="alice")
    event = tmp_path / "event.json"
    event.write_text(json.dumps(pull_event("labeled", number=pr, label="cherry-pick/release-2.9")))
    monkeypatch.setenv("GITHUB_EVENT_NAME", "pull_request_target")
    args = ["bot", "handle", str(event), "--repo", str(world.bot_clone)]
    dry = run(*args)
    assert dry.code == 0, dry.err
    assert "label `cherry-pick/release-2.9`" in dry.out and world.fake.writes() == []
    done = run(*args, "--execute")
    assert done.code == 0, done.err
    assert [p["base"]["ref"] for p in world.new_pulls()] == ["release/2.9"]
    other = run(*args, "--label-prefix", "backport/")
    assert other.code == 0 and other.out.startswith("ignored: label")


def test_bot_handle_exits_6_naming_the_reset_on_a_far_rate_limit(
    world: World, run: Run, tmp_path: Path
) -> None:
    pr, _ = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    event = tmp_path / "event.json"
    body = "@relforge-bot cherry-pick --onto release/2.9 -c docs"
    event.write_text(json.dumps(comment_event(body, number=pr)))
    world.fake.exhaust_rate_limit(50 * 60)
    result = run("bot", "handle", str(event), "--repo", str(world.bot_clone), "--execute")
    assert result.code == 6, result.err
    assert "resets at" in result.err and "Traceback" not in result.err


def test_bot_pushes_authenticate_with_the_token_only_through_the_environment() -> None:
    env = token_env("https://github.com/acme/widget.git", "s3cret")
    assert env is not None and env["GIT_CONFIG_KEY_0"] == "http.https://github.com/.extraheader"
    assert "s3cret" not in env["GIT_CONFIG_VALUE_0"]  # base64, as actions/checkout sends it
    assert env["GIT_CONFIG_VALUE_0"].startswith("AUTHORIZATION: basic ")
    assert token_env("/srv/git/origin.git", "s3cret") is None
    assert token_env("git@github.com:acme/widget.git", "s3cret") is None
    assert token_env("https://github.com/acme/widget.git", None) is None
