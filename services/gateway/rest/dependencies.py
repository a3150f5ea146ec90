"""What the routes declare: the caller of a request (a FastAPI dependency, documented in OpenAPI), and query and
path parameters with the descriptions and constraints of the shared argument types."""

# No `from __future__ import annotations`: FastAPI resolves the dependency's annotations against module globals.

import inspect
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, get_args, get_origin

from fastapi import Depends, Header, Path, Query, Request
from fastapi.security import HTTPBearer
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from engram.config import Settings
from engram.log import Log
from engram.model import Caller
from engram.names import DEVICE_PATTERN, IDENTITY_PATTERN, MAX_IDENTITY_CHARS, TEAM_PATTERN
from engram.services.gateway.backend import Backend
from engram.services.gateway.identity import REST_SOURCE, RequestIdentity, Resolver
from engram.services.gateway.operations import Operations
from engram.services.gateway.operations.context import SessionContext
from engram.services.gateway.operations.packs import PackService
from engram.services.gateway.operations.quarantine import QuarantineOperations
from engram.services.gateway.schemas.flat import built, flat_fields

bearer = HTTPBearer(
    auto_error=False,
    scheme_name="EngramApiKey",
    description="An Engram API key (`engram keys create`). Optional in dev mode (loopback bind).",
)


def field_of(alias: Any) -> FieldInfo:
    """The Field of one of the shared argument types (schemas/arguments.py)."""
    return next(m for m in get_args(alias)[1:] if isinstance(m, FieldInfo))


def description_of(alias: Any) -> str | None:
    return field_of(alias).description


def query_of(alias: Any) -> Any:
    """A query parameter with the description and the constraints of a shared argument type."""
    info = field_of(alias)
    constraints = {
        name: value
        for item in info.metadata
        for name in ("pattern", "max_length", "ge", "le")
        if (value := getattr(item, name, None)) is not None
    }
    return Query(description=info.description, json_schema_extra=info.json_schema_extra, **constraints)


def query_parameters(model: type[BaseModel]) -> Callable[..., Any]:
    """A dependency that takes ``model``'s fields as query parameters (a nested model's fields in its place, as the MCP
    tools take them: schemas/flat.py), each with the description and limits of its argument type, and answers
    ``model`` built from them. A field of one value or a list of them is a repeatable parameter."""
    parameters = [
        p.replace(annotation=Annotated[_query_type(p.annotation), query_of(p.annotation)]) for p in flat_fields(model)
    ]

    async def parse(**values: Any) -> Any:  # async: see app_state() below
        return built(model, values)

    parse.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    return parse


def _query_type(alias: Any) -> Any:
    """The type of a query parameter for an argument type: ``X | list[X] | None`` is ``list[X] | None``."""
    kind = get_args(alias)[0]
    lists = [arg for arg in get_args(kind) if get_origin(arg) is list]
    return lists[0] | None if lists else kind


def path_of(alias: Any) -> Any:
    info = field_of(alias)
    return Path(description=info.description, json_schema_extra=info.json_schema_extra)


def app_state(name: str) -> Callable[[Request], Awaitable[Any]]:
    """A dependency that answers what build_app put in the serving app's state under ``name``: a route declared at
    module level gets it injected as a parameter (``ops: Ops``). Async although it never waits: FastAPI runs a plain
    `def` dependency in its thread pool, a hop that cost a REST request about 0.6 ms on 2 busy cores
    (docs/benchmarks.md, 2026-11-28)."""

    async def dependency(request: Request) -> Any:
        return getattr(request.app.state, name)

    dependency.__name__ = f"app_state_{name}"
    return dependency


# The hints a REST caller may give about itself, documented and pre-checked as current_caller's parameters.
AgentHeader = Annotated[
    str | None,
    Header(
        alias="X-Engram-Agent-ID",
        pattern=f"^{IDENTITY_PATTERN}$",
        max_length=MAX_IDENTITY_CHARS,
        description="The agent acting, as agent or agent@device (a shared key); a key created with "
        "--agent acts as its agent and refuses another name.",
    ),
]
AgentQuery = Annotated[
    str | None,
    Query(
        alias="agent_id",
        pattern=f"^{IDENTITY_PATTERN}$",
        max_length=MAX_IDENTITY_CHARS,
        description="The agent acting, when a header is impractical.",
    ),
]
DeviceHeader = Annotated[
    str | None,
    Header(
        alias="X-Engram-Device",
        pattern=f"^{DEVICE_PATTERN}$",
        description="The device the agent runs on (its host name, e.g. laptop).",
    ),
]
TeamHeader = Annotated[
    str | None,
    Header(
        alias="X-Engram-Team",
        pattern=f"^{TEAM_PATTERN}$",
        description="The agent's team; its saves are tagged team:<name>.",
    ),
]


async def current_caller(
    request: Request,
    _credentials: Annotated[Any, Depends(bearer)],
    _agent_header: AgentHeader = None,
    _agent_query: AgentQuery = None,
    _device_header: DeviceHeader = None,
    _team_header: TeamHeader = None,
) -> Caller:
    """The caller of a REST request, by the resolver of the app serving it (a FastAPI dependency, documented in
    OpenAPI)."""
    # The parameters document and pre-check the hints; the resolver reads them from the request itself, and
    # the raw Authorization header, not the HTTPBearer result: a non-Bearer scheme must be refused, not ignored.
    resolver: Resolver = request.app.state.resolver
    return resolver.resolve(RequestIdentity.from_request(request), default_source=REST_SOURCE)


# The caller of a request, by the resolver of the app serving it (app.state.resolver), and what else build_app puts
# in app.state: what routes declared at module level take as parameters.
CurrentCaller = Annotated[Caller, Depends(current_caller)]
Ops = Annotated[Operations, Depends(app_state("ops"))]
CurrentSettings = Annotated[Settings, Depends(app_state("settings"))]
CurrentBackend = Annotated[Backend, Depends(app_state("backend"))]
CurrentResolver = Annotated[Resolver, Depends(app_state("resolver"))]
EventLog = Annotated[Log | None, Depends(app_state("event_log"))]  # None for a gateway without NATS
Context = Annotated[SessionContext, Depends(app_state("session_context"))]
Packs = Annotated[PackService, Depends(app_state("packs"))]
Quarantine = Annotated[QuarantineOperations, Depends(app_state("quarantine"))]
