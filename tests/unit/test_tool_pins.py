"""The tools the generated workflows install besides relforge (uv), pinned by version and by the
sha256 of every wheel of it: the package's pins, what a pins file may not say, real pip refusing
other bytes, and scripts/refresh_tool_pins.py against a PEP 691 index served on loopback."""

from __future__ import annotations

import hashlib
import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from relforge.errors import ConfigError
from relforge.workflows.toolpins import TOOL_PINS_NAME, package_tool_pins, parse_tool_pins
from tests.conftest import REPO
from tests.wheelfactory import metadata_wheel

PINS_FILE = REPO / "src" / "relforge" / "resources" / TOOL_PINS_NAME
SCRIPT = REPO / "scripts" / "refresh_tool_pins.py"
# every platform a GitHub-hosted runner (resources/hosted_runners.yaml) may install uv on
HOSTED_PLATFORMS = (
    "manylinux_2_17_x86_64",
    "manylinux_2_17_aarch64",
    "macosx_11_0_arm64",
    "macosx_10_12_x86_64",
    "win_amd64",
    "win_arm64",
)


def test_uv_is_pinned_for_every_hosted_platform() -> None:
    uv = package_tool_pins()["uv"]
    platforms = {
        line.split("#", 1)[1].strip(): line.split("-", 1)[1].split("#", 1)[0].strip()
        for line in PINS_FILE.read_text(encoding="utf-8").splitlines()
        if line.strip().startswith("- ")
    }
    for wanted in HOSTED_PLATFORMS:
        assert any(wanted in tags.split(".") for tags in platforms), wanted
    assert sorted(platforms.values()) == sorted(uv.sha256)
    line = uv.requirement
    assert line.startswith(f"uv=={uv.version} --hash=sha256:")
    assert line.count("--hash=sha256:") == len(uv.sha256)


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        ("uv: {version: 1.0}\n", "uv", "exactly the keys version and sha256"),
        ("uv: {version: one, sha256: [" + "a" * 64 + "]}\n", "uv.version", "PEP 440"),
        ("uv: {version: '1.0', sha256: [abc]}\n", "uv.sha256", "64 lowercase hex"),
        ("uv: {version: '1.0', sha256: []}\n", "uv.sha256", "distinct sha256"),
        (
            "uv: {version: '1.0', sha256: [" + ("b" * 64 + ", ") * 2 + "]}\n",
            "uv.sha256",
            "distinct",
        ),
        ("uv: {version: '1.0', sha256: " + "c" * 64 + "}\n", "uv.sha256", "a list"),
    ],
)
def test_a_pins_file_that_does_not_pin_is_refused(text: str, key: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_tool_pins(text, "pins.yaml")
    assert caught.value.key == key
    assert message in str(caught.value)


def test_not_a_mapping_is_refused() -> None:
    with pytest.raises(ConfigError, match="a mapping of tool"):
        parse_tool_pins("- uv\n", "pins.yaml")


def test_pip_refuses_a_uv_whose_bytes_match_no_pinned_hash(tmp_path: Path) -> None:
    """The step's own command, given another wheel of the pinned version: nothing installed."""
    uv = package_tool_pins()["uv"]
    links = tmp_path / "links"
    links.mkdir()
    metadata_wheel(links, "uv", uv.version)
    requirements = tmp_path / "relforge-uv.txt"
    requirements.write_text(uv.requirement + "\n", encoding="utf-8")
    target = tmp_path / "relforge-uv"
    argv = [sys.executable, "-m", "pip", "--isolated", "install", "--disable-pip-version-check"]
    argv += ["--no-compile", "--only-binary=:all:", "--no-deps", "--require-hashes"]
    argv += ["--no-index", "--find-links", str(links), "--target", str(target)]
    done = subprocess.run(
        [*argv, "-r", str(requirements)], capture_output=True, text=True, check=False
    )
    assert done.returncode != 0
    assert "THESE PACKAGES DO NOT MATCH THE HASHES" in done.stdout + done.stderr
    assert not target.exists() or not any(target.iterdir())


@pytest.fixture
def json_index(tmp_path: Path) -> Iterator[tuple[str, dict[str, list[dict[str, object]]]]]:
    """A PEP 691 index on loopback; the test fills `projects` (name → files) before asking."""
    projects: dict[str, list[dict[str, object]]] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            name = self.path.strip("/").split("/")[-1]
            if name not in projects:
                self.send_error(404)
                return
            body = json.dumps({"meta": {"api-version": "1.0"}, "files": projects[name]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple", projects
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _files(version: str, platforms: list[str]) -> list[dict[str, object]]:
    files: list[dict[str, object]] = [{"filename": f"uv-{version}.tar.gz", "hashes": {}}]
    for platform in platforms:
        name = f"uv-{version}-py3-none-{platform}.whl"
        digest = hashlib.sha256(name.encode()).hexdigest()
        files.append({"filename": name, "hashes": {"sha256": digest}})
    return files


def test_refresh_rewrites_the_digests_and_bumps_a_version(
    tmp_path: Path, json_index: tuple[str, dict[str, list[dict[str, object]]]]
) -> None:
    index, projects = json_index
    projects["uv"] = _files("1.0", ["win_amd64", "manylinux_2_17_x86_64.manylinux2014_x86_64"])
    projects["uv"] += _files("1.1", ["macosx_11_0_arm64"])[1:]
    pins = tmp_path / TOOL_PINS_NAME
    pins.write_text(
        "# header kept\nuv:  # why it is here\n  version: 1.0\n  sha256:\n    - " + "0" * 64 + "\n",
        encoding="utf-8",
    )

    def refresh(*args: str) -> str:
        argv = [sys.executable, str(SCRIPT), "--pins", str(pins), "--index", index, *args]
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        return done.stdout

    assert "updated" in refresh()
    text = pins.read_text(encoding="utf-8")
    assert text.startswith("# header kept\nuv:  # why it is here\n  version: 1.0\n")
    [uv] = parse_tool_pins(text, str(pins)).values()
    linux = hashlib.sha256(b"uv-1.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl")
    assert set(uv.sha256) == {
        linux.hexdigest(),
        hashlib.sha256(b"uv-1.0-py3-none-win_amd64.whl").hexdigest(),
    }
    assert f"{linux.hexdigest()}  # manylinux2014_x86_64.manylinux_2_17_x86_64" in text
    assert "unchanged" in refresh()  # a rerun writes nothing
    assert "updated" in refresh("uv=1.1")
    [bumped] = parse_tool_pins(pins.read_text(encoding="utf-8"), str(pins)).values()
    assert bumped.version == "1.1" and len(bumped.sha256) == 1
    with pytest.raises(subprocess.CalledProcessError) as caught:
        refresh("uv=9.9")
    assert "no wheel" in caught.value.stderr
