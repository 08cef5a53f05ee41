"""The PyPI pre-flight's arithmetic and its reading of a PEP 691 page, without a server: the
per-file limit, the quota with the project's usage (files already on the index not counted
twice), a deprecated classifier, a PEP 691 page with and without PEP 700 sizes, PyPI's 14-day
rule for adding files to a release."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from relforge.errors import RefusedError
from relforge.promote.pypi.age import age_hint, age_problems, parse_last_modified
from relforge.promote.pypi.refusals import (
    Limits,
    Usage,
    classifier_problems,
    refuse,
    release_problems,
)
from relforge.promote.pypi.usage import sizes_from_json, upload_times_from_json, usage_of

MIB = 1 << 20
LIMITS = Limits(file_mb=100, project_mb=1024)
NONE = Usage(total=None, files=frozenset(), note="not read")


def test_each_file_over_the_per_file_limit_is_named() -> None:
    files = [("a.whl", 100 * MIB), ("b.whl", 100 * MIB + 1), ("c.whl", 800 * MIB)]
    problems = release_problems(files, LIMITS, NONE, "the index")
    assert [p.split(":")[0] for p in problems] == ["b.whl", "c.whl"]
    assert "800.0 MiB, over the project's per-file limit of 100 MiB" in problems[1]


def test_the_quota_counts_the_usage_but_not_files_already_on_the_index() -> None:
    used = Usage(total=1000 * MIB, files=frozenset({"a.whl"}), note="3 file(s) on X")
    files = [("a.whl", 20 * MIB), ("b.whl", 20 * MIB)]
    assert release_problems(files, LIMITS, used, "X") == []  # 1000 + 20 (a.whl is there)
    files.append(("c.whl", 5 * MIB))
    (problem,) = release_problems(files, LIMITS, used, "X")
    assert "adds 25.0 MiB to the 1000.0 MiB the project uses on X (3 file(s) on X)" in problem
    assert "1025.0 MiB, over the project's quota of 1024 MiB" in problem
    # usage unknown: the release alone is checked
    assert release_problems(files, LIMITS, NONE, "X") == []


def test_deprecated_and_unknown_classifiers_are_refused() -> None:
    from trove_classifiers import deprecated_classifiers

    old = next(iter(deprecated_classifiers))
    problems = classifier_problems([old, "Made Up :: Thing", "Programming Language :: Python :: 3"])
    assert len(problems) == 2
    assert f"classifier {old!r} is deprecated" in problems[0]
    assert "'Made Up :: Thing' is not a trove classifier" in problems[1]


def test_one_refusal_lists_every_problem() -> None:
    refuse([], "uploaded")  # nothing to refuse
    with pytest.raises(RefusedError) as caught:
        refuse(["x.whl: one", "y.whl: two"], "uploaded")
    assert caught.value.message.startswith("2 problem(s) PyPI or twine would refuse")
    assert "nothing was uploaded:\n  x.whl: one\n  y.whl: two" in caught.value.message


def test_a_pep_691_page_gives_the_usage_only_when_every_file_has_its_size() -> None:
    page: dict[str, Any] = {
        "meta": {"api-version": "1.1"},
        "name": "torch",
        "files": [
            {"filename": "torch-2.9.0-cp313-none-linux_x86_64.whl", "size": 900 * MIB},
            {"filename": "torch-2.9.0.tar.gz", "size": 60 * MIB, "yanked": True},
        ],
    }
    usage = usage_of(sizes_from_json(page), "https://pypi.org/simple/torch/")
    assert usage.total == 960 * MIB  # a yanked file still counts
    assert usage.files == {"torch-2.9.0-cp313-none-linux_x86_64.whl", "torch-2.9.0.tar.gz"}
    del page["files"][1]["size"]  # an API 1.0 page: no sizes
    unknown = usage_of(sizes_from_json(page), "I")
    assert unknown.total is None and "gives no size for 1 of its 2 file(s)" in unknown.note


UTC = datetime.timezone.utc
FIRST = datetime.datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
ON_INDEX = {
    "torch-2.9.0-cp313-none-linux_x86_64.whl": FIRST + datetime.timedelta(hours=5),
    "torch-2.9.0.tar.gz": FIRST,  # the first file of 2.9.0
    "torch-2.10.0.tar.gz": FIRST + datetime.timedelta(days=10),
}
NEW = "torch-2.9.0-cp313-none-macosx_11_0_arm64.whl"


def _age(adds: list[str], late: datetime.timedelta, **changed: Any) -> tuple[list[str], list[str]]:
    uploaded = {**ON_INDEX, **changed}
    return age_problems(adds, uploaded, uploaded, FIRST + late, "I")


def test_the_14_day_rule_counts_from_the_first_file_of_the_release() -> None:
    just = datetime.timedelta(days=13, hours=23, minutes=59, seconds=59)
    assert _age([NEW], just) == ([], [])
    for late in (datetime.timedelta(days=14), datetime.timedelta(days=14, seconds=1)):
        (problem,), notes = _age([NEW], late)
        assert notes == []
        assert problem.startswith("2.9.0 was first uploaded to I on 2026-07-01 12:00 UTC, 14 days")
        assert (
            "PyPI refuses new files for a release first uploaded more than 14 days ago" in problem
        )
        assert f"its 1 new file(s) ({NEW}) would be refused" in problem
        assert "post-release" in (age_hint([problem]) or "")
    assert age_hint(["x.whl: something else"]) is None


def test_the_14_day_rule_leaves_files_already_there_and_new_versions_alone() -> None:
    late = datetime.timedelta(days=400)
    assert _age([], late) == ([], [])  # a rerun: every file is on the index
    assert _age(["torch-3.0.0.tar.gz", "not-a-dist.txt"], late) == ([], [])  # a new version
    # a version spelled otherwise is the same release
    (problem,), _ = _age(["torch-2.9-cp313-none-macosx_11_0_arm64.whl"], late)
    assert problem.startswith("2.9 was first uploaded")
    # 2.10.0's own first upload is 10 days later: 13 days after FIRST it is 3 days old
    assert _age(["torch-2.10.0-py3-none-any.whl"], datetime.timedelta(days=13)) == ([], [])


def test_an_index_that_does_not_say_when_is_noted_not_refused() -> None:
    problems, (note,) = _age([NEW], datetime.timedelta(days=400), **{"torch-2.9.0.tar.gz": None})
    assert problems == []
    assert "I does not say when 2.9.0 was first uploaded" in note and "14-day rule" in note


def test_upload_times_from_pep_700_and_last_modified() -> None:
    page: dict[str, Any] = {
        "files": [
            {"filename": "a-1.0.tar.gz", "upload-time": "2026-07-01T12:00:00.123456Z"},
            {"filename": "a-1.0-py3-none-any.whl"},
            {"filename": "a-1.1.tar.gz", "upload-time": "yesterday"},
        ]
    }
    times = upload_times_from_json(page)
    assert times == {
        "a-1.0.tar.gz": datetime.datetime(2026, 7, 1, 12, 0, 0, 123456, tzinfo=UTC),
        "a-1.0-py3-none-any.whl": None,
        "a-1.1.tar.gz": None,
    }
    assert parse_last_modified("Wed, 01 Jul 2026 12:00:00 GMT") == FIRST
    assert parse_last_modified("not a date") is None and parse_last_modified(None) is None
