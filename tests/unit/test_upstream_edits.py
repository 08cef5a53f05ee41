"""The text edits `upstream update` makes: a new axis value derived from the newest one, the
Python list (flow, block, inherited), pins re-versioned; everything around them kept byte for
byte.  Unit tests on matrix text, no index."""

from __future__ import annotations

import textwrap

import pytest
from packaging.version import Version

from relforge.matrix.source import Map, parse_yaml
from relforge.release.yaml_edit import apply_edits
from relforge.upstream.axisdrift import _shifted
from relforge.upstream.edits import axis_edits, last_line, python_edits
from relforge.upstream.model import AddAxisValue, SetPythons
from relforge.upstream.pins import repin
from relforge.upstream.sites import own_release


def _own(text: str, release: str = "1.0") -> Map:
    found = own_release(parse_yaml(text, "m.yaml"), release)
    assert found is not None
    return found


@pytest.mark.parametrize(
    ("text", "old", "new", "best", "expected"),
    [
        ("torch==2.9.*", (2, 9), (2, 10), "2.10.0", "torch==2.10.*"),
        ("torch>=2.9,<2.10", (2, 9), (2, 10), "2.10.1", "torch>=2.10,<2.11"),
        (
            "torch >= 2 , < 3 ; python_version >= '3.11'",
            (2,),
            (3,),
            "3.0.0",
            "torch >= 3 , < 4 ; python_version >= '3.11'",
        ),
        ("torch==2.9.1", (2, 9), (2, 10), "2.10.2", "torch==2.10.2"),  # exact: the newest
        ("torch[opt]~=2.9.0", (2, 9), (2, 11), "2.11.0", "torch[opt]~=2.11.0"),
        ("numpy==2.9.*", (2, 9), (2, 10), "2.10.0", "numpy==2.9.*"),  # not the axis's dependency
        ("torch>=1.26,<2", (1, 26), (2, 4), "2.4.0", "torch>=2.4,<2"),  # `<2` is no series bound
    ],
)
def test_requirements_move_to_the_new_series(
    text: str, old: tuple[int, ...], new: tuple[int, ...], best: str, expected: str
) -> None:
    assert _shifted(text, "torch", old, new, Version(best)) == expected


def test_a_pre_release_bound_is_not_carried_over() -> None:
    assert _shifted("torch>=2.9.0rc1", "torch", (2, 9), (2, 10), Version("2.10.0")) is None


def test_repin_changes_only_the_version() -> None:
    line = "nvidia-nccl-cu13 == 2.27.7 ; platform_system == 'Linux'"
    assert (
        repin(line, Version("2.28.9")) == "nvidia-nccl-cu13 == 2.28.9 ; platform_system == 'Linux'"
    )
    assert repin("triton===3.5.0", Version("3.6.0")) == "triton===3.6.0"
    with pytest.raises(ValueError):
        repin("triton>=3.5.0", Version("3.6.0"))


BLOCK = textwrap.dedent("""\
    releases:
      "1.0":
        python:
          - "3.10"   # oldest
          - "3.11"
          - "3.12"
        # the axes
        axes:
          torch:
            "2.9":
              install:
                - torch==2.9.*
              requires: ["torch==2.9.*"]
            # a comment that belongs to what follows
        pypi_default: {}
    """)


def test_block_python_list_drops_a_line_and_appends_one() -> None:
    own = _own(BLOCK)
    lines = BLOCK.splitlines(keepends=True)
    edits = python_edits(
        lines, own, ["3.10", "3.11", "3.12"], SetPythons(add=("3.13",), drop=("3.10",))
    )
    assert apply_edits(BLOCK, edits, "m.yaml") == BLOCK.replace(
        '      - "3.10"   # oldest\n', ""
    ).replace('      - "3.12"\n', '      - "3.12"\n      - "3.13"\n')


def test_a_new_axis_value_goes_after_the_last_one_before_the_comments_that_follow() -> None:
    own = _own(BLOCK)
    lines = BLOCK.splitlines(keepends=True)
    value = AddAxisValue(
        axis="torch",
        key="2.10",
        after="2.9",
        install=("torch==2.10.*",),
        requires=("torch==2.10.*",),
        index="same-channel",
    )
    new = apply_edits(BLOCK, axis_edits(lines, own, "torch", [value]), "m.yaml")
    assert new == BLOCK.replace(
        '          requires: ["torch==2.9.*"]\n',
        '          requires: ["torch==2.9.*"]\n'
        '        "2.10":\n'
        '          install: ["torch==2.10.*"]\n'
        '          index: "same-channel"\n'
        '          requires: ["torch==2.10.*"]\n',
    )
    parsed = parse_yaml(new, "m.yaml")
    assert isinstance(parsed, Map)


def test_a_flow_mapping_value_gets_a_flow_mapping_sibling() -> None:
    text = textwrap.dedent("""\
        releases:
          "1.0":
            python: ['3.12']
            axes:
              numpy:
                '2.x': {install: ["numpy>=2,<3"], requires: ["numpy>=2,<3"]}  # numpy 2
        """)
    value = AddAxisValue(
        axis="numpy", key="3.x", after="2.x", install=("numpy>=3,<4",), requires=("numpy>=3,<4",)
    )
    new = apply_edits(text, axis_edits(text.splitlines(True), _own(text), "numpy", [value]), "m")
    assert new.endswith(
        """  # numpy 2\n        '3.x': {install: ["numpy>=3,<4"], requires: ["numpy>=3,<4"]}\n"""
    )


def test_flow_python_list_keeps_its_quotes_and_its_comment_column() -> None:
    text = "releases:\n  \"1.0\":\n    python: ['3.10', '3.11']  # ours\n"
    edits = python_edits(
        text.splitlines(True),
        _own(text),
        ["3.10", "3.11"],
        SetPythons(add=("3.12",), drop=("3.10",)),
    )
    assert (
        apply_edits(text, edits, "m")
        == "releases:\n  \"1.0\":\n    python: ['3.11', '3.12']  # ours\n"
    )


def test_an_inherited_python_list_becomes_the_release_s_own() -> None:
    text = 'releases:\n  "1.1":\n    extends: "1.0"  # the base\n    date: 2026-01-01\n'
    edits = python_edits(
        text.splitlines(True), _own(text, "1.1"), ["3.10", "3.11"], SetPythons(drop=("3.10",))
    )
    assert apply_edits(text, edits, "m") == (
        'releases:\n  "1.1":\n    python: ["3.11"]\n    extends: "1.0"  # the base\n'
        "    date: 2026-01-01\n"
    )


def test_the_last_line_of_a_folded_scalar_is_its_own() -> None:
    text = "a:\n  b: >-\n    folded\n    text\n\nc: 1\n"
    root = parse_yaml(text, "m")
    assert isinstance(root, Map)
    assert last_line(root.entries["a"].value, text.splitlines(True)) == 4
