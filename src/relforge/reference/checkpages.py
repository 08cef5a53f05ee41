"""The reference of every validation check (RF-V…, RF-R…) and matrix lint rule (RF-L…), read
from their registries; each entry has a stable anchor (`#rf-v043`) that error hints link to."""

from __future__ import annotations

from relforge.matrix.lint import RULES
from relforge.reference.pageparts import anchor, banner, cell
from relforge.validate.checklist import CHECKS

__all__ = ["checks_page", "lint_page"]

_SCOPES = {
    "artifact": ("Artifact checks", "Static checks of one wheel or archive on its own."),
    "cell": (
        "Cell checks",
        "Static checks of one artifact against the cell of the matrix that expects it.",
    ),
    "release": ("Release checks", "Checks of the whole set of a release's artifacts."),
    "runtime": (
        "Runtime checks",
        "The wheel installed into a fresh environment and run (`relforge validate --runtime`).",
    ),
}


def checks_page() -> str:
    lines = [
        banner("checks.py"),
        "# Validation checks",
        "",
        "`relforge validate` and `relforge wheel inspect` run these checks; each verdict names its "
        "check by ID.  `RF-V0xx` look at one artifact, `RF-V1xx` at the release's set of "
        "artifacts, `RF-R0xx` install and run a wheel.",
        "",
    ]
    for scope, (title, intro) in _SCOPES.items():
        specs = sorted((c for c in CHECKS.values() if c.scope == scope), key=lambda c: c.id)
        lines += [f"## {title}", "", intro, ""]
        for spec in specs:
            lines += [f"### {spec.id} {spec.name} {{#{anchor(spec.id)}}}", "", cell(spec.doc), ""]
    return "\n".join(lines).rstrip() + "\n"


def lint_page() -> str:
    lines = [
        banner("checks.py"),
        "# Matrix lint rules",
        "",
        "`relforge matrix lint FILE` checks a loaded matrix against policy.  It exits 4 when an "
        "error-severity rule finds something (with `--strict`, any finding).  Load-time checks "
        "(a file that contradicts itself) are not lint rules: loading fails with exit 2.",
        "",
        "| ID | name | severity |",
        "| --- | --- | --- |",
    ]
    rules = sorted(RULES.values(), key=lambda r: r.id)
    lines += [f"| [{r.id}](#{anchor(r.id)}) | {r.name} | {r.severity} |" for r in rules]
    lines.append("")
    for rule in rules:
        lines += [
            f"## {rule.id} {rule.name} {{#{anchor(rule.id)}}}",
            "",
            f"Severity: {rule.severity}.  {cell(rule.doc)}",
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"
