"""The REST routes of the fake GitHub: (method, path) → a handler of the fake's state.  Lists
paginate like GitHub (`per_page`, `page`, a `Link` header with rel="next")."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.fakegithub import FakeGitHub, FakeRepo

Query = dict[str, str]
Handler = Callable[["FakeGitHub", Query, Any, tuple[str, ...]], tuple[int, Any]]


class NotFound(Exception):
    pass


class Unprocessable(Exception):
    pass


BODY_LIMIT = 65536  # GitHub refuses longer comment, issue and pull request bodies (422)


def _body(value: Any) -> str:
    text = str(value or "")
    if len(text) > BODY_LIMIT:
        raise Unprocessable(f"body is too long (maximum is {BODY_LIMIT} characters)")
    return text


def route(
    fake: FakeGitHub, method: str, path: str, query: Query, body: Any, raw_path: str
) -> tuple[int, Any, dict[str, str]]:
    for route_method, pattern, handler in ROUTES:
        match = pattern.fullmatch(path)
        if match and route_method == method:
            try:
                status, data = handler(fake, query, body, match.groups())
            except NotFound:
                return 404, {"message": "Not Found"}, {}
            except Unprocessable as exc:
                error = {"message": "Validation Failed", "errors": [{"message": str(exc)}]}
                return 422, error, {}
            if isinstance(data, list):
                return _page(fake, data, query, raw_path)
            return status, data, {}
    return 404, {"message": "Not Found"}, {}


def _page(
    fake: FakeGitHub, items: list[Any], query: Query, path: str
) -> tuple[int, Any, dict[str, str]]:
    per_page = min(int(query.get("per_page", 30)), fake.max_per_page)
    page = int(query.get("page", 1))
    chunk = items[(page - 1) * per_page : page * per_page]
    headers = {}
    if page * per_page < len(items):
        rest = {**query, "page": str(page + 1), "per_page": str(per_page)}
        link = fake.url + path + "?" + "&".join(f"{k}={v}" for k, v in rest.items())
        headers["Link"] = f'<{link}>; rel="next"'
    return 200, chunk, headers


def _repo(fake: FakeGitHub, name: str) -> FakeRepo:
    if name not in fake.repos:
        raise NotFound
    return fake.repos[name]


def _item(items: dict[int, Any], number: str) -> Any:
    if int(number) not in items:
        raise NotFound
    return items[int(number)]


def get_pull(fake: FakeGitHub, q: Query, b: Any, g: tuple[str, ...]) -> tuple[int, Any]:
    return 200, _item(_repo(fake, g[0]).pulls, g[1])


def pull_commits(fake: FakeGitHub, q: Query, b: Any, g: tuple[str, ...]) -> tuple[int, Any]:
    r = _repo(fake, g[0])
    _item(r.pulls, g[1])
    return 200, list(r.pull_commits.get(int(g[1]), [])[:250])  # GitHub's documented cap


def list_pulls(fake: FakeGitHub, q: Query, b: Any, g: tuple[str, ...]) -> tuple[int, Any]:
    out = []
    for pull in _repo(fake, g[0]).pulls.values():
        state = q.get("state", "open")
        if state != "all" and pull["state"] != state:
            continue
        if "head" in q and pull["head"]["label"] != q["head"]:
            continue
        if "base" in q and pull["base"]["ref"] != q["base"]:
            continue
        out.append(pull)
    return 200, out


def create_pull(fake: FakeGitHub, q: Query, b: Any, g: tuple[str, ...]) -> tuple[int, Any]:
    repo = g[0]
    r = _repo(fake, repo)
    _body(b.get("body"))
    owner = repo.split("/")[0]
    label = b["head"] if ":" in b["head"] else f"{owner}:{b['head']}"
    for pull in r.pulls.values():
        if (
            pull["state"] == "open"
            and pull["head"]["label"] == label
            and pull["base"]["ref"] == b["base"]
        ):
            raise Unprocessable(f"A pull request already exists for {label}.")
    number = fake.add_pull(
        repo,
        b["title"],
        head=label.split(":", 1)[1],
        base=b["base"],
        user="relforge-bot",
        body=b.get("body", ""),
    )
    r.pulls[number]["draft"] = bool(b.get("draft"))
    return 201, r.pulls[number]


def update_pull(fake: FakeGitHub, q: Query, b: Any, g: tuple[str, ...]) -> tuple[int, Any]:
    """PATCH /repos/{owner}/{repo}/pulls/{pull_number}: title, body, state (GitHub's documented
    fields; the issue view of the pull request changes with it)."""
    r = _repo(fake, g[0])
    pull = _item(r.pulls, g[1])
    issue = r.issues[int(g[1])]
    if "body" in b:
        pull["body"] = issue["body"] = _body(b["body"])
    if "title" in b:
        pull["title"] = issue["title"] = str(b["title"])
    if b.get("state") in ("open", "closed"):
        pull["state"] = issue["state"] = b["state"]
    return 200, pull


def get_issue(fake: FakeGitHub, q: Query, b: Any, g: tuple[str, ...]) -> tuple[int, Any]:
    return 200, _item(_repo(fake, g[0]).issues, g[1])


def patch_issue(fake: FakeGitHub, q: Query, b: Any, g: tuple[str, ...]) -> tuple[int, Any]:
    r = _repo(fake, g[0])
    issue = _item(r.issues, g[1])
    if "milestone" in b:
        milestone = None if b["milestone"] is None else r.milestones.get(int(b["milestone"]))
        if b["milestone"] is not None and milestone is None:
            raise Unprocessable("milestone does not exist")
        issue["milestone"] = milestone
        if int(g[1]) in r.pulls:
            r.pulls[int(g[1])]["milestone"] = milestone
    return 200, issue


def list_issues(fake: FakeGitHub, q: Query, b: Any, g: tuple[str, ...]) -> tuple[int, Any]:
    out = []
    wanted = set(filter(None, q.get("labels", "").split(",")))
    for issue in _repo(fake, g[0]).issues.values():
        state = q.get("state", "open")
        if state != "all" and issue["state"] != state:
            continue
        if not wanted <= {label["name"] for label in issue["labels"]}:
            continue
        milestone = q.get("milestone")
        if milestone not in (None, "*"):
            number = issue["milestone"]["number"] if issue["milestone"] else None
            if milestone == "none" and number is not None:
                continue
            if milestone != "none" and number != int(milestone):
                continue
        out.append(issue)
    return 200, out


def issue_events(fake: FakeGitHub, q: Query, b: Any, g: tuple[str, ...]) -> tuple[int, Any]:
    r = _repo(fake, g[0])
    _item(r.issues, g[1])
    return 200, list(r.events.get(int(g[1]), []))


def list_comments(fake: FakeGitHub, q: Query, b: Any, g: tuple[str, ...]) -> tuple[int, Any]:
    r = _repo(fake, g[0])
    _item(r.issues, g[1])
    return 200, list(r.comments.get(int(g[1]), []))


def create_comment(fake: FakeGitHub, q: Query, b: Any, g: tuple[str, ...]) -> tuple[int, Any]:
    from tests.fakegithub import BOT

    r = _repo(fake, g[0])
    issue = _item(r.issues, g[1])
    _body(b["body"])
    cid = r.new_id()
    comment = {
        "id": cid,
        "body": b["body"],
        "user": dict(BOT),
        "html_url": f"{issue['html_url']}#issuecomment-{cid}",
        "url": f"{fake.url}/repos/{g[0]}/issues/comments/{cid}",
    }
    r.comments.setdefault(int(g[1]), []).append(comment)
    return 201, comment


def edit_comment(fake: FakeGitHub, q: Query, b: Any, g: tuple[str, ...]) -> tuple[int, Any]:
    _body(b["body"])
    for comments in _repo(fake, g[0]).comments.values():
        for comment in comments:
            if comment["id"] == int(g[1]):
                comment["body"] = b["body"]
                return 200, comment
    raise NotFound


def add_labels(fake: FakeGitHub, q: Query, b: Any, g: tuple[str, ...]) -> tuple[int, Any]:
    r = _repo(fake, g[0])
    labels = _item(r.issues, g[1])["labels"]
    for name in b.get("labels", []):
        if name not in [label["name"] for label in labels]:
            labels.append({"name": name})
    return 200, labels


def get_milestone(fake: FakeGitHub, q: Query, b: Any, g: tuple[str, ...]) -> tuple[int, Any]:
    return 200, _item(_repo(fake, g[0]).milestones, g[1])


def list_milestones(fake: FakeGitHub, q: Query, b: Any, g: tuple[str, ...]) -> tuple[int, Any]:
    state = q.get("state", "open")
    found = _repo(fake, g[0]).milestones.values()
    return 200, [m for m in found if state == "all" or m["state"] == state]


def permission(fake: FakeGitHub, q: Query, b: Any, g: tuple[str, ...]) -> tuple[int, Any]:
    r = _repo(fake, g[0])
    base, role = r.collaborators.get(g[1], ("none", "none"))
    return 200, {"permission": base, "role_name": role, "user": {"login": g[1], "type": "User"}}


_REPO = r"/repos/([^/]+/[^/]+)"
ROUTES: list[tuple[str, re.Pattern[str], Handler]] = [
    (method, re.compile(_REPO + pattern), handler)
    for method, pattern, handler in [
        ("GET", r"/pulls/(\d+)", get_pull),
        ("GET", r"/pulls/(\d+)/commits", pull_commits),
        ("GET", r"/pulls", list_pulls),
        ("POST", r"/pulls", create_pull),
        ("PATCH", r"/pulls/(\d+)", update_pull),
        ("GET", r"/issues/(\d+)/comments", list_comments),
        ("POST", r"/issues/(\d+)/comments", create_comment),
        ("PATCH", r"/issues/comments/(\d+)", edit_comment),
        ("POST", r"/issues/(\d+)/labels", add_labels),
        ("GET", r"/issues/(\d+)/events", issue_events),
        ("GET", r"/issues/(\d+)", get_issue),
        ("PATCH", r"/issues/(\d+)", patch_issue),
        ("GET", r"/issues", list_issues),
        ("GET", r"/milestones/(\d+)", get_milestone),
        ("GET", r"/milestones", list_milestones),
        ("GET", r"/collaborators/([^/]+)/permission", permission),
    ]
]
