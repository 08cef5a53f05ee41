"""The reference of exit codes and the error classes that own them, from relforge.errors."""

from __future__ import annotations

from relforge import errors
from relforge.reference.pageparts import banner, cell


def _error_classes() -> list[type[errors.RelforgeError]]:
    """relforge.errors' classes, base first, each before its subclasses."""
    out: list[type[errors.RelforgeError]] = []
    todo: list[type[errors.RelforgeError]] = [errors.RelforgeError]
    while todo:
        cls = todo.pop(0)
        if cls.__module__ == errors.__name__ and cls not in out:
            out.append(cls)
            todo += sorted(cls.__subclasses__(), key=lambda c: c.__name__)
    return out


def exit_codes_page() -> str:
    lines = [
        banner("exitcodes.py"),
        "# Exit codes",
        "",
        "Every command exits with one of these codes.  An error is one paragraph on stderr: "
        "`label: file:line:column: key: message`, then a `hint:` line that says how to fix it.  "
        "Exit 1 is kept for bugs; `--debug` shows the traceback.",
        "",
        "| code | meaning |",
        "| --- | --- |",
    ]
    lines += [f"| {code} | {cell(text)} |" for code, text in errors.EXIT_CODES.items()]
    lines += [
        "",
        "## Error classes",
        "",
        "Each class of `relforge.errors` owns its exit code and the label its message starts with.",
        "",
        "| class | exit code | label | when |",
        "| --- | --- | --- | --- |",
    ]
    for cls in _error_classes():
        doc = " ".join((cls.__doc__ or "").split())
        lines.append(f"| `{cls.__name__}` | {cls.exit_code} | {cls.label} | {cell(doc)} |")
    return "\n".join(lines) + "\n"
