"""How to install what `publish` put into a channel: the channel's index URL and the pip and uv
commands that install from it (the words of relforge.matrix.docs.index_install_command, the
rule `matrix docs` and the site's selector print with).

The URL is `project.download_url` (else, for a file:// store, the store's absolute file URL,
which pip and uv read as an index: a folder's `index.html` is its page) followed by the
channel's prefix when the channel has root pages (`channels.<name>.root_index`, the default),
else by each variant folder published to; a folder kept off the root pages (an include rule's
copies) gets its own URL too.
"""

from __future__ import annotations

from collections.abc import Sequence

from relforge.matrix.docs import INSTALLERS, index_install_command
from relforge.matrix.schema import ChannelName, Matrix
from relforge.promote.rootspec import RootSpec
from relforge.stores.local import LocalStore
from relforge.stores.objectstore import ObjectStore


def index_base(matrix: Matrix, store: ObjectStore) -> str:
    """What the channel prefixes hang off for installers: project.download_url, else a file://
    store's absolute file URL; "" when neither (an S3 store without a download_url: no public
    URL known)."""
    base = matrix.project.download_url.rstrip("/")
    if base:
        return base
    return store.root.resolve().as_uri() if isinstance(store, LocalStore) else ""


def index_urls(base: str, root: RootSpec, folders: Sequence[str]) -> tuple[str, ...]:
    """The index URL(s) that serve the wheel `folders` (store keys such as `whl/nightly/cpu`)."""
    if not base or not folders:
        return ()
    own = [f for f in folders if not root.enabled or f not in root.folders]
    on_root = [root.prefix] if root.enabled and len(own) < len(folders) else []
    return tuple(f"{base}/{path}" for path in dict.fromkeys([*on_root, *own]))


def install_lines(
    project: str,
    channel: ChannelName,
    urls: Sequence[str],
    *,
    dry_run: bool = False,
    pages_later: bool = False,
) -> list[str]:
    """The last lines of `publish`: each index URL with its pip and uv commands; the lead line
    says what must happen first (`dry_run`: --execute; `pages_later`, publish --no-index:
    `relforge index`, which writes the pages)."""
    if not urls:
        return [
            f"install: no index URL to print for the {channel} channel: project.download_url is "
            "not set (set it to the URL that serves the store)"
        ]
    first = [w for w, yes in (("--execute", dry_run), ("`relforge index`", pages_later)) if yes]
    when = f" (after {' and '.join(first)})" if first else ""
    lines = [f"install from the {channel} channel{when}:"]
    for url in urls:
        lines.append(f"  index: {url}")
        lines += [
            f"  {installer}: {index_install_command(project, url, channel, installer)}"
            for installer in INSTALLERS
        ]
    return lines
