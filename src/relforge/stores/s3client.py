"""New S3 clients that share the botocore data this process has already loaded.

Each client comes from its own botocore session, so credentials, profile and region are looked
up in the environment when the client is made (as `boto3.client` does), but every session gets
the process's one data loader: a fresh loader reads and parses the S3 service model and the
endpoint rules again, most of the 60–130 ms of CPU a client otherwise costs (about 10 ms with
the shared one; a command opens a client per store, and a test run opens hundreds).
"""

from __future__ import annotations

import threading
from typing import Any

_LOCK = threading.Lock()
_LOADER: Any = None  # botocore.loaders.Loader (botocore is untyped)


def s3_client(**kwargs: Any) -> Any:
    """`boto3.client("s3", **kwargs)` with a fresh session and the shared loader."""
    import botocore.session
    from botocore.loaders import create_loader

    global _LOADER
    with _LOCK:  # botocore sessions are not thread-safe while they make a client
        if _LOADER is None:
            _LOADER = create_loader()
        session = botocore.session.get_session()
        session.register_component("data_loader", _LOADER)
        return session.create_client("s3", **kwargs)
