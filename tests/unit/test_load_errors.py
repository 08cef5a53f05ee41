"""Every kind of bad matrix input ends in one ConfigError naming file:line:column and the key."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.errors import ConfigError
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from tests.conftest import SMALL


def line_of(text: str, snippet: str) -> int:
    index = text.index(snippet)
    return text.count("\n", 0, index) + 1


def load_error(write: Callable[[str], Path], text: str) -> ConfigError:
    path = write(text)
    with pytest.raises(ConfigError) as info:
        load_matrix(path)
    return info.value


# (id, old text, new text, words the message must contain, snippet whose line is reported)
CASES = [
    (
        "unknown-key",
        "cudnn: 9.10.2.21",
        "cudnnn: 9.10.2.21",
        ["unknown key 'cudnnn'", "releases.1.0.accelerators.cu128.cudnnn", "did you mean 'cudnn'"],
        "cudnnn",
    ),
    (
        "wrong-type",
        "arch: x86_64\n        platform_tag: manylinux",
        "arch: [x86_64]\n        platform_tag: manylinux",
        ["expected a string, got a list", "releases.1.0.platforms.linux-x86_64.arch"],
        "[x86_64]",
    ),
    (
        "boolean-for-string",
        'image: "img:cpu"',
        "image: yes",
        ["expected a string, got the boolean 'yes'", "quote it"],
        "image: yes",
    ),
    (
        "missing-required",
        "        kind: cpu\n",
        "",
        ["missing required key 'kind'", "releases.1.0.accelerators.cpu"],
        "platforms:\n          linux-x86_64: {image",
    ),
    (
        "bad-version",
        "version: 12.8.1",
        "version: 12.8.one",
        ["'12.8.one' is not a PEP 440 version", "accelerators.cu128.version"],
        "12.8.one",
    ),
    (
        "bad-specifier",
        'python: ["3.11", "3.12", "3.13t"]',
        'python: ["3.11", "3.12", "3.13t"]\n    requires_python: ">=3.x"',
        ["not a PEP 440 version specifier", "releases.1.0.requires_python"],
        '">=3.x"',
    ),
    (
        "bad-marker",
        "platform_system == 'Linux'",
        "platform_sytem == 'Linux'",
        ["not a PEP 508 requirement", "extra_install_requires[0]"],
        "nvidia-cudnn",
    ),
    (
        "duplicate-key",
        "os: linux\n",
        "os: linux\n        os: linux\n",
        ["duplicate key 'os' (first defined on line 15)", "releases.1.0.platforms.linux-x86_64.os"],
        "os: linux\n        arch",
    ),
    (
        "dangling-extends",
        'extends: "1.0"',
        'extends: "0.9"',
        ["extends '0.9', which is not a release", "releases.1.1.extends"],
        '"0.9"',
    ),
    (
        "extends-cycle",
        "date: 2025-06-01",
        'extends: "1.1"\n    date: 2025-06-01',
        ["extends forms a cycle"],
        None,
    ),
    (
        "cudnn-contradicts-pin",
        "cudnn: 9.10.2.21",
        "cudnn: 9.8.0.87",
        ["cudnn 9.8.0.87 contradicts the pin", "accelerators.cu128.cudnn"],
        "cudnn: 9.8.0.87",
    ),
    (
        "pin-for-other-cuda",
        "nvidia-cudnn-cu12==",
        "nvidia-cudnn-cu13==",
        ["is built for CUDA 13, but this variant is CUDA 12.8.1"],
        "extra_install_requires:",
    ),
    (
        "name-contradicts-version",
        "version: 12.8.1",
        "version: 12.6.3",
        ["variant 'cu128' says a different version than 12.6.3", "named 'cu126'"],
        "version: 12.6.3",
    ),
    (
        "tag-for-other-arch",
        "platform_tag: manylinux_2_28_x86_64",
        "platform_tag: manylinux_2_28_aarch64",
        ["'manylinux_2_28_aarch64' is not a linux x86_64 tag", "linux-x86_64.platform_tag"],
        "platform_tag: manylinux_2_28_aarch64",
    ),
    (
        "bad-platform-tag",
        "platform_tag: win_amd64",
        "platform_tag: Win AMD64",
        ["is not a wheel platform tag"],
        "Win AMD64",
    ),
    (
        "dangling-pypi-default",
        "linux-x86_64: cu128\n",
        "linux-x86_64: cu129\n",
        ["accelerator variant 'cu129' is not defined", "releases.1.0.pypi_default"],
        "pypi_default:",
    ),
    (
        "bad-release-name",
        '"1.1":',
        '"1.1.0":',
        ["release names are X.Y versions; '1.1.0' is not"],
        '"1.1.0":',
    ),
    (
        "bad-python",
        '"3.11", "3.12", "3.13t"]',
        '"3.11.2", "3.12", "3.13t"]',
        ["'3.11.2' is not a Python feature version", "releases.1.0.python[0]"],
        '"3.11.2"',
    ),
    (
        "early-free-threaded",
        '"3.11", "3.12", "3.13t"]',
        '"3.11", "3.12t", "3.13t"]',
        ["free-threaded builds exist from Python 3.13 on"],
        '"3.12t"',
    ),
    (
        "requires-python-excludes",
        'python: ["3.11", "3.12", "3.13t"]',
        'python: ["3.11", "3.12", "3.13t"]\n    requires_python: ">=3.12"',
        ["Python 3.11 is built but requires_python '>=3.12' excludes it"],
        "requires_python",
    ),
    (
        "rule-unknown-field",
        "match: {platform: windows-x86_64",
        "match: {platfrom: windows-x86_64",
        ["unknown cell field 'platfrom'", "did you mean 'platform'", "exclude[0].match"],
        "match: {platfrom",
    ),
    (
        "rule-without-reason",
        "reason: no free-threaded Windows build yet",
        'reason: "  "',
        ["every rule needs a reason"],
        'reason: "  "',
    ),
    (
        "unknown-top-level",
        "schema_version: 1",
        "schema_version: 1\nmaintainers: []",
        ["unknown key 'maintainers'"],
        "maintainers",
    ),
    (
        "schema-version",
        "schema_version: 1",
        "schema_version: 2",
        ["'2' is not one of: 1", "schema_version"],
        "schema_version: 2",
    ),
    ("yaml-syntax", "os: windows", "os: [windows", ["invalid YAML"], None),
    (
        "merge-key",
        "      windows-x86_64:\n        os: windows",
        "      windows-x86_64:\n        <<: {}\n        os: windows",
        ["merge keys (<<) are not supported"],
        "<<",
    ),
    (
        "cudnn-on-rocm",
        "kind: cuda\n        version: 12.8.1",
        "kind: rocm\n        version: 12.8.1",
        ["only CUDA variants have cudnn"],
        "cudnn: 9.10",
    ),
    (
        "cuda-without-version",
        "        version: 12.8.1\n",
        "",
        ["a cuda variant needs its full toolkit version", "accelerators.cu128"],
        None,
    ),
    (
        "bad-env-name",
        'linux-x86_64: {image: "img:cpu"}',
        'linux-x86_64: {image: "img:cpu", env: {"BAD-NAME": x}}',
        ["'BAD-NAME' is not an environment variable name"],
        None,
    ),
    (
        "dangling-libtorch-accelerator",
        "accelerators: [cpu, cu128]",
        "accelerators: [cpu, cu999]",
        ["accelerator variant 'cu999' is not defined", "releases.1.0.libtorch"],
        "accelerators: [cpu, cu999]",
    ),
    (
        "bad-store",
        "download_url: https://example.org",
        "download_url: https://example.org\npublishing: {store: 'ftp://x'}",
        ["is neither file://PATH nor s3://BUCKET"],
        "publishing",
    ),
    (
        "no-s3-attempt",
        "download_url: https://example.org",
        "download_url: https://example.org\npublishing:\n  s3_attempts: 0",
        ["must be at least 1", "publishing.s3_attempts"],
        "s3_attempts: 0",
    ),
    (
        "part-too-small",
        "download_url: https://example.org",
        "download_url: https://example.org\npublishing:\n  s3_part_size_mb: 4",
        ["4 is out of range: from 5 to 5120", "publishing.s3_part_size_mb"],
        "s3_part_size_mb: 4",
    ),
    (
        "single-request-over-s3s-ceiling",
        "download_url: https://example.org",
        "download_url: https://example.org\npublishing:\n  s3_multipart_threshold_mb: 6000",
        ["S3 takes at most 5 GiB in one request", "publishing.s3_multipart_threshold_mb"],
        "s3_multipart_threshold_mb: 6000",
    ),
    (
        "copy-over-s3s-ceiling",
        "download_url: https://example.org",
        "download_url: https://example.org\npublishing:\n  s3_copy_threshold_mb: 5121",
        ["5121 is out of range", "publishing.s3_copy_threshold_mb"],
        "s3_copy_threshold_mb: 5121",
    ),
    (
        "no-parts-in-flight",
        "download_url: https://example.org",
        "download_url: https://example.org\npublishing:\n  s3_part_concurrency: 0",
        ["0 is out of range: from 1 to 64", "publishing.s3_part_concurrency"],
        "s3_part_concurrency: 0",
    ),
    (
        "no-pypi-quota",
        "download_url: https://example.org",
        "download_url: https://example.org\npublishing:\n  pypi_project_limit_mb: 0",
        ["at least 1", "publishing.pypi_project_limit_mb"],
        "pypi_project_limit_mb: 0",
    ),
    (
        "bad-placeholder",
        'upload_subfolder: "{variant}_full"',
        'upload_subfolder: "{cuda}_full"',
        ["may only use the placeholder {variant}"],
        None,
    ),
    (
        "placeholder-attribute",
        'upload_subfolder: "{variant}_full"',
        'upload_subfolder: "{variant.x}_full"',
        ["may only use the placeholder {variant}", "releases.1.0.include[0].set.upload_subfolder"],
        "upload_subfolder",
    ),
    (
        "subfolder-escapes-the-channel",
        'upload_subfolder: "{variant}_full"',
        'upload_subfolder: "{variant}/../../x"',
        ["'{variant}/../../x' must name one folder", "set.upload_subfolder"],
        "upload_subfolder",
    ),
    (
        "prefix-escapes-the-store",
        "test: {version_scheme: final, prefix: whl/test}",
        "test: {version_scheme: final, prefix: whl/../../etc}",
        ["'whl/../../etc' must be folder names", "channels.test.prefix"],
        "prefix: whl/../../etc",
    ),
    (
        "prefix-with-an-expression",
        "test: {version_scheme: final, prefix: whl/test}",
        "test: {version_scheme: final, prefix: 'whl/${{ secrets.X }}'}",
        ["must be folder names", "channels.test.prefix"],
        "prefix: 'whl/$",
    ),
    (
        "download-url-not-a-url",
        "download_url: https://example.org",
        "download_url: 'https://example.org/${{ secrets.TOKEN }}'",
        ["is not an http(s) or file URL", "project.download_url"],
        "download_url",
    ),
    (
        "null-removes-nothing",
        "    accelerators:\n      cu130:",
        "    accelerators:\n      cu129: null\n      cu130:",
        [
            "removes 'cu129', which release 1.0 does not have",
            "releases.1.1.accelerators.cu129",
            "defined: cpu, cu128",
        ],
        "cu129: null",
    ),
    (
        "nested-null-removes-nothing",
        "    accelerators:\n      cu130:",
        "    accelerators:\n      cu128:\n        platforms: {windows-arm64: null}\n      cu130:",
        ["removes 'windows-arm64', which release 1.0 does not have"],
        "{windows-arm64: null}",
    ),
    (
        "non-string-key",
        "os: linux\n",
        "os: linux\n        [a, b]: c\n",
        ["mapping keys must be plain strings"],
        "[a, b]",
    ),
    (
        "bad-variant-name",
        "      cpu:\n        kind: cpu",
        "      CPU!:\n        kind: cpu",
        ["variant name 'CPU!' must be lowercase"],
        None,
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "words", "at"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_error_names_place_and_key(
    write: Callable[[str], Path], old: str, new: str, words: list[str], at: str | None
) -> None:
    assert old in SMALL
    text = SMALL.replace(old, new, 1)
    error = load_error(write, text)
    message = error.render()
    for word in words:
        assert word in message, message
    assert "matrix.yaml:" in message
    if at is not None:
        assert f"matrix.yaml:{line_of(text, at)}:" in message, message
    assert error.exit_code == 2


def test_the_small_matrix_itself_loads(write: Callable[[str], Path]) -> None:
    matrix = load_matrix(write(SMALL))
    assert list(matrix.releases) == ["1.0", "1.1"]


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_matrix(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="is a directory"):
        load_matrix(tmp_path)


def test_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_matrix(path)


@pytest.mark.parametrize("text", ["", "# only a comment\n", "- a\n- b\n", "just text\n"])
def test_empty_or_not_a_mapping(write: Callable[[str], Path], text: str) -> None:
    error = load_error(write, text)
    assert "empty" in error.message or "must be a mapping" in error.message


def test_recursive_alias(write: Callable[[str], Path]) -> None:
    error = load_error(write, "a: &x [*x]\n")
    assert "recursive YAML alias" in error.message


def test_alias_bomb_is_refused(write: Callable[[str], Path]) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 7)]
    error = load_error(write, "\n".join(lines) + "\n")
    assert "expands to more than" in error.message


def test_duplicate_cell_ids_from_include_rules(write: Callable[[str], Path]) -> None:
    twice = (
        "        include:\n"
        "          - match: {variant: cu128, python: '3.12', platform: linux-x86_64}\n"
        "            suffix: full\n            reason: one\n"
        "          - match: {variant: cu128, python: '3.12', platform: linux-x86_64}\n"
        "            suffix: full\n            reason: two\n"
    )
    start = SMALL.index("    include:\n      - match: {platform: linux")
    end = SMALL.index('  "1.1":')
    text = (
        SMALL[:start]
        + twice.replace("        ", "    ", 1)
        .replace("\n          ", "\n      ")
        .replace("\n            ", "\n        ")
        + SMALL[end:]
    )
    matrix = load_matrix(write(text))
    with pytest.raises(ConfigError, match="two cells get the id"):
        expand_cells(matrix, "1.0")
