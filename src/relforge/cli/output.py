"""Moved to `relforge.output` (stages print too and must not import the CLI): old imports."""

from relforge.output import append_step_summary, console, print_json

__all__ = ["append_step_summary", "console", "print_json"]
