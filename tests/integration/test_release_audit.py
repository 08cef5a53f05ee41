"""`relforge release audit` on real repositories, with a milestone file or GitHub (fake)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from relforge.git import Git
from relforge.manifest import ArtifactManifest, ManifestEntry, ProvenGpu
from relforge.release.apply import apply_plan
from relforge.release.cut import CutRequest, plan_cut
from relforge.release.versions import Line
from tests.conftest import EXAMPLE, Result
from tests.fakegithub import FakeGitHub
from tests.gitrepos import Repos, git
from tests.releaseproject import make_project

Run = Callable[..., Result]


@dataclass
class Planted:
    repos: Repos
    picked_trailer: str
    picked_patch_id: str
    by_reference: str
    missing: str  # a milestone fix nobody picked
    revert_of_picked: str  # a trunk revert of a picked commit, not on the branch
    revert_of_old: str  # a trunk revert of a commit from before the cut, not on the branch


def plant(tmp_path: Path, n: dict[str, int]) -> Planted:
    """A cut 2.9 line with one of each case; `n` maps a role to its issue/PR number."""
    repos = make_project(tmp_path)
    clone = repos.clone
    old = repos.commit(f"Old feature (#{n['old']})", {"old.c": "old\n"})
    git(clone, "push", "-q", "origin", "main")
    g = Git(clone)
    apply_plan(g, plan_cut(g, CutRequest(line=Line(2, 9), github_repo="acme/hello")))
    git(clone, "merge", "-q", "--ff-only", "origin/main")

    def fix(role: str, name: str, body: str = "") -> str:
        message = f"Fix {name} (#{n[role]})" + (f"\n\n{body}" if body else "")
        return repos.commit(message, {f"{name}.c": f"{name}\n"})

    trailer = fix("trailer", "loader")
    patch_id = fix("patch_id", "docs")
    reference = fix("reference", "threading")
    missing = fix("missing", "leak", f"Fixes https://github.com/acme/hello/issues/{n['issue']}")
    picked_then_reverted = fix("reverted", "speed")
    unrelated = repos.commit("Refactor (#999)", {"refactor.c": "r\n"})
    git(clone, "revert", "--no-edit", picked_then_reverted)
    revert_of_picked = git(clone, "rev-parse", "HEAD")
    git(clone, "revert", "--no-edit", old)
    revert_of_old = git(clone, "rev-parse", "HEAD")
    relanded = fix("relanded", "flaky")  # reverted on the trunk too: not missing
    git(clone, "revert", "--no-edit", relanded)
    git(clone, "push", "-q", "origin", "main")
    del unrelated

    git(clone, "switch", "-q", "-c", "release/2.9", "origin/release/2.9")
    git(clone, "cherry-pick", "-x", trailer)
    git(clone, "cherry-pick", patch_id)  # no -x: matched by patch-id
    git(clone, "cherry-pick", "-x", picked_then_reverted)
    repos.commit(f"[release/2.9] Fix threading differently (#{n['reference']})", {"t.c": "t\n"})
    git(clone, "push", "-q", "origin", "release/2.9")
    git(clone, "switch", "-q", "main")
    return Planted(repos, trailer, patch_id, reference, missing, revert_of_picked, revert_of_old)


NUMBERS = {
    "old": 20,
    "trailer": 11,
    "patch_id": 12,
    "reference": 13,
    "missing": 14,
    "issue": 40,
    "reverted": 15,
    "relanded": 16,
}


def audit(run: Run, repos: Repos, *args: str) -> Result:
    return run("release", "audit", "2.9", "--repo", str(repos.clone), *args)


def test_audit_finds_missing_pick_and_revert_then_nothing(tmp_path: Path, run: Run) -> None:
    planted = plant(tmp_path, NUMBERS)
    repos = planted.repos
    milestone = tmp_path / "milestone.yaml"
    milestone.write_text(
        "title: 2.9.0\n"
        "items:\n"
        "  - 11\n"
        "  - '#12'\n"
        "  - https://github.com/acme/hello/pull/13\n"
        "  - https://github.com/acme/hello/issues/40   # fixed by #14\n"
        "  - 15\n"
        "  - 16\n"
        "  - 30\n"
    )
    result = audit(run, repos, "--milestone-file", str(milestone), "--format", "json")
    assert result.code == 4, result.err
    report = json.loads(result.out)
    findings = {(f["kind"], f["commit"]) for f in report["findings"]}
    assert findings == {
        ("missing-pick", planted.missing),
        ("missing-revert", planted.revert_of_picked),
        ("missing-revert", planted.revert_of_old),
    }
    missing = next(f for f in report["findings"] if f["kind"] == "missing-pick")
    assert missing["items"] == [40]  # the issue it fixes; PR #14 is not listed
    how = {c["commit"]: c["how"] for c in report["covered"]}
    assert how == {
        planted.picked_trailer: "trailer",
        planted.picked_patch_id: "patch-id",
        planted.by_reference: "reference",
    }
    assert report["unreferenced"] == [30]
    assert "missing 3 change(s)" in result.err

    text = audit(run, repos, "--milestone-file", str(milestone))
    assert text.code == 4
    assert "missing pick" in text.out and "missing revert" in text.out
    assert planted.missing[:12] in text.out

    # pick what is missing: the audit is clean
    clone = repos.clone
    git(clone, "switch", "-q", "release/2.9")
    git(clone, "cherry-pick", "-x", planted.missing)
    git(clone, "cherry-pick", "-x", planted.revert_of_picked)
    git(clone, "cherry-pick", planted.revert_of_old)  # without -x: same patch-id
    git(clone, "push", "-q", "origin", "release/2.9")
    clean = audit(run, repos, "--milestone-file", str(milestone), "--format", "json")
    assert clean.code == 0, clean.err
    assert json.loads(clean.out)["findings"] == []
    assert "nothing missing" in audit(run, repos, "--milestone-file", str(milestone)).out


def test_audit_with_a_github_milestone(tmp_path: Path, run: Run, fake_github: FakeGitHub) -> None:
    repo = "acme/hello"
    number = fake_github.add_milestone(repo, "2.9.0")
    other = fake_github.add_milestone(repo, "3.0.0")
    n = {
        "trailer": fake_github.add_pull(repo, "loader", head="a", milestone=number, merged=True),
        "patch_id": fake_github.add_pull(repo, "docs", head="b", milestone=number, merged=True),
        "reference": fake_github.add_issue(repo, "threading", milestone=number),
        "missing": fake_github.add_pull(repo, "leak", head="c", milestone=number, merged=True),
        "issue": fake_github.add_issue(repo, "leak report", milestone=number, state="closed"),
        "reverted": fake_github.add_pull(repo, "speed", head="d", milestone=other, merged=True),
        "relanded": fake_github.add_pull(repo, "flaky", head="e", merged=True),
        "old": fake_github.add_pull(repo, "old", head="f", merged=True),
    }
    planted = plant(tmp_path, n)
    result = audit(
        run, planted.repos, "--milestone", str(number), "--github-repo", repo, "--format", "json"
    )
    assert result.code == 4, result.err
    report = json.loads(result.out)
    assert report["milestone"]["title"] == "2.9.0"
    assert report["milestone"]["items"] == sorted(
        n[k] for k in ("trailer", "patch_id", "reference", "missing", "issue")
    )
    picks = [f["commit"] for f in report["findings"] if f["kind"] == "missing-pick"]
    assert picks == [planted.missing]
    assert all(method == "GET" for method, _, _ in fake_github.requests)

    unknown = audit(run, planted.repos, "--milestone", "99", "--github-repo", repo)
    assert unknown.code == 2 and "acme/hello has no milestone 99" in unknown.err
    no_repo = audit(run, planted.repos, "--milestone", str(number))
    assert no_repo.code == 2 and "--github-repo" in no_repo.err
    asked = len(fake_github.requests)
    for bad in ("0", "-1"):
        negative = audit(run, planted.repos, "--milestone", bad, "--github-repo", repo)
        assert negative.code == 2 and "--milestone" in negative.err
    assert len(fake_github.requests) == asked  # refused before GitHub is asked


def test_milestone_file_errors(tmp_path: Path, run: Run) -> None:
    repos = make_project(tmp_path)
    g = Git(repos.clone)
    apply_plan(g, plan_cut(g, CutRequest(line=Line(2, 9), github_repo="acme/hello")))
    bad = tmp_path / "bad.yaml"
    bad.write_text("- 1\n- not-a-number\n")
    result = audit(run, repos, "--milestone-file", str(bad))
    assert result.code == 2 and f"{bad}:2:3" in result.err
    assert "'not-a-number' is not an issue/PR number or URL" in result.err

    foreign = tmp_path / "foreign.json"
    foreign.write_text('["https://github.com/else/where/pull/3"]')
    result = audit(run, repos, "--milestone-file", str(foreign), "--github-repo", "acme/hello")
    assert result.code == 2 and "belongs to else/where, not to acme/hello" in result.err

    result = audit(run, repos)
    assert result.code == 2 and "give exactly one milestone" in result.err

    for item in ('"http://[::1/a/b/issues/1"', '"#²"', "-5", "0", '"https://x.org/a/b/pull/²"'):
        odd = tmp_path / "odd.yaml"
        odd.write_text(f"- 1\n- {item}\n")
        result = audit(run, repos, "--milestone-file", str(odd))
        assert result.code == 2, result.err
        assert f"{odd}:2:3" in result.err and "is not an issue/PR number" in result.err

    empty = tmp_path / "empty.yaml"
    empty.write_text("items: []\n")
    clean = audit(run, repos, "--milestone-file", str(empty))
    assert clean.code == 0 and "nothing missing" in clean.out


def test_audit_lists_the_cuda_architectures_no_validation_ran(tmp_path: Path, run: Run) -> None:
    """With --manifest and --matrix: per CUDA cell, the GPUs its GPU smoke ran on (recorded by
    `validate --runtime`) and the arch list entries none of them executed."""
    planted = plant(tmp_path, NUMBERS)
    milestone = tmp_path / "milestone.yaml"
    milestone.write_text("title: 2.9.0\nitems: [11, 12, 13]\n")
    cell = "wheel-linux-x86_64-py3.12-cu130"
    manifest = ArtifactManifest(
        project="hello-native",
        release="1.0",
        channel="nightly",
        entries={
            cell: ManifestEntry(
                cell_id=cell,
                file="hello_native.whl",
                size=1,
                sha256="0" * 64,
                version="1.0.0",
                package_type="wheel",
                variant="cu130",
                upload_subfolder="cu130",
                proven_on=(ProvenGpu(name="NVIDIA H200", sm="sm_90"),),
            )
        },
    )
    path = tmp_path / "relforge-manifest.json"
    manifest.save(path)
    args = ("--milestone-file", str(milestone), "--manifest", str(path), "--matrix", str(EXAMPLE))
    result = audit(run, planted.repos, *args, "--format", "json")
    assert result.code == 4, result.err  # the planted missing pick still counts; coverage not
    coverage = {c["cell_id"]: c for c in json.loads(result.out)["gpu_coverage"]}
    assert coverage[cell]["arches"] == ["sm_75", "sm_80", "sm_90", "sm_120"]
    assert coverage[cell]["unproven"] == ["sm_75", "sm_80", "sm_120"]
    assert coverage[cell]["proven_on"] == [{"name": "NVIDIA H200", "sm": "sm_90"}]
    other = coverage["wheel-linux-x86_64-py3.13-cu130"]
    assert other["built"] is False and other["unproven"] == other["arches"]
    assert "wheel-linux-x86_64-py3.12-cpu" not in coverage
    text = audit(run, planted.repos, *args)
    said = " ".join(text.out.split())  # the terminal may wrap the long line
    assert (
        f"{cell}: kernels ran on NVIDIA H200 (sm_90); never executed: sm_75, sm_80, sm_120" in said
    )
    alone = audit(run, planted.repos, "--milestone-file", str(milestone), "--manifest", str(path))
    assert alone.code == 2 and "--manifest and --matrix go together" in alone.err
