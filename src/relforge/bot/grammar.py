"""The bot's command grammar.  The first line of a comment that starts with `@BOT` is one of

    @BOT cherry-pick --onto release/X.Y [--onto release/X.Z ...] [--fixes URL] -c CATEGORY
    @BOT revert [--onto release/X.Y ...]
    @BOT help

Only the first such line counts; lines in fenced code blocks or `>` quotes are not commands.

Values are tokenized like a POSIX shell (quotes group words) but never reach one: every value is
validated here — release branches by `packaging`, links by their GitHub issue/PR shape — and
what the rest of the bot uses is rebuilt from the parsed parts, not the user's text.
"""

from __future__ import annotations

import enum
import re
import shlex
import string
from dataclasses import dataclass
from urllib.parse import urlsplit

from packaging.version import InvalidVersion, Version

from relforge.errors import UsageError

DEFAULT_BOT = "relforge-bot"
_NAME_CHARS = frozenset(string.ascii_letters + string.digits + "-_.")
_HOST_CHARS = frozenset(string.ascii_lowercase + string.digits + "-.")
_MAX_LINE = 1000
_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")  # an inline code span (CommonMark)
_LINE_END = re.compile(r"\r\n|\r|\n")  # what ends a line in Markdown (CommonMark)


class Category(enum.Enum):
    """Why a fix may go onto a release branch (the release's cherry-pick criteria)."""

    REGRESSION = "regression"
    CRITICAL = "critical"
    FIXNEWFEATURE = "fixnewfeature"
    DOCS = "docs"
    RELEASE = "release"

    @property
    def needs_fixes(self) -> bool:
        """Whether the category must name the issue it fixes (`--fixes URL`)."""
        match self:
            case Category.REGRESSION | Category.CRITICAL | Category.FIXNEWFEATURE:
                return True
            case Category.DOCS | Category.RELEASE:
                return False

    @property
    def label(self) -> str:
        """How the release tracker writes the category ("Regression", "Fixnewfeature", …)."""
        return self.value.capitalize()


CATEGORY_NAMES = tuple(c.value for c in Category)


@dataclass(frozen=True, order=True)
class ReleaseBranch:
    """A release branch `release/X.Y`."""

    version: Version

    @property
    def name(self) -> str:
        return f"release/{self.version}"

    @property
    def slug(self) -> str:
        """The branch name with `/` replaced, for names built from it."""
        return f"release-{self.version}"

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, kw_only=True)
class IssueLink:
    """A link to a GitHub issue or pull request, rebuilt from its validated parts."""

    host: str
    owner: str
    repo: str
    kind: str  # "issues" or "pull"
    number: int

    @property
    def url(self) -> str:
        return f"https://{self.host}/{self.owner}/{self.repo}/{self.kind}/{self.number}"

    def __str__(self) -> str:
        return self.url


@dataclass(frozen=True, kw_only=True)
class CherryPickCommand:
    onto: tuple[ReleaseBranch, ...]
    category: Category
    fixes: IssueLink | None

    def summary(self) -> str:
        text = f"category {self.category.value}"
        return text + (f", fixes {self.fixes}" if self.fixes else "")


@dataclass(frozen=True)
class HelpCommand:
    pass


@dataclass(frozen=True, kw_only=True)
class RevertCommand:
    """Propagate the revert this PR made on main to the release branches that hold a pick of
    the reverted PR (all of them, or those named by --onto)."""

    onto: tuple[ReleaseBranch, ...] = ()


Command = CherryPickCommand | HelpCommand | RevertCommand


class GrammarError(UsageError):
    """A comment command the bot cannot accept (exit 2); the bot quotes it in its reply."""


def usage(bot: str = DEFAULT_BOT) -> str:
    return (
        f"usage: @{bot} cherry-pick --onto release/X.Y [--onto release/X.Z ...] [--fixes URL] "
        f"-c {{{','.join(CATEGORY_NAMES)}}}\n"
        f"       @{bot} revert [--onto release/X.Y ...]   (on a merged revert PR)\n"
        f"       @{bot} help\n"
        "regression, critical and fixnewfeature need --fixes with a link to the issue it fixes "
        "(https://github.com/OWNER/REPO/issues/N)."
    )


def show(value: str, limit: int = 80) -> str:
    """A user's value for an error message: quoted, escapes visible, length bounded."""
    return repr(value if len(value) <= limit else value[:limit] + "...")


def command_lines(body: str, bot: str = DEFAULT_BOT) -> list[tuple[int, str]]:
    """The lines of a comment that start with `@BOT` (followed by a space or nothing), with
    their line numbers (from 1).  Lines inside a fenced code block (``` or ~~~) are not
    commands, and neither are quoted ones (`> @BOT …`): they show or cite a command.  Text
    inside an HTML comment (`<!-- … -->`) is not rendered, so it is never a command either.
    Lines end where Markdown ends them (LF, CR, CRLF), not at U+2028 and the like."""
    mention = f"@{bot}"
    found = []
    fence: str | None = None
    hidden = False  # inside an HTML comment
    for number, raw in enumerate(_LINE_END.split(body), start=1):
        line = raw
        if hidden:
            end = line.find("-->")
            if end < 0:
                continue
            hidden, line = False, line[end + 3 :]
        line = line.rstrip()
        opener = line.lstrip(" ")
        if len(line) - len(opener) <= 3 and opener[:3] in ("```", "~~~"):
            marker = opener[0] * (len(opener) - len(opener.lstrip(opener[0])))
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence) and marker == opener:
                fence = None  # a closing fence: the same character, at least as long
            continue
        if fence is not None:
            continue
        line, hidden = _strip_html_comments(line)
        line = line.rstrip()
        if line == mention or (line.startswith(mention) and line[len(mention)].isspace()):
            found.append((number, line.strip()))
    return found


def _strip_html_comments(line: str) -> tuple[str, bool]:
    """`line` without its HTML comments, and whether one stays open at its end.  A `<!--`
    inside a code span (`` `<!--` ``) is text, not a comment."""
    while (start := _CODE_SPAN.sub(lambda m: " " * len(m[0]), line).find("<!--")) >= 0:
        end = line.find("-->", start + 4)
        if end < 0:
            return line[:start], True
        line = line[:start] + line[end + 3 :]
    return line, False


def parse_line(line: str, bot: str = DEFAULT_BOT) -> Command:
    if len(line) > _MAX_LINE:
        raise GrammarError(f"the command is longer than {_MAX_LINE} characters")
    if not line.isascii() or any(not ch.isprintable() for ch in line):
        raise GrammarError("the command may hold printable ASCII characters only")
    try:
        words = shlex.split(line, comments=False, posix=True)
    except ValueError as exc:
        raise GrammarError(f"cannot split the command into words: {exc}") from None
    words = words[1:]  # the mention
    if not words:
        raise GrammarError("no command given")
    match words[0]:
        case "help" | "--help" | "-h":
            if words[1:]:
                raise GrammarError(f"help takes no arguments, got {show(' '.join(words[1:]))}")
            return HelpCommand()
        case "cherry-pick":
            return parse_cherry_pick(words[1:])
        case "revert":
            return parse_revert(words[1:])
        case other:
            raise GrammarError(f"unknown command {show(other)} (known: cherry-pick, revert, help)")


def parse_revert(args: list[str]) -> Command:
    onto: list[ReleaseBranch] = []
    rest = list(args)
    while rest:
        word = rest.pop(0)
        flag, eq, inline = word.partition("=")
        if flag in ("-h", "--help") and not eq:
            return HelpCommand()
        if flag != "--onto":
            raise GrammarError(f"unexpected argument {show(word)}")
        if not eq and not rest:
            raise GrammarError("--onto needs a value")
        branch = parse_release_branch(inline if eq else rest.pop(0))
        if branch in onto:
            raise GrammarError(f"--onto {branch} is given twice")
        onto.append(branch)
    return RevertCommand(onto=tuple(onto))


def parse_cherry_pick(args: list[str]) -> Command:
    onto: list[ReleaseBranch] = []
    fixes: str | None = None
    category: str | None = None
    rest = list(args)
    while rest:
        word = rest.pop(0)
        flag, eq, inline = word.partition("=")
        if flag in ("-h", "--help") and not eq:
            return HelpCommand()
        if flag not in ("--onto", "--fixes", "-c", "--classification"):
            raise GrammarError(f"unexpected argument {show(word)}")
        if eq:
            value = inline
        elif rest:
            value = rest.pop(0)
        else:
            raise GrammarError(f"{flag} needs a value")
        if flag == "--onto":
            branch = parse_release_branch(value)
            if branch in onto:
                raise GrammarError(f"--onto {branch} is given twice")
            onto.append(branch)
        elif flag == "--fixes":
            if fixes is not None:
                raise GrammarError("--fixes is given twice")
            fixes = value
        else:
            if category is not None:
                raise GrammarError("-c is given twice")
            category = value
    if not onto:
        raise GrammarError("--onto release/X.Y is required")
    if category is None:
        raise GrammarError(f"-c is required (one of {', '.join(CATEGORY_NAMES)})")
    return make_command(onto=onto, category=category, fixes=fixes)


def make_command(
    *, onto: list[ReleaseBranch], category: str, fixes: str | None
) -> CherryPickCommand:
    """Check the category and --fixes together (shared by the comment grammar and the CLI)."""
    try:
        cat = Category(category)
    except ValueError:
        raise GrammarError(
            f"-c {show(category)} is not a category (one of {', '.join(CATEGORY_NAMES)})"
        ) from None
    link = parse_issue_link(fixes) if fixes is not None else None
    if cat.needs_fixes and link is None:
        raise GrammarError(
            f"-c {cat.value} needs --fixes with a link to the issue it fixes",
            hint="e.g. --fixes https://github.com/OWNER/REPO/issues/123",
        )
    return CherryPickCommand(onto=tuple(onto), category=cat, fixes=link)


def parse_release_branch(value: str) -> ReleaseBranch:
    """`release/X.Y` with X.Y a canonical version of exactly two numbers."""
    prefix, _, rest = value.partition("/")
    problem = f"--onto {show(value)} is not a release branch like release/2.9"
    if prefix != "release" or not rest or not rest.isascii() or not rest[0].isdigit():
        raise GrammarError(problem)
    try:
        version = Version(rest)
    except InvalidVersion:
        raise GrammarError(problem) from None
    canonical = ".".join(str(n) for n in version.release)  # no epoch, pre, post, dev or local
    if len(version.release) != 2 or not rest == str(version) == canonical:
        major, minor = (*version.release, 0)[:2]
        raise GrammarError(problem, hint=f"write the version as X.Y, e.g. release/{major}.{minor}")
    return ReleaseBranch(version)


def parse_issue_link(value: str) -> IssueLink:
    """An https link to an issue or pull request: https://HOST/OWNER/REPO/{issues,pull}/N."""
    problem = (
        f"--fixes {show(value)} is not a link to an issue or pull request like "
        "https://github.com/OWNER/REPO/issues/N"
    )
    if not value.isascii() or any(ch.isspace() or ch in "\"'`<>\\" for ch in value):
        raise GrammarError(problem)
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise GrammarError(problem) from None
    host = parts.hostname or ""
    segments = parts.path.split("/")
    valid = (
        parts.scheme == "https"
        and port is None
        and parts.username is None
        and parts.password is None
        and not parts.query
        and not parts.fragment
        and host == parts.netloc.lower()
        and _is_host(host)
        and len(segments) == 5
        and segments[0] == ""
        and all(_is_name(s) for s in segments[1:3])
        and segments[3] in ("issues", "pull")
        and segments[4].isdigit()
        and not segments[4].startswith("0")
    )
    if not valid:
        raise GrammarError(problem)
    return IssueLink(
        host=host, owner=segments[1], repo=segments[2], kind=segments[3], number=int(segments[4])
    )


def _is_host(host: str) -> bool:
    labels = host.split(".")
    return (
        len(labels) >= 2
        and set(host) <= _HOST_CHARS
        and all(label and not label.startswith("-") and not label.endswith("-") for label in labels)
    )


def _is_name(name: str) -> bool:
    return bool(name) and set(name) <= _NAME_CHARS and name not in (".", "..")
