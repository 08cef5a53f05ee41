"""Serving a store: `relforge store policy` applied to a real (moto) bucket lets anonymous
clients read the channels and nothing else; `publish`/`index` warn when project.download_url
does not serve the pages they wrote."""

from __future__ import annotations

import json
import socket
import textwrap
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import Result
from tests.integration.conftest import S3, free_port, pip_install
from tests.promote_kit import matrix_text, release_wheels, write_manifest

Run = Callable[..., Result]
pytestmark = pytest.mark.slow


def _matrix(tmp_path: Path, publishing: str, download_url: str = "") -> Path:
    text = matrix_text(textwrap.dedent(publishing))
    if download_url:
        text = text.replace(
            "  size_limit_mb: 5\n", f"  size_limit_mb: 5\n  download_url: {download_url}\n"
        )
    path = tmp_path / "matrix.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_policy_serves_channels_and_hides_manifests_on_moto(
    tmp_path: Path, s3: S3, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    client: Any = s3.client()
    bucket = f"rf-private-{uuid.uuid4().hex[:8]}"  # no policy at all, unlike the fixture's
    client.create_bucket(Bucket=bucket)
    matrix = _matrix(
        tmp_path,
        f"""\
        publishing:
          store: s3://{bucket}/dl
          s3_endpoint_url: {s3.endpoint}
        """,
        download_url=f"{s3.endpoint}/{bucket}/dl",  # the REST endpoint, path-style
    )
    manifest = tmp_path / "work" / "relforge-manifest.json"
    write_manifest(manifest, release_wheels(tmp_path / "work"))
    done = run(
        "publish", str(matrix), "--channel", "test", "--manifest", str(manifest), "--execute"
    )
    assert done.code == 0, done.err
    # published, but nobody may read it yet: a warning pointing at `store policy`
    assert "HTTP 403" in done.err and "relforge store policy" in done.err
    client.put_object(Bucket=bucket, Key="dl/backup/rfdemo/1.0.0/x.whl", Body=b"backup")
    client.put_object(Bucket=bucket, Key="dl/pypi-staging/1.0.0/x.whl", Body=b"staged")
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=bucket)["Contents"]]
    (stored_manifest,) = [k for k in keys if k.startswith("dl/relforge/manifests/")]
    wheel = "dl/whl/test/cpu/rfdemo-1.0.0+cpu-py3-none-manylinux_2_28_x86_64.whl"
    base = f"{s3.endpoint}/{bucket}"

    def anonymous(key: str) -> int:
        return requests.get(f"{base}/{key}", timeout=10).status_code  # no Authorization header

    # moto enforces bucket policies for anonymous requests: before any policy, all is 403.
    assert anonymous(wheel) == 403 and anonymous(stored_manifest) == 403

    printed = run("store", "policy", str(matrix))
    assert printed.code == 0, printed.err
    policy = json.loads(printed.out)  # stdout is the policy document and nothing else
    (statement,) = policy["Statement"]
    assert statement["Principal"] == "*" and statement["Action"] == "s3:GetObject"
    assert sorted(statement["Resource"]) == [  # whl/ holds every channel of this matrix
        f"arn:aws:s3:::{bucket}/dl/site/*",
        f"arn:aws:s3:::{bucket}/dl/whl/*",
    ]
    client.put_bucket_policy(Bucket=bucket, Policy=printed.out)

    assert anonymous(wheel) == 200
    served = run("index", str(matrix), "--channel", "test", "--execute")
    assert served.code == 0 and "warning" not in served.err, served.err
    assert anonymous("dl/whl/test/cpu/rfdemo/") == 200  # the folder page plain S3 serves
    assert anonymous("dl/whl/test/cpu/rfdemo/index.json") == 200
    for private in (stored_manifest, "dl/backup/rfdemo/1.0.0/x.whl", "dl/pypi-staging/1.0.0/x.whl"):
        assert anonymous(private) == 403, private
    # pip with no credentials at all installs from the REST endpoint
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    assert pip_install(tmp_path, f"{base}/dl/whl/test/cpu/", "rfdemo").endswith("1.0.0+cpu")


@pytest.mark.parametrize(
    ("channels", "why"),
    [
        ("release: {version_scheme: final, prefix: relforge}", "would expose"),
        ("release: {version_scheme: final, prefix: relforge/whl}", "would expose"),
        ("test: {version_scheme: final, prefix: backup}", "would expose"),
    ],
)
def test_policy_refuses_prefixes_that_expose_private_objects(
    tmp_path: Path, run: Run, channels: str, why: str
) -> None:
    text = matrix_text("publishing:\n  store: s3://bucket/dl\n")
    for line in text.splitlines():
        if line.strip().startswith(channels.split(":")[0] + ":"):
            text = text.replace(line, "  " + channels)
    path = tmp_path / "m.yaml"
    path.write_text(text, encoding="utf-8")
    got = run("store", "policy", str(path))
    assert got.code == 5, got.out + got.err
    assert why in got.err and got.out == ""


def test_policy_refuses_a_wildcard_in_the_store_prefix(tmp_path: Path, run: Run) -> None:
    path = tmp_path / "m.yaml"  # (the loader already refuses wildcards in channel prefixes)
    path.write_text(matrix_text("publishing:\n  store: s3://bucket/d*\n"), encoding="utf-8")
    got = run("store", "policy", str(path))
    assert got.code in (2, 5) and "Resource" not in got.out, got.out + got.err


def test_policy_for_cloudfront_and_for_a_local_store(tmp_path: Path, run: Run) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(matrix_text("publishing:\n  store: s3://bucket\n"), encoding="utf-8")
    arn = "arn:aws:cloudfront::123456789012:distribution/EDFDVBD6EXAMPLE"
    got = run("store", "policy", str(path), "--cloudfront-distribution", arn)
    assert got.code == 0, got.err
    (statement,) = json.loads(got.out)["Statement"]
    assert statement["Principal"] == {"Service": "cloudfront.amazonaws.com"}
    assert statement["Condition"] == {"StringEquals": {"AWS:SourceArn": arn}}
    assert "arn:aws:s3:::bucket/whl/*" in statement["Resource"]
    bad = run("store", "policy", str(path), "--cloudfront-distribution", "E123")
    assert bad.code == 2 and "--cloudfront-distribution" in bad.err

    path.write_text(matrix_text("publishing:\n  store: file://store\n"), encoding="utf-8")
    local = run("store", "policy", str(path))
    assert local.code == 2 and "s3://" in local.err and "Traceback" not in local.err


def _closed_port() -> int:
    port = free_port()
    with socket.socket() as s:  # nothing listens there
        s.settimeout(0.2)
        assert s.connect_ex(("127.0.0.1", port)) != 0
    return port


def test_publish_and_index_warn_when_download_url_does_not_serve_the_pages(
    tmp_path: Path,
    run: Run,
    static_server: Callable[[Path], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "store"
    store.mkdir()
    served = static_server(store)
    manifest = tmp_path / "work" / "relforge-manifest.json"
    write_manifest(manifest, release_wheels(tmp_path / "work"))
    publishing = "publishing:\n  store: file://store\n"

    right = _matrix(tmp_path, publishing, download_url=served)
    done = run("publish", str(right), "--channel", "test", "--manifest", str(manifest), "--execute")
    assert done.code == 0, done.err
    assert "warning" not in done.err
    indexed = run("index", str(right), "--channel", "test", "--execute")
    assert indexed.code == 0 and "warning" not in indexed.err

    # another server (serving some other folder): 404 for our pages, a warning, exit 0
    other = tmp_path / "other"
    (other / "whl" / "test" / "cpu").mkdir(parents=True)
    (other / "whl" / "test" / "cpu" / "index.html").write_text("<html>stale</html>")
    wrong = _matrix(tmp_path, publishing, download_url=static_server(other))
    got = run("index", str(wrong), "--channel", "test", "--execute")
    assert got.code == 0, got.err
    assert "does not serve whl/test/cpu/" in got.err and "another page" in got.err
    assert "does not serve whl/test/cu128/" in got.err and "HTTP 404" in got.err

    # a look-alike: the same folder page (it lists only names), another project page
    # (other sha256s): still a warning, naming the project page
    cpu = store / "whl" / "test" / "cpu"
    twin = tmp_path / "twin" / "whl" / "test" / "cpu"
    (twin / "rfdemo").mkdir(parents=True)
    (twin / "index.html").write_bytes((cpu / "index.html").read_bytes())
    page = (cpu / "rfdemo" / "index.html").read_text()
    (twin / "rfdemo" / "index.html").write_text(page.replace("sha256=", "sha256=0"))
    lookalike = _matrix(tmp_path, publishing, download_url=static_server(tmp_path / "twin"))
    got = run("index", str(lookalike), "--channel", "test", "--execute")
    assert got.code == 0 and "whl/test/cpu/rfdemo/ serves another page" in got.err, got.err

    # nothing listens there: one warning (no traceback), and the publish still succeeded
    down = _matrix(
        tmp_path, publishing, download_url=f"http://user:tok@127.0.0.1:{_closed_port()}/dl"
    )
    again = run("publish", str(down), "--channel", "test", "--manifest", str(manifest), "--execute")
    assert again.code == 0, again.err
    assert again.err.count("warning: project.download_url") == 1
    assert "cannot be fetched" in again.err and "tok" not in again.err
    assert "Traceback" not in again.err
