"""The standard library's http.client for a plain http:// URL, loaded without ssl when nothing has loaded ssl yet:
http.client imports ssl at once for its HTTPSConnection, about a tenth of a CLI command's own start."""

from __future__ import annotations

import sys
from types import ModuleType


def http_client(*, https: bool) -> ModuleType:
    """http.client; without ssl (and so without HTTPSConnection) when ``https`` is False and neither is loaded.

    A process that goes on to use https after one plain request calls ``forget_plain()`` first (urllib.request,
    which the MCP SDK and gRPC stacks load, needs HTTPSConnection).
    """
    if https or "http.client" in sys.modules or "ssl" in sys.modules:
        import http.client

        return http.client
    sys.modules["ssl"] = None  # type: ignore[assignment]  # import ssl raises ImportError: http.client goes without
    try:
        import http.client

        return http.client
    finally:
        del sys.modules["ssl"]


def forget_plain() -> None:
    """Drops an http.client loaded without ssl, so that the next import loads the whole module."""
    loaded = sys.modules.get("http.client")
    if loaded is not None and not hasattr(loaded, "HTTPSConnection"):
        del sys.modules["http.client"]
