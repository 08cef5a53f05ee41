"""Each command resolves the matrix's publishing once and passes it down: the main store is
opened once, the trust read once, and each release's cells expanded once per channel, however
many modules read them (relforge.promote.publishing).  Counted on real commands in-process."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import relforge.matrix.expand
import relforge.matrixstores
from tests.conftest import Result
from tests.promote_kit import build_wheel, matrix_text, write_manifest

pytestmark = pytest.mark.slow
CPU = "wheel-linux-x86_64-py3.11-cpu"


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[tuple[str, ...]]]:
    seen: Counter[tuple[str, ...]] = Counter()
    expand = relforge.matrix.expand.expand_cells
    main_store = relforge.matrixstores.main_store
    trust = relforge.matrixstores.trust

    def counting_expand(matrix: Any, release: str, **kw: Any) -> Any:
        seen["expand", release, str(kw.get("channel"))] += 1
        return expand(matrix, release, **kw)

    def counting_store(matrix: Any) -> Any:
        seen["main store",] += 1
        return main_store(matrix)

    def counting_trust(matrix: Any) -> Any:
        seen["trust",] += 1
        return trust(matrix)

    # where the context finds them (each module holds its own reference)
    monkeypatch.setattr("relforge.promote.cells.expand_cells", counting_expand)
    monkeypatch.setattr("relforge.promote.publishing.main_store", counting_store)
    monkeypatch.setattr("relforge.promote.publishing.trust", counting_trust)
    yield seen


def test_publish_index_promote_and_verify_resolve_once(
    tmp_path: Path,
    run: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
    counted: Counter[tuple[str, ...]],
) -> None:
    monkeypatch.chdir(tmp_path)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(matrix_text(), encoding="utf-8")
    wheel = build_wheel(tmp_path / "build", version="1.0.0+cpu", plat="manylinux_2_28_x86_64")
    manifest = tmp_path / "build" / "relforge-manifest.json"
    write_manifest(manifest, {CPU: wheel})
    commands = {
        "publish": ["publish", str(matrix), "--channel", "test", "--manifest", str(manifest)],
        "index": ["index", str(matrix), "--channel", "test", "--partial"],
        "verify": ["verify", str(matrix), "--channel", "test"],
        "promote": ["promote", str(matrix), "--version", "1.0.0", "--from", "test", "--partial"],
    }
    for name, argv in commands.items():
        counted.clear()
        extra = ["--partial", "--execute"] if name == "publish" else []
        result = run(*argv, *extra)
        assert result.code == 0, (name, result.err)
        expansions = {k: n for k, n in counted.items() if k[0] == "expand"}
        assert expansions, name  # the counter sees the commands' expansions
        assert set(expansions.values()) == {1}, (name, expansions)
        assert counted["main store",] == 1, (name, counted)
        assert counted["trust",] <= 1, (name, counted)
