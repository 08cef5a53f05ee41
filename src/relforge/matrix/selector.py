"""Cell selectors: `os=linux,accelerator=cuda|rocm,python>=3.12` and id globs (`wheel-*-cu128`).

A selector is an AND of clauses; a clause is an OR of terms on one field, except that `!=`
terms must all hold (`variant!=cpu|xpu` is neither).  `=` and `!=` compare text with shell-style
globs; `<`, `<=`, `>`, `>=` compare versions (python, accelerator_version, cudnn_version,
nccl_version; a free-threaded 3.13t compares as 3.13); true/false fields take only `true` or
`false`.  The dependency axes of a release (`numpy`, `torch`) are fields too: `torch=2.9`,
`numpy>=2` (only when every value of the axis is a version: `2.x` could never match).  A
term with no operator is a glob on the cell id.  Exclude and include rules in the matrix file
use the same terms, written as a mapping (`python: "<3.11"`); a list there may mix both kinds,
in any order: `variant: ["cu*", "!=cu130"]` is every CUDA variant but cu130.
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from packaging.version import InvalidVersion, Version

FieldKind = Literal["text", "bool", "version"]

SELECTABLE: dict[str, FieldKind] = {
    "id": "text",
    "release": "version",
    "package_type": "text",
    "platform": "text",
    "os": "text",
    "arch": "text",
    "python": "version",
    "free_threaded": "bool",
    "accelerator": "text",
    "accelerator_version": "version",
    "variant": "text",
    "status": "text",
    "platform_tag": "text",
    "cxx11_abi": "bool",
    "image": "text",
    "bundles_libraries": "bool",
    "pypi_default": "bool",
    "upload_subfolder": "text",
    "libtorch_variant": "text",
    "libtorch_config": "text",
    "cudnn_version": "version",
    "nccl_version": "version",
}

_OPERATORS = ("!=", ">=", "<=", "==", "=", ">", "<")
_ORDERING = {"<", "<=", ">", ">="}


@dataclass(frozen=True)
class Term:
    field: str
    op: str
    value: str

    def matches(self, cell: Any) -> bool:
        if self.field in SELECTABLE:
            raw = getattr(cell, self.field)
        else:  # a dependency axis of the release
            raw = cell.axes.get(self.field)
        if self.op in _ORDERING:
            have = _as_version(raw)
            if have is None:
                return False
            want = Version(self.value)
            return {"<": have < want, "<=": have <= want, ">": have > want, ">=": have >= want}[
                self.op
            ]
        hit = fnmatch.fnmatchcase(_as_text(raw), self.value)
        return hit if self.op in ("=", "==") else not hit

    def __str__(self) -> str:
        return f"{self.field}{self.op}{self.value}"


@dataclass(frozen=True)
class Clause:
    """Terms on one field, any of which may match."""

    terms: tuple[Term, ...]

    def matches(self, cell: Any) -> bool:
        """Any of the values, and none of the `!=` ones (`variant!=cpu|xpu` means neither)."""
        wanted = [t for t in self.terms if t.op != "!="]
        if wanted and not any(t.matches(cell) for t in wanted):
            return False
        return all(t.matches(cell) for t in self.terms if t.op == "!=")

    def __str__(self) -> str:
        first = self.terms[0]
        if all(t.op == first.op for t in self.terms):
            return f"{first.field}{first.op}" + "|".join(t.value for t in self.terms)
        return "|".join(map(str, self.terms))


@dataclass(frozen=True)
class Selector:
    clauses: tuple[Clause, ...]

    def matches(self, cell: Any) -> bool:
        return all(c.matches(cell) for c in self.clauses)

    def __str__(self) -> str:
        return ",".join(map(str, self.clauses))


def _as_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _as_version(value: object) -> Version | None:
    if value is None or value == "":
        return None
    text = str(value).removesuffix("t")
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _term(field: str, op: str, value: str, axes: Collection[str] = ()) -> Term:
    kinds: dict[str, FieldKind] = {**SELECTABLE, **dict.fromkeys(axes, "version")}
    if field not in kinds:
        close = difflib.get_close_matches(field, kinds, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown cell field {field!r}{hint}; fields: {', '.join(kinds)}")
    if op in _ORDERING:
        if kinds[field] != "version":
            raise ValueError(f"{field} is not a version; use = or != with it")
        values = axes.get(field, ()) if isinstance(axes, Mapping) else ()
        odd = [str(v) for v in values if _as_version(v) is None]
        if odd:  # those cells could never match, silently
            raise ValueError(
                f"{field} value {odd[0]!r} is not a version, so {field}{op}{value} can never "
                f"match it; use {field}={odd[0]} (or =/!= with the values)"
            )
        try:
            Version(value)
        except InvalidVersion:
            if field == "python" and _as_version(value) is not None:
                raise ValueError(
                    f"{field}{op}{value}: a free-threaded build compares as its version; "
                    f"compare the version and add free_threaded=true "
                    f"({field}{op}{value[:-1]},free_threaded=true)"
                ) from None
            raise ValueError(f"{value!r} is not a version to compare {field} with") from None
    elif kinds[field] == "bool" and value not in ("true", "false"):
        raise ValueError(f"{field} is true or false, not {value!r}")
    elif not value and op not in ("=", "==", "!="):
        raise ValueError(f"{field}{op} needs a value")
    if field == "package_type" and value == "libtorch":
        value = "archive"  # PyTorch's word for a native archive, as older matrix files say
    return Term(field, op, value)


def _split(text: str) -> tuple[str, str, str] | None:
    """Split `field<op>value` at the first operator; None when the text has no operator."""
    best: tuple[int, str] | None = None
    for op in _OPERATORS:
        at = text.find(op)
        if at > 0 and (best is None or at < best[0] or (at == best[0] and len(op) > len(best[1]))):
            best = (at, op)
    if best is None:
        return None
    at, op = best
    return text[:at].strip(), op, text[at + len(op) :].strip()


def parse_selector(text: str, axes: Collection[str] = ()) -> Selector:
    """Parse a `--select` value (`axes`: the release's axis names, selectable too); raises
    ValueError with a readable message."""
    clauses = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise ValueError(f"empty term in selector {text!r}")
        lead = _split(f"x{part}")
        if lead is not None and lead[0] == "x":  # the term starts with its operator
            raise ValueError(f"no cell field before {lead[1]!r} in {part!r}")
        split = _split(part)
        if split is None:
            clauses.append(Clause((Term("id", "=", part),)))
            continue
        field, op, value = split
        values = value.split("|") if op in ("=", "==", "!=") else [value]
        clauses.append(Clause(tuple(_term(field, op, v.strip(), axes) for v in values)))
    return Selector(tuple(clauses))


def selector_from_match(match: Mapping[str, Sequence[str]], axes: Collection[str] = ()) -> Selector:
    """The selector of a rule's `match:` mapping; a value may start with an operator."""
    clauses = []
    for field, values in match.items():
        terms = []
        for value in values:
            split = _split(f"{field}{value}") if value[:1] in "!<>=" else None
            terms.append(_term(*split, axes) if split else _term(field, "=", value, axes))
        clauses.append(Clause(tuple(terms)))
    return Selector(tuple(clauses))


def select(cells: Iterable[Any], selectors: Sequence[Selector]) -> list[Any]:
    """Cells matching any of the selectors (all cells when there are none)."""
    if not selectors:
        return list(cells)
    return [c for c in cells if any(s.matches(c) for s in selectors)]
