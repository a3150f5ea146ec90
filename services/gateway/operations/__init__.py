"""The gateway's operations, shared by REST and MCP (neither FastAPI nor MCP here): requests in, calls to the
services, results out. ``Operations`` is every group of them as one object, for an already resolved caller."""

from __future__ import annotations

from engram.services.gateway.operations.consolidation import ConsolidationOperations
from engram.services.gateway.operations.coordination import CoordinationOperations
from engram.services.gateway.operations.importing import ImportOperations


class Operations(CoordinationOperations, ConsolidationOperations, ImportOperations):
    """Every memory operation for an already resolved caller; shared by the MCP tools and REST."""
