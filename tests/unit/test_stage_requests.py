"""One shape for stage entry points: `entry(request)`, where the request is a frozen,
keyword-only dataclass the stage's front door exports and names, built by the CLI command.
A live collaborator (git, a store, the index, a lease scope) stays an argument of its own."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import typing
from pathlib import Path

import pytest

from relforge.builders import BuildRequest, plan_build
from relforge.errors import UsageError
from relforge.matrix import load_matrix
from relforge.promote import PromoteRequest, PublishRequest, YankRequest
from tests.conftest import EXAMPLE, REPO

# (front door, entry point, its request class, the collaborators it keeps beside the request)
ENTRIES = [
    ("relforge.builders", "plan_build", "BuildRequest", ()),
    ("relforge.promote", "plan_publish", "PublishRequest", ("lease",)),
    ("relforge.promote", "plan_promote", "PromoteRequest", ("lease",)),
    ("relforge.promote", "plan_yank", "YankRequest", ("lease",)),
    ("relforge.promote", "plan_stage", "StageRequest", ()),
    ("relforge.promote", "plan_pypi_upload", "UploadRequest", ()),
    ("relforge.promote", "plan_channel_index", "IndexRequest", ("lease",)),
    ("relforge.upstream", "check_upstream", "UpstreamRequest", ("index",)),
    ("relforge.upstream", "plan_upstream_update", "UpdateRequest", ()),
    ("relforge.deps", "plan_mirror", "MirrorRequest", ("store",)),
    ("relforge.deps", "check_channel", "DepsCheckRequest", ("echo",)),
    ("relforge.promote", "check_channel", "VerifyRequest", ()),
    ("relforge.init", "plan_starter", "StarterRequest", ()),
    ("relforge.site", "build_site", "SiteRequest", ()),
    ("relforge.bot", "plan_picks", "PickRequest", ("git", "gh", "settings")),
    ("relforge.variants", "plan_variants", "VariantRequest", ("store", "workdir")),
    ("relforge.release", "plan_cut", "CutRequest", ("git",)),
    ("relforge.release", "plan_tag", "TagRequest", ("git",)),
    ("relforge.release", "release_status", "StatusRequest", ("git",)),
    ("relforge.release", "audit_release", "AuditRequest", ("git",)),
]


@pytest.mark.parametrize(("package", "entry", "request_name", "kept"), ENTRIES)
def test_an_entry_point_takes_its_request(
    package: str, entry: str, request_name: str, kept: tuple[str, ...]
) -> None:
    module = importlib.import_module(package)
    assert entry in module.__all__ and request_name in module.__all__
    assert entry in (module.__doc__ or "") and request_name in (module.__doc__ or "")
    request = getattr(module, request_name)
    params = request.__dataclass_params__  # before is_dataclass narrows `request`
    assert dataclasses.is_dataclass(request)
    assert params.frozen, request_name
    assert all(f.kw_only for f in dataclasses.fields(request)), request_name
    function = getattr(module, entry)
    hints = typing.get_type_hints(function)
    names = list(inspect.signature(function).parameters)
    takes = [n for n in names if hints[n] is request]
    assert len(takes) == 1, (entry, names)
    assert sorted(set(names) - set(takes)) == sorted(kept), entry


def test_a_request_is_frozen_and_keyword_only(tmp_path: Path) -> None:
    matrix = load_matrix(EXAMPLE)
    request = PublishRequest(matrix=matrix, manifest_path=tmp_path / "manifest.json", channel=None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.channel = "test"  # type: ignore[misc]  # the point: it cannot be changed
    with pytest.raises(TypeError):
        PublishRequest(matrix, tmp_path / "manifest.json")  # type: ignore[call-arg]  # positional


def test_the_requests_keep_the_defaults_the_keywords_had(tmp_path: Path) -> None:
    matrix = load_matrix(EXAMPLE)
    publish = PublishRequest(matrix=matrix, manifest_path=tmp_path / "m.json", channel=None)
    assert (publish.channel, publish.workers, publish.partial, publish.index) == (
        None,
        32,
        False,
        True,
    )
    promote = PromoteRequest(matrix=matrix, version="1.0.0", source="test", target="release")
    assert (promote.manifest_path, promote.manifest_digest, promote.workers) == (None, None, 32)
    yank = YankRequest(matrix=matrix, version="1.0.0", reason="broken")
    assert (yank.undo, yank.cells, yank.channels, yank.workers) == (False, (), (), 16)


def test_a_request_still_refuses_what_the_keywords_refused(tmp_path: Path) -> None:
    from relforge.matrix import parse_selector

    request = BuildRequest(
        matrix=load_matrix(EXAMPLE),
        matrix_file=str(EXAMPLE),
        release="1.0",
        channel="test",
        cell_ids=["wheel-linux-x86_64-py3.12-cpu"],
        selectors=[parse_selector("os=linux")],
        out=tmp_path / "dist",
        state=tmp_path / ".relforge",
    )
    with pytest.raises(UsageError) as info:
        plan_build(request)
    assert info.value.key == "--cell"


def test_the_cli_hands_each_entry_point_its_request_and_nothing_more() -> None:
    """Every call of a converted entry point in src/relforge/cli passes no keywords: what the
    command asks for travels in the request."""
    entries: dict[str, int] = {}
    for _, entry, _, kept in ENTRIES:  # check_channel: deps' and promote's, one name
        entries[entry] = max(entries.get(entry, 0), len(kept))
    calls = []
    for path in sorted((REPO / "src" / "relforge" / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in entries
            ):
                calls.append(node.func.id)
                where = f"{path.name}:{node.lineno}"
                assert not node.keywords, f"{where} calls {node.func.id} with keywords"
                assert len(node.args) <= 1 + entries[node.func.id], f"{where}: too many arguments"
    assert set(calls) == set(entries)  # each is called by a command
