"""Reads called in the process that serves them: the embedded node's gateway asks its search service directly, as
the search client would over gRPC, without the hop (issue 35: the hop and its two conversions of every hit were
about a third of a search's time at 10k, docs/benchmarks.md)."""

from __future__ import annotations

import logging
import time
from typing import Protocol

from engram import errors
from engram.model import Caller, SearchQuery
from engram.process.metrics import GRPC_DURATION, GRPC_REQUESTS
from engram.results import SearchResult

log = logging.getLogger(__name__)

SERVICE = "engram.v1.Search"
METHOD = "SearchMemories"


class Searcher(Protocol):
    """What answers a search: the search service's reader, or its gRPC client."""

    async def search(self, caller: Caller, query: SearchQuery, /) -> SearchResult: ...


class LocalSearch:
    """The search service's reader behind the search client's ``search``, with what its gRPC edge adds: a kernel error
    goes on as it is, anything else is a bug, logged and answered as an internal error without internals; the call is
    counted and timed as the RPC would be (engram.grpc.rpc.MetricsInterceptor)."""

    def __init__(self, reader: Searcher) -> None:
        self._reader = reader

    async def search(self, caller: Caller, query: SearchQuery, /) -> SearchResult:
        started, status = time.perf_counter(), "OK"
        try:
            return await self._reader.search(caller, query)
        except errors.EngramError as e:
            status = errors.kind_of(e).grpc_status
            raise
        except Exception as e:
            status = "INTERNAL"
            log.exception("%s failed", METHOD)
            raise errors.EngramError(f"Internal error in {METHOD} ({type(e).__name__}); see the log.") from e
        except BaseException:
            status = "CANCELLED"
            raise
        finally:
            GRPC_REQUESTS.labels(SERVICE, METHOD, status).inc()
            GRPC_DURATION.labels(SERVICE, METHOD).observe(time.perf_counter() - started)
