"""The Jinja environment workflow templates render in.

Sandboxed (templates are user-overridable code), `StrictUndefined` (a misspelt name is an error,
never an empty string), and delimiters that cannot collide with GitHub's `${{ }}` or with shell:
`<{ value }>`, `<% statement %>`, `<# comment #>`.  A user's template directory comes first on the
search path, so any template, partials included, is overridden by giving its name.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import jinja2
import jinja2.meta
import yaml
from jinja2.sandbox import SandboxedEnvironment

from relforge.errors import ConfigError, Span

PACKAGE_TEMPLATES = "templates/workflows"
_PLAIN = re.compile(r"[A-Za-z0-9_./][A-Za-z0-9_./@+-]*\Z")


# relforge's template syntax (`<{ }>`, `<% %>`, `<# #>`: YAML's braces stay text), strict about
# undefined names, whitespace as written; the workflows and `relforge init`'s starter matrix
SYNTAX: dict[str, Any] = {
    "undefined": jinja2.StrictUndefined,
    "variable_start_string": "<{",
    "variable_end_string": "}>",
    "block_start_string": "<%",
    "block_end_string": "%>",
    "comment_start_string": "<#",
    "comment_end_string": "#>",
    "trim_blocks": True,
    "lstrip_blocks": True,
    "keep_trailing_newline": True,
    "autoescape": False,
}


def make_environment(templates_dir: Path | None) -> SandboxedEnvironment:
    loaders: list[jinja2.BaseLoader] = []
    if templates_dir is not None:
        loaders.append(jinja2.FileSystemLoader(str(templates_dir)))
    loaders.append(jinja2.PackageLoader("relforge", PACKAGE_TEMPLATES))
    env = SandboxedEnvironment(
        loader=jinja2.ChoiceLoader(loaders),
        **SYNTAX,
    )
    env.filters["json"] = to_json
    env.filters["yaml"] = yaml_scalar
    env.filters["sh"] = shlex.quote
    return env


def to_json(value: Any) -> str:
    """Compact one-line JSON: a valid YAML flow value whatever the string holds."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def yaml_scalar(value: Any) -> str:
    """A YAML scalar: plain when it reads back as the same string, else double-quoted."""
    if isinstance(value, str) and _PLAIN.match(value) and yaml.safe_load(value) == value:
        return value
    return to_json(value)


def template_closure(env: jinja2.Environment, name: str) -> dict[str, str]:
    """The sources of a template and of every template it includes, imports or extends."""
    sources: dict[str, str] = {}
    pending: list[tuple[str, str | None]] = [(name, None)]
    while pending:
        current, parent = pending.pop()
        if current in sources:
            continue
        source = _source(env, current, parent)
        sources[current] = source
        try:
            parsed = env.parse(source, current, _filename(env, current))
        except jinja2.TemplateSyntaxError as exc:
            raise _syntax_error(exc) from None
        for ref in jinja2.meta.find_referenced_templates(parsed):
            if ref is None:
                raise ConfigError(
                    "includes a template whose name is computed; name it literally",
                    where=Span(_filename(env, current)),
                )
            pending.append((ref, current))
    return dict(sorted(sources.items()))


def templates_digest(sources: Mapping[str, str]) -> str:
    digest = hashlib.sha256()
    for name, source in sorted(sources.items()):
        digest.update(f"{name}\0{len(source)}\0{source}".encode())
    return digest.hexdigest()


def render_template(env: jinja2.Environment, name: str, **context: Any) -> str:
    """Render one template; every template failure becomes a ConfigError naming file:line."""
    try:
        return env.get_template(name).render(**context)
    except jinja2.TemplateNotFound as exc:
        raise ConfigError(
            f"template {exc.name!r} not found",
            where=Span(name),
            hint="templates are looked up in --templates DIR first, then in relforge's own",
        ) from None
    except jinja2.TemplateSyntaxError as exc:
        raise _syntax_error(exc) from None
    except jinja2.UndefinedError as exc:
        raise ConfigError(
            f"uses an undefined value: {exc.message}",
            where=_position(exc.__traceback__, env, name),
            hint="see `relforge workflows generate --help` for the names templates can use",
        ) from None
    except jinja2.exceptions.SecurityError as exc:
        raise ConfigError(
            f"does something the template sandbox forbids: {exc}",
            where=_position(exc.__traceback__, env, name),
        ) from None
    except ConfigError as exc:  # raised by a helper the template called, e.g. action()
        if exc.where is None:
            exc.where = _position(exc.__traceback__, env, name)
        raise
    except Exception as exc:  # templates are user code: 1/0, a sandbox limit, a bad filter…
        raise ConfigError(
            f"fails to render: {type(exc).__name__}: {exc}",
            where=_position(exc.__traceback__, env, name),
        ) from None


def _source(env: jinja2.Environment, name: str, included_by: str | None = None) -> str:
    try:
        source, _path, _uptodate = env.loader.get_source(env, name)  # type: ignore[union-attr]
    except jinja2.TemplateNotFound:
        raise ConfigError(
            f"template {name!r} not found",
            where=Span(_filename(env, included_by)) if included_by else None,
            hint="templates are looked up in --templates DIR first, then in relforge's own",
        ) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"not UTF-8 text ({exc.reason} at byte {exc.start})",
            where=Span(_file_on_disk(env, name)),
            key=f"template {name}",
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read template {name!r}: {exc.strerror}") from None
    return source


def _filename(env: jinja2.Environment, name: str) -> str:
    try:
        _source_text, filename, _uptodate = env.loader.get_source(env, name)  # type: ignore[union-attr]
    except (jinja2.TemplateNotFound, UnicodeDecodeError, OSError):  # reported where it is used
        return name
    return filename or name


def _file_on_disk(env: jinja2.Environment, name: str) -> str:
    """Where a template's file lies, found without reading it (for a file that cannot be read)."""
    loader = env.loader
    loaders = loader.loaders if isinstance(loader, jinja2.ChoiceLoader) else [loader]
    for sub in loaders:
        if isinstance(sub, jinja2.FileSystemLoader):
            for base in sub.searchpath:
                candidate = Path(base, name)
                if candidate.is_file():
                    return str(candidate)
    return name


def _syntax_error(exc: jinja2.TemplateSyntaxError) -> ConfigError:
    return ConfigError(
        f"template syntax error: {exc.message}",
        where=Span(
            exc.filename or exc.name or "<template>", exc.lineno or 0, 1 if exc.lineno else 0
        ),
    )


def _position(tb: TracebackType | None, env: jinja2.Environment, name: str) -> Span:
    """The innermost template frame of a traceback (Jinja maps frames to template lines)."""
    known = _template_files(env)
    found = Span(_filename(env, name))
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename in known:
            found = Span(filename, tb.tb_lineno, 1)
        tb = tb.tb_next
    return found


def _template_files(env: jinja2.Environment) -> set[str]:
    files = set()
    for name in env.list_templates():
        files.add(_filename(env, name))
    return files
