"""Release lines, tags and versions (all through `packaging`), repo names, commit references."""

from __future__ import annotations

import pytest
from packaging.version import Version

from relforge.errors import UsageError
from relforge.release.milestone import references
from relforge.release.versions import (
    Line,
    final_of,
    parse_line,
    parse_release,
    rcs_of,
    release_tags,
    with_release,
)
from relforge.versiontags import final_tag, parse_tag, rc_tag, rc_version


def test_lines_and_releases() -> None:
    line = parse_line("2.9")
    assert line == Line(2, 9) and line.branch == "release/2.9"
    assert line.orig_branch == "orig/release/2.9" and line.next_dev == Version("2.10.0a0")
    assert parse_release("2.9.1") == Version("2.9.1")
    for bad in ("2", "2.9.0", "2.9rc1", "x.y", "2.9+local"):
        with pytest.raises(UsageError):
            parse_line(bad)
    for bad in ("2.9", "2.9.0rc1", "2.9.0.dev1", "1!2.9.0"):
        with pytest.raises(UsageError):
            parse_release(bad)


def test_tags_are_read_with_packaging() -> None:
    refs = {
        "refs/tags/v2.9.0-rc1": "a",
        "refs/tags/v2.9.0rc10": "c",  # other spelling, still an RC, and 10 > 2
        "refs/tags/v2.9.0-rc2": "b",
        "refs/tags/v2.9.0": "c",
        "refs/tags/v2.8.0": "z",
        "refs/tags/v2.9.0a0": "x",  # an alpha is no release tag
        "refs/tags/ciflow/binaries/123": "y",
        "refs/tags/vnext": "y",
        "refs/heads/v2.9.1": "h",
    }
    tags = release_tags(refs, Line(2, 9))
    assert [t.name for t in tags] == ["v2.9.0-rc1", "v2.9.0-rc2", "v2.9.0rc10", "v2.9.0"]
    assert [t.rc for t in rcs_of(tags, Version("2.9.0"))] == [1, 2, 10]
    final = final_of(tags, Version("2.9.0"))
    assert final is not None and final.commit == "c"
    assert parse_tag("v2.9.0.post1", "x") is None and parse_tag("2.9.0", "x") is None
    assert rc_version("v2.9.0-rc3") == rc_version("v2.9.0rc3") == Version("2.9.0rc3")
    # what relforge writes, it reads back as what it meant
    written = parse_tag(rc_tag(Version("2.9.1"), 4), "c")
    assert written is not None and (written.base, written.rc) == (Version("2.9.1"), 4)
    final = parse_tag(final_tag(Version("2.9.1")), "c")
    assert final is not None and final.is_final and rc_version(final.name) is None
    for not_rc in ("v2.9.0", "v2.9.0a1", "v2.9-rc1", "2.9.0-rc1", "v2.9.0-rc1+cpu", "vnext"):
        assert rc_version(not_rc) is None, not_rc


def test_with_release_keeps_the_style() -> None:
    assert with_release(Version("2.9.0a0"), Version("2.9.1")) == "2.9.1a0"
    assert with_release(Version("2.9.0"), Version("2.9.1")) == "2.9.1"


def test_references_in_commit_messages() -> None:
    message = (
        "Fix the leak (#123)\n\nFixes #45, see C#7 and https://github.com/acme/hello/issues/67\n"
        "Pull Request resolved: https://github.com/acme/hello/pull/123\n"
        "Upstream: https://github.com/else/where/issues/89\n"
    )
    assert references(message, "acme/hello") == {123, 45, 67}
    assert references(message, None) == {123, 45, 67, 89}
