"""Fuzz the loader: thousands of malformed matrices, each must end in ConfigError (exit 2) and
never in another exception.  Examples are derandomized so CI runs the same ones every time."""

from __future__ import annotations

import copy
import datetime
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from relforge.errors import ConfigError
from relforge.matrix.load import load_matrix
from relforge.matrix.values import PythonVersion, check_platform_tag
from tests.conftest import SMALL

BASE: dict[str, Any] = yaml.safe_load(SMALL)
FUZZ = settings(
    max_examples=1000,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
EXAMPLES_RUN = {"count": 0}

Path = tuple[Any, ...]


def walk(node: Any, path: Path = ()) -> list[tuple[Path, Any]]:
    out = [(path, node)]
    if isinstance(node, dict):
        for key, value in node.items():
            out += walk(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += walk(value, (*path, i))
    return out


ALL = walk(BASE)
MAPPINGS = [p for p, v in ALL if isinstance(v, dict)]
NON_ROOT = [p for p, _ in ALL if p]
REQUIRED = [
    ("project", "name"),
    ("releases", "1.0", "python"),
    ("releases", "1.0", "platforms"),
    ("releases", "1.0", "accelerators"),
    ("releases", "1.0", "platforms", "linux-x86_64", "os"),
    ("releases", "1.0", "platforms", "windows-x86_64", "platform_tag"),
    ("releases", "1.0", "accelerators", "cpu", "kind"),
    ("releases", "1.0", "accelerators", "cu128", "version"),
    ("releases", "1.1", "accelerators", "cu130", "kind"),
    ("releases", "1.0", "exclude", 0, "reason"),
    ("releases", "1.0", "include", 0, "suffix"),
    ("releases", "1.0", "libtorch", "variants"),
    ("channels", "test", "prefix"),
    ("releases",),
]
VERSIONS = [
    ("releases", "1.0", "accelerators", "cu128", "version"),
    ("releases", "1.0", "accelerators", "cu128", "cudnn"),
    ("releases", "1.1", "accelerators", "cu130", "version"),
]
PYTHONS = [("releases", "1.0", "python", i) for i in range(3)]
REQUIREMENTS = [("releases", "1.0", "accelerators", "cu128", "extra_install_requires", 0)]
TAGS = [("releases", "1.0", "platforms", "linux-x86_64", "platform_tag")]


def _invalid(check: Any) -> Any:
    def fails(text: str) -> bool:
        try:
            check(text)
        except (ValueError, InvalidVersion, InvalidRequirement):
            return True
        return False

    return st.text(min_size=1, max_size=30).filter(fails)


BAD_VERSION = _invalid(Version)
BAD_PYTHON = _invalid(PythonVersion.parse)
BAD_REQUIREMENT = _invalid(Requirement)
BAD_TAG = _invalid(check_platform_tag)


def get(doc: Any, path: Path) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def put(doc: Any, path: Path, value: Any) -> None:
    get(doc, path[:-1])[path[-1]] = value


def other_shape(value: Any) -> Any:
    """A value no schema position that held `value` accepts."""
    if isinstance(value, dict):
        return [1, 2]
    if isinstance(value, list):
        return {"not": "a list"}
    return {"not": ["a scalar"]}


@st.composite
def malformed(draw: st.DrawFn) -> str:
    doc = copy.deepcopy(BASE)
    kind = draw(
        st.sampled_from(
            [
                "unknown-key",
                "delete-required",
                "wrong-shape",
                "bad-version",
                "bad-python",
                "bad-requirement",
                "bad-tag",
                "duplicate-line",
                "tab-indent",
            ]
        )
    )
    if kind == "unknown-key":
        get(doc, draw(st.sampled_from(MAPPINGS)))["zz-unknown"] = 7
    elif kind == "delete-required":
        path = draw(st.sampled_from(REQUIRED))
        del get(doc, path[:-1])[path[-1]]
    elif kind == "wrong-shape":
        path = draw(st.sampled_from(NON_ROOT))
        put(doc, path, other_shape(get(doc, path)))
    elif kind == "bad-version":
        put(doc, draw(st.sampled_from(VERSIONS)), draw(BAD_VERSION))
    elif kind == "bad-python":
        put(doc, draw(st.sampled_from(PYTHONS)), draw(BAD_PYTHON))
    elif kind == "bad-requirement":
        put(doc, draw(st.sampled_from(REQUIREMENTS)), draw(BAD_REQUIREMENT))
    elif kind == "bad-tag":
        put(doc, draw(st.sampled_from(TAGS)), draw(BAD_TAG))
    text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, allow_unicode=True)
    lines = text.splitlines()
    if kind == "duplicate-line":
        keyed = [
            i for i, line in enumerate(lines) if ":" in line and not line.lstrip().startswith("-")
        ]
        i = draw(st.sampled_from(keyed))
        lines.insert(i, lines[i])
    elif kind == "tab-indent":
        nested = [i for i, line in enumerate(lines) if line.startswith("  ") and i > 0]
        i = draw(st.sampled_from(nested))
        lines[i] = "\t" + lines[i].lstrip(" ")
    return "\n".join(lines) + "\n"


def assert_config_error(text: str) -> None:
    EXAMPLES_RUN["count"] += 1
    with pytest.raises(ConfigError) as info:
        load_matrix("fuzz.yaml", text=text)
    assert info.value.exit_code == 2
    assert "fuzz.yaml" in info.value.render()


@FUZZ
@given(malformed())
def test_malformed_matrices(text: str) -> None:
    assert_config_error(text)


@settings(FUZZ, max_examples=300)
@given(st.text(max_size=200))
def test_arbitrary_text(text: str) -> None:
    assert_config_error(text)


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=10),
    st.dates().map(datetime.date.isoformat),
)
trees = st.recursive(
    scalars,
    lambda kids: st.one_of(
        st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=8), kids, max_size=4)
    ),
    max_leaves=20,
)


@settings(FUZZ, max_examples=300)
@given(
    st.dictionaries(
        st.sampled_from(["project", "releases", "channels", "publishing", "schema_version", "x"]),
        trees,
        max_size=5,
    )
)
def test_arbitrary_structures(doc: dict[str, Any]) -> None:
    assert_config_error(yaml.safe_dump(doc))


def test_at_least_a_thousand_malformed_documents_were_tried() -> None:
    # pytest runs this after the fuzz tests above; run alone (-k), it fuzzes itself.
    if EXAMPLES_RUN["count"] == 0:
        test_malformed_matrices()
    assert EXAMPLES_RUN["count"] >= 1000
