"""A read-only HTTP server over an object store, on 127.0.0.1 for the length of a check, so pip
reads a channel exactly as a static server would serve it (any store: local or S3).

Only keys under the given folders are served; a folder URL (`…/`) answers with its
`index.html`, as a static server's directory index does.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

from relforge.errors import RelforgeError
from relforge.simplepages import JSON_V1
from relforge.stores import content_types
from relforge.stores.objectstore import ObjectStore


def _content_type(key: str) -> str:
    if key.endswith(".html"):
        return content_types.HTML
    if key.endswith(".json"):
        return JSON_V1
    return content_types.OCTET_STREAM


@contextlib.contextmanager
def serve_store(store: ObjectStore, folders: Sequence[str]) -> Iterator[str]:
    """Serve `folders` of `store`; yields the base URL (`http://127.0.0.1:PORT`)."""
    allowed = tuple(f.strip("/") + "/" for f in folders)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            key = unquote(urlsplit(self.path).path).lstrip("/")
            if key.endswith("/") or not key:
                key += "index.html"
            if ".." in key.split("/") or not key.startswith(allowed):
                self.send_error(404)
                return
            try:
                data = store.get(key)
            except RelforgeError:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", _content_type(key))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            return  # pip's own output says what it fetched

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
