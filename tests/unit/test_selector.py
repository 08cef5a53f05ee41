from __future__ import annotations

from types import SimpleNamespace

import pytest

from relforge.matrix.selector import parse_selector, select, selector_from_match


def cell(**kw: object) -> SimpleNamespace:
    base = {
        "id": "wheel-linux-x86_64-py3.12-cu128",
        "os": "linux",
        "accelerator": "cuda",
        "python": "3.12",
        "accelerator_version": "12.8",
        "variant": "cu128",
        "free_threaded": False,
        "platform": "linux-x86_64",
        "libtorch_variant": None,
    }
    return SimpleNamespace(**{**base, **kw})


@pytest.mark.parametrize(
    ("text", "hits"),
    [
        ("os=linux", True),
        ("os=windows", False),
        ("os!=windows", True),
        ("accelerator=rocm|cuda", True),
        ("variant!=cpu|cu128", False),
        ("python>=3.12", True),
        ("python>3.12", False),
        ("python<3.13,accelerator_version>=12.6", True),
        ("accelerator_version<12.8", False),
        ("wheel-*-cu128", True),
        ("wheel-*-cu126", False),
        ("os=linux,wheel-linux-*", True),
        ("free_threaded=false", True),
        ("libtorch_variant=", True),
        ("platform=linux-*", True),
    ],
)
def test_terms(text: str, hits: bool) -> None:
    assert parse_selector(text).matches(cell()) is hits


def test_free_threaded_compares_as_its_version() -> None:
    threaded = cell(python="3.13t", free_threaded=True)
    assert parse_selector("python>=3.13").matches(threaded)
    assert parse_selector("python=3.13t").matches(threaded)
    assert not parse_selector("python=3.13").matches(threaded)
    assert not parse_selector("python>=3.12").matches(cell(python=None))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("oss=linux", "unknown cell field 'oss' (did you mean 'os'?)"),
        ("os>linux", "os is not a version"),
        ("python>=three", "'three' is not a version"),
        ("os=linux,,python=3.12", "empty term"),
    ],
)
def test_bad_selectors(text: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_selector(text)
    assert message in str(info.value)


def test_union_of_selectors() -> None:
    cells = [cell(), cell(os="windows", id="w"), cell(os="macos", id="m")]
    chosen = select(cells, [parse_selector("os=windows"), parse_selector("m")])
    assert [c.id for c in chosen] == ["w", "m"]
    assert select(cells, []) == cells


def test_rule_match_mapping() -> None:
    rule = selector_from_match({"python": ("<3.11", ">=3.14", "3.13t"), "os": ("linux",)})
    assert rule.matches(cell(python="3.10"))
    assert rule.matches(cell(python="3.14t"))
    assert rule.matches(cell(python="3.13t"))
    assert not rule.matches(cell(python="3.12"))
    assert not rule.matches(cell(python="3.10", os="windows"))
    assert str(rule) == "python<3.11|python>=3.14|python=3.13t,os=linux"
    negated = selector_from_match({"libtorch_variant": ("!=shared-with-deps",)})
    assert negated.matches(cell(libtorch_variant="static-with-deps"))
    assert not negated.matches(cell(libtorch_variant="shared-with-deps"))


@pytest.mark.parametrize(
    "values", [("cu*", "!=cu130"), ("!=cu130", "cu*")], ids=["positive-first", "negative-first"]
)
def test_a_rule_list_mixing_values_and_exclusions_means_the_same_in_any_order(
    values: tuple[str, ...],
) -> None:
    rule = selector_from_match({"variant": values})
    assert rule.matches(cell(variant="cu128"))
    assert not rule.matches(cell(variant="cu130"))  # excluded whatever the order
    assert not rule.matches(cell(variant="cpu"))  # not one of the values


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("free_threaded=True", "free_threaded is true or false, not 'True'"),
        ("cxx11_abi=1", "cxx11_abi is true or false, not '1'"),
        ("pypi_default!=yes", "pypi_default is true or false, not 'yes'"),
        ("=linux", "no cell field before '='"),
        ("python>=3.13t", "compare the version and add free_threaded=true"),
    ],
)
def test_selectors_that_would_silently_match_nothing_are_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_selector(text)
    assert message in str(info.value)


def test_a_bool_rule_value_from_yaml_still_matches() -> None:
    rule = selector_from_match({"free_threaded": ("true",)})
    assert rule.matches(cell(free_threaded=True)) and not rule.matches(cell())


def test_libtorch_as_a_package_type_selects_the_archive_cells() -> None:
    # PyTorch's word in older matrix files: the same cells as `archive`, in a selector and a rule
    archive = SimpleNamespace(package_type="archive", os="linux")
    wheel = SimpleNamespace(package_type="wheel", os="linux")
    for said in ("libtorch", "archive"):
        assert parse_selector(f"package_type={said}").matches(archive)
        assert not parse_selector(f"package_type={said}").matches(wheel)
        assert selector_from_match({"package_type": (said,)}).matches(archive)
        assert parse_selector(f"package_type!={said}").matches(wheel)
