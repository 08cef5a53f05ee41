"""`relforge upstream update`: the due changes of a check written into the matrix text in place,
with the reason for each; the edited matrix must load and lint no worse than before, else nothing
is written.  A pin that would contradict another line refuses the whole update (exit 5)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from relforge.errors import ConfigError, RefusedError
from relforge.matrix.lint import lint_matrix
from relforge.release.yaml_edit import Edit, apply_edits
from relforge.upstream.edits import axis_edits, pin_edits, python_edits
from relforge.upstream.model import AddAxisValue, SetPin, SetPythons, UpstreamFinding
from relforge.upstream.releasecheck import Loaded, UpstreamReport
from relforge.upstream.sites import own_release


@dataclass(frozen=True, kw_only=True)
class UpdatePlan:
    report: UpstreamReport
    old_text: str
    new_text: str
    written: tuple[UpstreamFinding, ...]  # the findings whose change the new text holds
    manual: tuple[UpstreamFinding, ...]  # due findings left to a person (each says why)

    @property
    def changed(self) -> bool:
        return self.new_text != self.old_text

    def diff(self) -> str:
        name = self.report.file.lstrip("/")
        return "".join(
            difflib.unified_diff(
                self.old_text.splitlines(keepends=True),
                self.new_text.splitlines(keepends=True),
                fromfile=f"a/{name}",
                tofile=f"b/{name}",
            )
        )


def plan_update(loaded: Loaded, report: UpstreamReport) -> UpdatePlan:
    """The new text of the matrix (nothing is written here)."""
    if report.refused:
        raise RefusedError(
            f"{len(report.refused)} upstream change(s) would contradict the matrix; nothing was "
            "written:\n  " + "\n  ".join(f.message for f in report.refused),
            hint=report.refused[0].manual.removeprefix("refused: "),
        )
    release = loaded.matrix.release(report.release)
    own = own_release(loaded.root, report.release)
    lines = loaded.text.splitlines(keepends=True)
    written = [f for f in report.findings if f.change is not None]
    edits: list[Edit] = []
    axes: dict[str, list[AddAxisValue]] = {}
    pythons = SetPythons()
    for finding in written:
        change = finding.change
        if isinstance(change, SetPin):
            edits += pin_edits(change)
        elif isinstance(change, AddAxisValue):
            axes.setdefault(change.axis, []).append(change)
        elif isinstance(change, SetPythons):
            pythons = SetPythons(add=pythons.add + change.add, drop=pythons.drop + change.drop)
    for axis, values in axes.items():
        edits += axis_edits(lines, own, axis, values)
    if (pythons.add or pythons.drop) and own is not None:
        current = [str(p) for p in release.python]
        edits += python_edits(lines, own, current, pythons)
    edits = list(dict.fromkeys(edits))  # a `cudnn:` key two pins of one variant both move
    new_text = apply_edits(loaded.text, edits, loaded.file) if edits else loaded.text
    if new_text != loaded.text:
        _still_clean(loaded, new_text, report.release)
    manual = [f for f in report.due if f.change is None]
    return UpdatePlan(
        report=report,
        old_text=loaded.text,
        new_text=new_text,
        written=tuple(written),
        manual=tuple(manual),
    )


def _still_clean(loaded: Loaded, new_text: str, release: str) -> None:
    """The edited matrix loads, and `matrix lint` finds nothing it did not find before."""
    try:
        edited = Loaded.parse(loaded.file, new_text)
    except ConfigError as exc:
        raise RefusedError(
            f"the edited matrix would not load ({exc.render()}); nothing was written",
            hint="fix what the message names in the matrix by hand, then rerun",
        ) from None
    before = {(f.rule.id, f.message) for f in lint_matrix(loaded.matrix, [release])}
    new = [f for f in lint_matrix(edited.matrix, [release]) if (f.rule.id, f.message) not in before]
    if new:
        raise RefusedError(
            f"the edited matrix would lint with {len(new)} new finding(s); nothing was "
            "written:\n  " + "\n  ".join(f"{f.rule.id} {f.message} ({f.where})" for f in new),
            hint="change the matrix by hand so the update lints clean (e.g. a rule naming a "
            "dropped Python), then rerun",
        )
