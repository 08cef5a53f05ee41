"""The bot's command grammar, tracker titles and reply escaping (no servers, no git)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from relforge.bot.grammar import (
    DEFAULT_BOT,
    Category,
    CherryPickCommand,
    Command,
    GrammarError,
    HelpCommand,
    ReleaseBranch,
    RevertCommand,
    command_lines,
    parse_issue_link,
    parse_line,
    parse_release_branch,
    usage,
)
from relforge.bot.replies import block, code
from relforge.bot.tracker import pick_tracker, title_version, tracker_comment
from relforge.forges.github import Issue, repo_from_url

FIXES = "https://github.com/acme/widget/issues/7"


def parse_comment(body: str, bot: str = DEFAULT_BOT) -> Command | None:
    """The command of a comment as the handler reads it: its first command line, parsed."""
    lines = command_lines(body, bot)
    return parse_line(lines[0][1], bot) if lines else None


def rb(text: str) -> ReleaseBranch:
    return ReleaseBranch(Version(text))


def test_a_full_command() -> None:
    body = (
        "LGTM, picking it.\n"
        "@relforge-bot cherry-pick --onto release/2.9 --onto=release/2.10 "
        f"--fixes {FIXES} -c critical\n"
        "@relforge-bot help"
    )
    command = parse_comment(body)
    assert command == CherryPickCommand(
        onto=(rb("2.9"), rb("2.10")), category=Category.CRITICAL, fixes=parse_issue_link(FIXES)
    )
    assert isinstance(command, CherryPickCommand)
    assert [o.name for o in command.onto] == ["release/2.9", "release/2.10"]
    assert command.fixes is not None and command.fixes.url == FIXES


def test_forms_and_names() -> None:
    assert parse_comment("@relforge-bot help") == HelpCommand()
    assert parse_comment("@relforge-bot cherry-pick --help") == HelpCommand()
    assert parse_comment("no mention here") is None
    assert parse_comment("@relforge-botty help") is None
    assert parse_comment(" @relforge-bot help") is None  # indented: code, not a command
    assert command_lines("x\n@relforge-bot\ty") == [(2, "@relforge-bot\ty")]
    docs = parse_comment("@relforge-bot cherry-pick --classification=docs --onto 'release/3.0'")
    assert docs == CherryPickCommand(onto=(rb("3.0"),), category=Category.DOCS, fixes=None)
    assert parse_comment("@picker help", bot="picker") == HelpCommand()
    assert parse_comment("@relforge-bot help", bot="picker") is None
    ghe = parse_issue_link("https://GHE.Example.com/a/b.c/pull/12")
    assert ghe.kind == "pull" and ghe.url == "https://ghe.example.com/a/b.c/pull/12"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("@relforge-bot", "no command given"),
        ("@relforge-bot frobnicate", "unknown command 'frobnicate'"),
        ("@relforge-bot help me", "help takes no arguments"),
        ("@relforge-bot cherry-pick -c docs", "--onto release/X.Y is required"),
        ("@relforge-bot cherry-pick --onto release/2.9", "-c is required"),
        ("@relforge-bot cherry-pick --onto release/2.9 -c", "-c needs a value"),
        ("@relforge-bot cherry-pick --onto release/2.9 -c regression", "needs --fixes"),
        ("@relforge-bot cherry-pick --onto release/2.9 -c fix", "'fix' is not a category"),
        ("@relforge-bot cherry-pick --onto release/2.9 -c docs -x", "unexpected argument '-x'"),
        ("@relforge-bot cherry-pick --onto 'release/2.9", "No closing quotation"),
        ("@relforge-bot cherry-pick --onto release/2.9\x07 -c docs", "printable ASCII"),
        ("@relforge-bot cherry-pick --onto release/2.9 " + "x" * 1000, "longer than"),
    ],
)
def test_errors(line: str, message: str) -> None:
    with pytest.raises(GrammarError, match=re.escape(message)):
        parse_comment(line)


@pytest.mark.parametrize(
    "value",
    [
        "release/2.9; rm -rf /",
        "release/$(id)",
        "release/2.9`id`",
        "release/2.09",
        "release/v2.9",
        "release/2.9.0",
        "release/2",
        "release/2.9rc1",
        "release/2.9+local",
        "release/1!2.9",
        "release/ 2.9",
        "release/2.9/x",
        "Release/2.9",
        "refs/heads/release/2.9",
        "release/-2.9",
        "main",
    ],
)
def test_bad_release_branches(value: str) -> None:
    with pytest.raises(GrammarError, match=r"is not a release branch like release/2\.9"):
        parse_release_branch(value)


def test_release_branch_hint() -> None:
    with pytest.raises(GrammarError) as info:
        parse_release_branch("release/2.9.1")
    assert info.value.hint == "write the version as X.Y, e.g. release/2.9"


@pytest.mark.parametrize(
    "value",
    [
        "http://github.com/a/b/issues/1",
        "https://github.com/a/b/issues/1?x=1",
        "https://github.com/a/b/issues/1#c",
        "https://github.com/a/b/issues/01",
        "https://github.com/a/b/issues/x",
        "https://github.com/a/b/commits/1",
        "https://github.com/a/b/issues/1/",
        "https://github.com/a/../issues/1",
        "https://github.com:8443/a/b/issues/1",
        "https://u:p@github.com/a/b/issues/1",
        'https://github.com/a/b/issues/1"',
        "https://github.com/a/b%20c/issues/1",
        "https://localhost/a/b/issues/1",
        "https://-x.com/a/b/issues/1",
        "javascript:alert(1)",
        "file:///etc/passwd",
        "https://github.com/a/b/issues/1 x",
        "",
    ],
)
def test_bad_fixes_links(value: str) -> None:
    with pytest.raises(GrammarError, match="is not a link to an issue or pull request"):
        parse_issue_link(value)


@given(st.text(max_size=60))
def test_any_comment_either_parses_to_validated_values_or_raises(tail: str) -> None:
    try:
        command = parse_comment(f"@relforge-bot cherry-pick {tail}")
    except GrammarError:
        return
    assert isinstance(command, CherryPickCommand | HelpCommand)
    if isinstance(command, CherryPickCommand):
        for onto in command.onto:
            assert parse_release_branch(onto.name) == onto
        if command.fixes:
            assert parse_issue_link(command.fixes.url) == command.fixes


def test_categories() -> None:
    assert [c.value for c in Category if c.needs_fixes] == [
        "regression",
        "critical",
        "fixnewfeature",
    ]
    assert Category.FIXNEWFEATURE.label == "Fixnewfeature"
    assert "-c {regression,critical,fixnewfeature,docs,release}" in usage()
    # No usage line starts with the mention, so the bot never reads its own replies.
    assert command_lines(usage()) == []


def _issue(
    number: int, title: str, *, state: str = "open", label: str = "release tracker"
) -> Issue:
    return Issue(
        number=number,
        title=title,
        state=state,
        labels=(label,),
        html_url=f"https://h/{number}",
        is_pull_request=False,
        milestone=None,
    )


@pytest.mark.parametrize(
    ("title", "version"),
    [
        ("[v2.9.0] Release Tracker", "2.9.0"),
        ("[v.2.1.0] Release Tracker", "2.1.0"),
        ("[V2.14.1] Release Tracker", "2.14.1"),
        ("Release tracker for 2.9", "2.9"),
        ("Release Tracker (2.10.0)", "2.10.0"),
        ("Release Tracker", None),
        ("[v2] Release Tracker", None),
        ("[vnext] tracker", None),
    ],
)
def test_title_versions(title: str, version: str | None) -> None:
    found = title_version(title)
    assert (str(found) if found else None) == version


def test_tracker_is_chosen_by_version_never_by_substring() -> None:
    issues = [
        _issue(1, "[v2.14.0] Release Tracker"),
        _issue(2, "[v2.1.0] Release Tracker", state="closed"),
        _issue(3, "[v2.1.0] Release Tracker", label="bug"),
        _issue(4, "[v.2.1.0] Release Tracker"),
        _issue(5, "[v2.1.1] Release Tracker"),
    ]
    assert pick_tracker(issues, rb("2.14"), "release tracker") == issues[0]
    assert pick_tracker(issues, rb("2.1"), "release tracker") == issues[4]  # newest patch
    assert pick_tracker(issues[:4], rb("2.1"), "release tracker") == issues[3]
    assert pick_tracker(issues, rb("2.11"), "release tracker") is None


def test_tracker_comment_format() -> None:
    common = {"source_url": "https://h/o/r/pull/1", "pick_url": "https://h/o/r/pull/2"}
    link = parse_issue_link(FIXES)
    assert tracker_comment(category=Category.CRITICAL, fixes=link, **common) == (
        "Link to landed trunk PR (if applicable):\n* https://h/o/r/pull/1\n\n"
        "Link to release branch PR:\n* https://h/o/r/pull/2\n\n"
        f"Criteria Category:\nCritical - {FIXES}"
    )
    assert tracker_comment(category=Category.RELEASE, fixes=None, **common).endswith(
        "Criteria Category:\nRelease"
    )


@pytest.mark.parametrize("text", ["a`b", "``", "`x", "x```y", "plain"])
def test_code_spans_and_blocks_cannot_be_closed_by_their_text(text: str) -> None:
    span = code(text)
    fence = span[: len(span) - len(span.lstrip("`"))]
    assert fence not in text and span.endswith(fence)
    fenced = block(f"{text}\n```\n@relforge-bot cherry-pick")
    first = fenced.splitlines()[0].removesuffix("text")
    assert first not in f"{text}\n```" and fenced.endswith("\n" + first)


@pytest.mark.parametrize(
    ("url", "repo"),
    [
        ("https://github.com/acme/widget.git", "acme/widget"),
        ("https://github.com/acme/widget", "acme/widget"),
        ("git@github.com:acme/widget.git", "acme/widget"),
        ("ssh://git@github.com/acme/widget.git", "acme/widget"),
        ("https://x-access-token@github.com/pytorch/pytorch", "pytorch/pytorch"),
        ("/srv/git/origin.git", None),
        ("../origin.git", None),
        ("file:///srv/acme/widget.git", None),
        ("https://github.com/acme", None),
        ("https://gitlab.com/acme/widget.git", None),
        ("https://ghe.example/acme/widget.git", None),
    ],
)
def test_repo_from_url(url: str, repo: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    # one rule for the bot, release cut and upstream PRs: github.com or the workflow's own server
    monkeypatch.delenv("GITHUB_SERVER_URL", raising=False)
    assert repo_from_url(url) == repo


def test_repo_from_url_on_github_enterprise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://GHE.example")
    assert repo_from_url("https://ghe.example/acme/widget.git") == "acme/widget"
    assert repo_from_url("git@ghe.example:acme/widget.git") == "acme/widget"
    assert repo_from_url("https://github.com/acme/widget") == "acme/widget"
    assert repo_from_url("https://gitlab.com/acme/widget") is None


_GOOD_EVENT = {
    "action": "created",
    "issue": {"number": 12, "pull_request": {"url": "u"}},
    "comment": {"id": 7, "body": "@relforge-bot help", "user": {"login": "alice"}},
    "repository": {"full_name": "acme/widget"},
}


@pytest.mark.parametrize(
    "change",
    [
        {"repository": "acme/widget"},
        {"repository": {"full_name": ["acme/widget"]}},
        {"issue": {"number": 1e400}},
        {"issue": {"number": 12.5}},
        {"issue": {"number": True}},
        {"issue": {"number": "12"}},
        {"issue": "12"},
        {"comment": {"id": 7, "body": ["@relforge-bot help"], "user": {"login": "alice"}}},
        {"comment": {"id": 7, "body": "x", "user": {"login": 5}}},
        {"comment": {"id": 7, "body": "x", "user": "alice"}},
        {"action": {"created": True}},
    ],
)
def test_malformed_events_are_config_errors(change: dict[str, object]) -> None:
    from relforge.bot.handler import CommentEvent
    from relforge.errors import ConfigError

    assert CommentEvent.from_payload(_GOOD_EVENT).number == 12
    with pytest.raises(ConfigError, match="not an issue_comment event payload"):
        CommentEvent.from_payload({**_GOOD_EVENT, **change})


@pytest.mark.parametrize(
    ("body", "lines"),
    [
        ("@relforge-bot help", [1]),
        ("```\n@relforge-bot help\n```\n@relforge-bot help", [4]),
        ("````\n```\n@relforge-bot help\n````\n", []),  # a shorter fence does not close it
        ("~~~\n@relforge-bot help\n```\n@relforge-bot help\n~~~", []),  # ``` does not close ~~~
        ("   ```python\n@relforge-bot help\n   ```\n@relforge-bot help", [4]),
        ("    ```\n@relforge-bot help", [2]),  # 4 spaces: not a fence
        ("> @relforge-bot help\n>@relforge-bot help", []),
        ("@relforge-bot help\ntext\n@relforge-bot help", [1, 3]),
        ("```\n@relforge-bot help", []),  # an unclosed fence runs to the end
        # an HTML comment is not rendered: a command in it is invisible, so it is no command
        ("Thanks!\n<!--\n@relforge-bot help\n-->\n@relforge-bot help", [5]),
        ("<!-- note -->\n@relforge-bot help", [2]),
        ("text <!--\n@relforge-bot help\n--> more\n@relforge-bot help", [4]),
        ("<!--\n```\n-->\n@relforge-bot help", [4]),  # a fence inside a comment opens nothing
        ("<!-- unclosed\n@relforge-bot help", []),
        ("@relforge-bot help <!-- why -->", [1]),
        ("Type `<!--` to hide text\n@relforge-bot help", [2]),  # in a code span: no comment
        ("``a`<!--`` x\n@relforge-bot help", [2]),
        # only CR, LF and CRLF end a line in Markdown; U+2028, VT, FF, NEL do not
        ("see\u2028@relforge-bot help", []),
        ("see\x0b@relforge-bot help\x85@relforge-bot help", []),
        ("see\r@relforge-bot help\r\n@relforge-bot help", [2, 3]),
    ],
)
def test_command_lines_skip_code_blocks_and_quotes(body: str, lines: list[int]) -> None:
    assert [n for n, _ in command_lines(body)] == lines


def test_revert_command() -> None:
    assert parse_comment("@relforge-bot revert") == RevertCommand()
    command = parse_comment("@relforge-bot revert --onto release/2.9 --onto=release/2.10")
    assert isinstance(command, RevertCommand)
    assert [b.name for b in command.onto] == ["release/2.9", "release/2.10"]
    for bad in ("--onto main", "--onto", "-c docs", "--onto release/2.9 --onto release/2.9"):
        with pytest.raises(GrammarError):
            parse_comment(f"@relforge-bot revert {bad}")
