"""The standard library's http.client for a plain http:// URL, loaded without ssl when nothing has loaded ssl yet:
http.client imports ssl at once for its HTTPSConnection, about a tenth of a CLI command's own start."""

from __future__ import annotations

import sys
from types import ModuleType


def http_client(*, https: bool) -> ModuleType:
    """http.client; without ssl (and so without HTTPSConnection) when ``https`` is False and neither is loaded.

    A process that loaded it so and later needs https imports ssl itself (urllib3, httpx and asyncio do); only
    http.client.HTTPSConnection stays absent in it. The CLI and `engram mcp` each talk to one URL per process.
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
