"""Action pins: every third-party action a generated workflow uses, by full commit SHA.

The pins are data (`relforge/resources/action_pins.yaml`); a user's template directory may add
or replace entries with its own `action_pins.yaml`.  Templates never spell an action reference:
they call `action("actions/checkout")`, which fails for an action that has no pin.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

from relforge.errors import ConfigError, Span

PINS_NAME = "action_pins.yaml"
_SHA = re.compile(r"[0-9a-f]{40}\Z")
_TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+/-]*\Z")  # written after `#` on a `uses:` line
_ACTION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9._-]+(/[A-Za-z0-9._/-]+)?\Z")


@dataclass(frozen=True, kw_only=True)
class ActionPin:
    action: str
    tag: str
    sha: str

    @property
    def uses(self) -> str:
        """The `uses:` value with the tag as a trailing YAML comment."""
        return f"{self.action}@{self.sha} # {self.tag}"


def package_pins_text() -> str:
    return resources.files("relforge.resources").joinpath(PINS_NAME).read_text("utf-8")


def parse_pins(text: str, where: str) -> dict[str, ActionPin]:
    """Pins from one action_pins.yaml text; ConfigError names the file and the action."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        span = Span(where, mark.line + 1, mark.column + 1) if mark else Span(where)
        raise ConfigError(f"not valid YAML: {getattr(exc, 'problem', exc)}", where=span) from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError("expected a mapping of action → {tag, sha}", where=Span(where))
    pins: dict[str, ActionPin] = {}
    for action, entry in data.items():
        if not isinstance(action, str) or not _ACTION.match(action):
            raise ConfigError(
                f"{action!r} is not an action name like owner/repo or owner/repo/path",
                where=Span(where),
            )
        if not isinstance(entry, Mapping) or set(entry) != {"tag", "sha"}:
            raise ConfigError(
                "expected exactly the keys tag and sha", where=Span(where), key=str(action)
            )
        sha, tag = str(entry["sha"]), str(entry["tag"])
        if not _SHA.match(sha):
            raise ConfigError(
                f"sha {sha!r} is not a full 40-character commit SHA",
                where=Span(where),
                key=f"{action}.sha",
                hint="pin the commit a release tag points at: git ls-remote URL refs/tags/TAG^{}",
            )
        if not _TAG.match(tag):
            raise ConfigError(
                f"tag {tag!r} is not a tag name like v4.2.2",
                where=Span(where),
                key=f"{action}.tag",
            )
        pins[action] = ActionPin(action=action, tag=tag, sha=sha)
    return pins


def load_pins(templates_dir: Path | None = None) -> tuple[dict[str, ActionPin], str]:
    """The package pins, overlaid with `templates_dir/action_pins.yaml` when present.

    Returns the pins and the text they came from (an input of the header hash)."""
    text = package_pins_text()
    pins = parse_pins(text, f"relforge/resources/{PINS_NAME}")
    if templates_dir is not None:
        own = templates_dir / PINS_NAME
        if own.is_file():
            try:
                own_text = own.read_text(encoding="utf-8")
            except UnicodeDecodeError as exc:
                raise ConfigError(
                    f"not UTF-8 text ({exc.reason} at byte {exc.start})", where=Span(str(own))
                ) from None
            except OSError as exc:
                raise ConfigError(f"cannot read: {exc.strerror}", where=Span(str(own))) from None
            pins.update(parse_pins(own_text, str(own)))
            text += "\n" + own_text
    return pins, text
