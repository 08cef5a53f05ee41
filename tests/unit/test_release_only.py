"""The release-only changes of a branch cut, computed in memory."""

from __future__ import annotations

import pytest

from relforge.errors import ConfigError
from relforge.matrix.load import load_matrix
from relforge.release.channel_switch import switch_default_channel
from relforge.release.release_only import ReleaseOnlyInputs, release_only_changes
from relforge.release.versions import Line
from relforge.release.workflow_pins import pin_uses
from tests.conftest import EXAMPLE, SMALL
from tests.releaseproject import GENERATED_WHEELS, MATRIX, WORKFLOW, generated_workflows

OWN = frozenset({"acme/hello"})


def test_pins_only_the_projects_own_trunk_refs() -> None:
    """Only acme/hello gets a release/2.9 branch: acme/infra, another repository of the same
    owner, is left alone like a third party (it was rewritten to a branch it does not have)."""
    pinned = pin_uses(WORKFLOW, "w.yml", trunk="main", ref="release/2.9", repos=OWN)
    assert pinned.edits == 2
    assert pinned.third_party == ("acme/infra/.github/actions/cache@main", "other/thing@main")
    changed = [
        (a, b)
        for a, b in zip(WORKFLOW.splitlines(), pinned.text.splitlines(), strict=True)
        if a != b
    ]
    assert changed == [
        (
            "    uses: acme/hello/.github/workflows/_build.yml@main",
            "    uses: acme/hello/.github/workflows/_build.yml@release/2.9",
        ),
        (
            "      - uses: acme/hello/.github/actions/setup@main",
            "      - uses: acme/hello/.github/actions/setup@release/2.9",
        ),
    ]


def test_pins_flow_style_and_leaves_shas_tags_and_docker_alone() -> None:
    text = (
        "jobs:\n"
        "  a: {uses: 'acme/hello/.github/workflows/x.yml@main', with: {ref: main}}\n"
        "  b:\n"
        "    steps:\n"
        "      - {uses: acme/ci@v2}\n"
        "      - uses: docker://acme/image@main\n"
        "      - uses: acme/ci@0123456789abcdef0123456789abcdef01234567\n"
        "      - name: mentions acme/ci@main in a name only\n"
    )
    pinned = pin_uses(text, "w.yml", trunk="main", ref="release/1.0", repos=OWN)
    assert pinned.edits == 1
    assert "'acme/hello/.github/workflows/x.yml@release/1.0', with: {ref: main}" in pinned.text
    assert pinned.text.count("@main") == 2  # the docker image and the name


def test_unknown_repository_with_candidates_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="which GitHub repository") as info:
        pin_uses(WORKFLOW, "w.yml", trunk="main", ref="release/2.9", repos=None)
    assert str(info.value.where) == "w.yml:5:11"
    # nothing to pin: no owner needed
    plain = "jobs:\n  a:\n    steps:\n      - uses: actions/checkout@v4\n"
    assert pin_uses(plain, "w.yml", trunk="main", ref="r", repos=None).edits == 0


@pytest.mark.parametrize(
    ("before", "after_contains"),
    [
        ("channels:\n  default: nightly  # keep me\n", "  default: test     # keep me\n"),
        ("channels:\n  default: test\n", "  default: test\n"),
        ('channels:\n  default: "nightly"\n', '  default: "test"\n'),
        ("channels:\n  test: {version_scheme: final, prefix: whl/t}\n", "  default: test\n  test:"),
        ("channels: {test: {version_scheme: final, prefix: whl/t}}\n", "{default: test, test:"),
        ("channels: {}\n", "channels: {default: test}\n"),
        ("", "\nchannels:\n  default: test\n"),
    ],
)
def test_switch_default_channel_in_place(before: str, after_contains: str) -> None:
    text = SMALL.replace("channels:\n", "old_channels:\n", 1)  # drop SMALL's channels block …
    head, _, rest = text.partition("old_channels:\n")
    rest = rest.split("releases:", 1)[1]
    text = head + before + "releases:" + rest  # … and put the case's in its place
    new = switch_default_channel(text, "m.yaml", "test")
    assert after_contains in new
    assert load_matrix("m.yaml", text=new).channels.default == "test"
    assert switch_default_channel(new, "m.yaml", "test") == new


def test_switch_keeps_the_rest_of_the_file_byte_identical() -> None:
    text = EXAMPLE.read_text()
    new = switch_default_channel(text, "example.yaml", "test")
    diff = [(a, b) for a, b in zip(text.splitlines(), new.splitlines(), strict=True) if a != b]
    assert len(diff) == 1 and diff[0][1].startswith("  default: test")


def test_switch_refuses_a_broken_matrix() -> None:
    with pytest.raises(ConfigError, match="unknown key"):
        switch_default_channel(SMALL + "bogus: 1\n", "m.yaml", "test")


def _inputs() -> ReleaseOnlyInputs:
    return ReleaseOnlyInputs(
        line=Line(2, 9), trunk="main", matrix_path="m.yaml", repos=OWN, source="origin/main"
    )


def test_generated_workflows_are_rerendered_for_the_branch() -> None:
    files = {
        "matrix/example.yaml": MATRIX,
        ".github/workflows/build.yml": WORKFLOW,
        **generated_workflows(),
        "docs/notes.yml": "uses: acme/x@main\n",  # not a workflow
    }
    inputs = ReleaseOnlyInputs(
        line=Line(1, 0),
        trunk="main",
        matrix_path="matrix/example.yaml",
        repos=OWN,
        source="origin/main",
    )
    result = release_only_changes(files, inputs)
    assert sorted(result.files) == sorted(
        [".github/workflows/build.yml", "matrix/example.yaml", *generated_workflows()]
    )
    # exactly what `relforge workflows generate … --ref release/1.0` makes of the switched matrix
    expected = generated_workflows(result.files["matrix/example.yaml"], ref="release/1.0")
    assert {p: result.files[p] for p in expected} == expected
    assert "relforge-build.yml@release/1.0" in result.files[GENERATED_WHEELS]
    assert not any("pinned in place" in note for note in result.notes)


def test_a_generated_file_without_its_command_is_an_error() -> None:
    broken = "# Generated by relforge 0.1.0 from m.yaml (release 1.0). Do not edit this file:\n"
    files = {"matrix/example.yaml": MATRIX, GENERATED_WHEELS: broken + "jobs: {}\n"}
    inputs = ReleaseOnlyInputs(
        line=Line(1, 0),
        trunk="main",
        matrix_path="matrix/example.yaml",
        repos=OWN,
        source="origin/main",
    )
    with pytest.raises(ConfigError, match="names no `relforge workflows generate` command"):
        release_only_changes(files, inputs)
