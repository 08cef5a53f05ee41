"""Switch the channel a branch's builds target: `channels.default` in the matrix file.

On main the matrix says (or defaults to) `nightly`; the release-only commit of a branch cut
makes it `test`, so builds of release/X.Y (and RC tags on it) carry the final version and go to
the test channel.  The value is edited in place — comments and layout of the file survive —
and the result is loaded again to prove it is still a valid matrix.
"""

from __future__ import annotations

from relforge.errors import ConfigError, Span
from relforge.matrix.load import load_matrix
from relforge.matrix.schema import ChannelName
from relforge.matrix.source import Map, Scalar, parse_yaml
from relforge.release.yaml_edit import Edit, apply_edits, scalar_edit


def switch_default_channel(text: str, file: str, channel: ChannelName) -> str:
    """The matrix text with `channels.default` set to `channel` (unchanged if it already is)."""
    current = load_matrix(file, text=text).channels.default  # a broken matrix stops here
    if current == channel:
        return text
    root = parse_yaml(text, file)
    assert isinstance(root, Map)  # load_matrix accepted it
    entry = root.entries.get("channels")
    if entry is None:
        new = text + ("" if text.endswith("\n") else "\n") + f"channels:\n  default: {channel}\n"
    else:
        new = apply_edits(text, [_edit(entry.value, entry.key_span, channel, file)], file)
    if load_matrix(file, text=new).channels.default != channel:  # pragma: no cover - a bug
        raise AssertionError(f"switching channels.default in {file} did not take")
    return new


def _edit(node: object, key_span: Span, channel: str, file: str) -> Edit:
    assert isinstance(node, Map)  # load_matrix accepted `channels`
    default = node.get("default")
    if isinstance(default, Scalar):
        return scalar_edit(default, channel)
    if not node.entries:
        # `channels: {}`: the value starts at the brace
        return Edit(node.span.line, node.span.column, "{}", f"{{default: {channel}}}")
    first = next(iter(node.entries.values())).key_span
    if first.line == key_span.line:  # flow style: `channels: {nightly: …, …}`
        return Edit(first.line, first.column, "", f"default: {channel}, ")
    if first.line <= key_span.line:
        raise ConfigError("cannot place channels.default here", where=first, key="channels")
    indent = " " * (first.column - 1)
    return Edit(first.line, 1, "", f"{indent}default: {channel}\n")
