"""Who is calling: API-key authentication, the agent, its device and team, and scope checks, for every transport."""

from __future__ import annotations

import ipaddress
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from starlette.requests import HTTPConnection

from engram import claudeteams
from engram.claudeteams import CLAUDE_TEAM_VARIABLES
from engram.claudeteams import CLAUDE_TEAMS_READ as CLAUDE_TEAMS_READ  # re-exported
from engram.config import Settings, SettingsError
from engram.errors import InvalidArgument, PermissionDenied, Unauthenticated
from engram.keys import ApiKey, KeyStore
from engram.model import Caller
from engram.names import (
    is_valid_namespace,
    source_of_client,
    split_agent,
    validate_device,
    validate_source,
    validate_team,
)

log = logging.getLogger(__name__)

ANONYMOUS_AGENT = "anonymous"
DEV_NAMESPACE = "default"
DEV_SCOPES = frozenset({"read", "write", "packs"})  # a dev node is its user's own: it installs packs too
REST_SOURCE = "rest"
MCP_SOURCE = "mcp"

AGENT_HEADER = "x-engram-agent-id"
AGENT_QUERY = "agent_id"
DEVICE_HEADER = "x-engram-device"
TEAM_HEADER = "x-engram-team"
# What made the request, when not the transport itself: `hook` for what agents' hooks capture (engram/hooks/). Like
# an agent's name it is the caller's word, shown beside each memory (console, history), never an authority; its rule
# (engram.names.validate_source) holds for every edge: refused in the header, normalised from MCP clientInfo.name.
SOURCE_HEADER = "x-engram-source"
# What `engram mcp` relays of its own settings when it forwards a stdio client to the node's /mcp (its
# ENGRAM_AGENT_ID, ENGRAM_DEVICE, and ENGRAM_TEAM or the Claude Code team it runs in): the fallbacks a stdio server
# uses, honoured at the same place in each order, after everything the request or its key states. They carry less
# than X-Engram-Agent-ID, X-Engram-Device and X-Engram-Team, which any caller may send and which come first; a key
# created with --agent never consults them.
DEFAULT_AGENT_HEADER = "x-engram-default-agent"
DEFAULT_DEVICE_HEADER = "x-engram-default-device"
DEFAULT_TEAM_HEADER = "x-engram-default-team"

CREATE_KEY_HINT = "engram keys create --namespace N --agent A"
CREATE_SYNC_KEY_HINT = "engram keys create --namespace N --device D --scopes sync"  # an edge device's key
# How a caller names itself when a shared key (created without --agent) does not: over HTTP, and over stdio.
NAME_YOURSELF = (
    "send the X-Engram-Agent-ID header (e.g. claude-code@laptop) or the ?agent_id= query parameter, "
    f"let the MCP client send its clientInfo.name, or use a key created with --agent (`{CREATE_KEY_HINT}`)"
)
NAME_YOURSELF_STDIO = (
    "set ENGRAM_AGENT_ID (e.g. claude-code@laptop), let the MCP client send its clientInfo.name, "
    f"or set ENGRAM_API_KEY to a key created with --agent (`{CREATE_KEY_HINT}`)"
)


@dataclass(frozen=True, slots=True)
class RequestIdentity:
    """What one request says about its caller, gathered by the transport (all optional)."""

    authorization: str | None = None  # the raw Authorization header
    agent_header: str | None = None  # X-Engram-Agent-ID
    agent_query: str | None = None  # ?agent_id=
    client_name: str | None = None  # MCP clientInfo.name
    device_header: str | None = None  # X-Engram-Device
    team_header: str | None = None  # X-Engram-Team
    source_header: str | None = None  # X-Engram-Source
    client_host: str | None = None  # the peer's address (HTTP only)
    default_agent: str | None = None  # X-Engram-Default-Agent: a relaying `engram mcp`'s ENGRAM_AGENT_ID
    default_device: str | None = None  # X-Engram-Default-Device: its ENGRAM_DEVICE
    default_team: str | None = None  # X-Engram-Default-Team: its ENGRAM_TEAM, else its Claude Code team

    @classmethod
    def from_http(
        cls,
        headers: Mapping[str, str] | None,
        query: Mapping[str, str] | None,
        client_name: str | None = None,
        *,
        client_host: str | None = None,
    ) -> RequestIdentity:
        """Reads the credential, agent, device and team hints of an HTTP request (headers must be
        case-insensitive); ``client_host`` is the peer's address, which names the device of a local caller."""
        headers = headers or {}
        query = query or {}
        return cls(
            authorization=headers.get("authorization"),
            agent_header=headers.get(AGENT_HEADER),
            agent_query=query.get(AGENT_QUERY),
            client_name=client_name,
            device_header=headers.get(DEVICE_HEADER),
            team_header=headers.get(TEAM_HEADER),
            source_header=headers.get(SOURCE_HEADER),
            client_host=client_host,
            default_agent=headers.get(DEFAULT_AGENT_HEADER),
            default_device=headers.get(DEFAULT_DEVICE_HEADER),
            default_team=headers.get(DEFAULT_TEAM_HEADER),
        )

    @classmethod
    def from_request(cls, request: HTTPConnection | None, client_name: str | None = None) -> RequestIdentity:
        """Reads an HTTP request, or only the client name when there is none (stdio)."""
        if request is None:
            return cls(client_name=client_name)
        host = request.client.host if request.client is not None else None
        return cls.from_http(request.headers, request.query_params, client_name, client_host=host)


def bearer_token(authorization: str | None) -> str | None:
    """The key of an ``Authorization: Bearer <key>`` header, None when the header is absent or empty."""
    if authorization is None or not authorization.strip():
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated(
            f"The Authorization header must be 'Bearer <API key>'. Create a key with `{CREATE_KEY_HINT}`."
        )
    return token.strip()


class Resolver:
    """Turns a request's credentials and hints into a Caller, the same way for MCP, REST and stdio.

    A key created with --agent always acts as its agent: a request naming another agent is refused. Only a shared
    key (or none, in dev mode) lets the caller name itself, and such a name is trusted, not proven.

    Over HTTP the key comes from the Authorization header only. A stdio resolver (``stdio=True``) acts with
    ``settings.api_key`` and falls back to ``settings.agent_id``, ``settings.device`` and ``local_team`` when
    nothing more specific names the agent, device or team, because a spawned process has no headers.
    """

    def __init__(
        self, settings: Settings, keys: KeyStore, *, stdio: bool = False, local_team: LocalTeam | None = None
    ) -> None:
        self._settings = settings
        self._keys = keys
        self._stdio = stdio
        self._local_team = local_team or LocalTeam(settings.team)

    @property
    def dev(self) -> bool:
        """True when callers without a key are let in (anonymous, namespace ``default``)."""
        return self._settings.dev

    def authenticate(self, authorization: str | None, *, create_hint: str = CREATE_KEY_HINT) -> ApiKey | None:
        """The key presented, or None for an anonymous dev-mode caller; raises Unauthenticated otherwise, naming
        ``create_hint`` as the command that makes a key.

        A key that is present but wrong is refused even in dev mode: silently demoting it to anonymous
        would put the caller's memories in the wrong namespace.
        """
        secret = self._settings.api_key if self._stdio else bearer_token(authorization)
        if secret is None or not secret.strip():
            if self.dev:
                return None
            raise Unauthenticated(
                "An API key is required: send 'Authorization: Bearer <key>'"
                + (" (or set ENGRAM_API_KEY)" if self._stdio else "")
                + f". Create one with `{create_hint}`."
            )
        key = self._keys.verify(secret)
        if key is None:
            where = "ENGRAM_API_KEY" if self._stdio else "The API key"
            raise Unauthenticated(
                f"{where} is not valid (unknown, revoked or mistyped). "
                f"Check it, or create a new one with `{create_hint}`."
            )
        return key

    def resolve(self, request: RequestIdentity, *, default_source: str = REST_SOURCE) -> Caller:
        """Authenticates and names the caller (``agent@device``, its team); the namespace only comes from the key."""
        key = self.authenticate(request.authorization)
        agent, named_device = self._agent(request, key)
        return Caller(
            namespace=key.namespace if key else DEV_NAMESPACE,
            agent_id=agent,
            source=_source(request.source_header) or _client_source(request.client_name) or default_source,
            scopes=_scopes(key),
            device=self._device(request, key, named_device),
            team=self._team(request, key),
            agent_from_key=key is not None and bool(key.agents),
        )

    def key_caller(self, authorization: str | None, *, agent: str, source: str) -> Caller:
        """The caller a key alone makes (its namespace, scopes and device; "" when it names none), acting as
        ``agent``: for calls that speak for many agents at once, such as an edge device's sync."""
        key = self.authenticate(authorization, create_hint=CREATE_SYNC_KEY_HINT)
        return Caller(
            namespace=key.namespace if key else DEV_NAMESPACE,
            agent_id=agent,
            source=source,
            scopes=_scopes(key) if key else DEV_SCOPES | {"sync"},  # a dev node on loopback: local devices may sync
            device=key.device if key else "",
        )

    def _agent(self, request: RequestIdentity, key: ApiKey | None) -> tuple[str, str]:
        """The owning agent and the device its id named ("" if none): ``claude-code@laptop`` owns as ``claude-code``."""
        if key is not None and key.agent:
            return _bound_agent(request, key.agents)
        # A shared key or none (dev mode): the caller names itself. DESIGN.md order: header, query parameter,
        # clientInfo.name, ENGRAM_AGENT_ID (stdio, or relayed by `engram mcp` as X-Engram-Default-Agent), anonymous.
        if claims := _claims(request):
            return claims[0].agent, claims[0].device
        if (name := _present(request.client_name)) is not None and (named := _agent_from_client_name(name)):
            # Client names are free text ("Claude Code"); an unusable one is skipped rather than refused,
            # since the agent never chose it.
            return named
        if (relayed := _present(request.default_agent)) is not None:
            return _split("X-Engram-Default-Agent (ENGRAM_AGENT_ID of engram mcp)", relayed)
        configured = _present(self._settings.agent_id) if self._stdio else None
        if configured is not None:
            return _split("ENGRAM_AGENT_ID", configured)
        if self.dev:
            return ANONYMOUS_AGENT, ""
        # Outside dev mode memories must belong to someone; only a shared key (no --agent) gets this far.
        how = NAME_YOURSELF_STDIO if self._stdio else NAME_YOURSELF
        raise InvalidArgument(
            "agent", f"nothing names the calling agent, and the API key is shared (created without --agent): {how}."
        )

    def _device(self, request: RequestIdentity, key: ApiKey | None, named_device: str) -> str:
        # X-Engram-Device, the key's device, the "@device" of the agent id, then where the process runs.
        if (header := _present(request.device_header)) is not None:
            return _valid("X-Engram-Device", header, validate_device)
        if key is not None and key.device:
            return key.device
        if named_device:
            return named_device
        if (relayed := _present(request.default_device)) is not None:
            return _valid("X-Engram-Default-Device (ENGRAM_DEVICE of engram mcp)", relayed, validate_device)
        if self._stdio or _is_loopback_peer(request.client_host):
            # stdio runs on the agent's machine; a loopback peer runs on the gateway's. (Behind a reverse proxy on
            # the same host every peer looks local: such deployments should send X-Engram-Device.)
            return _valid("ENGRAM_DEVICE", self._settings.device, validate_device) if self._settings.device else ""
        return ""

    def _team(self, request: RequestIdentity, key: ApiKey | None) -> str:
        # X-Engram-Team, the key's team, then (stdio) ENGRAM_TEAM, CLAUDE_TEAM_NAME, the newest Claude Code team
        # (relayed by `engram mcp` as X-Engram-Default-Team).
        if (header := _present(request.team_header)) is not None:
            return _valid("X-Engram-Team", header, validate_team)
        if key is not None and key.team:
            return key.team
        if (relayed := _present(request.default_team)) is not None:
            return _valid("X-Engram-Default-Team (ENGRAM_TEAM of engram mcp)", relayed, validate_team)
        return self._local_team() if self._stdio else ""


class LocalTeam:
    """The team of the agent that spawned a stdio server: ``configured`` (ENGRAM_TEAM), else the Claude Code team
    named by ``environ`` (CLAUDE_TEAM_NAME), else the newest active team under ``claude_dir`` (``~/.claude``).

    Detection runs once per process, on first use rather than at start (a team lead starts its MCP servers before
    it creates its team, and saves only later). Nothing is detected without ``claude_dir``.
    """

    def __init__(
        self, configured: str | None, *, environ: Mapping[str, str] | None = None, claude_dir: Path | None = None
    ) -> None:
        self._configured = _present(configured)
        self._environ = environ or {}
        self._claude_dir = claude_dir
        self._detected: str | None = None
        self._lock = threading.Lock()

    def __call__(self) -> str:
        if self._configured is not None:
            return _valid("ENGRAM_TEAM", self._configured, validate_team)
        with self._lock:
            if self._detected is None:
                self._detected = self._detect()
            return self._detected

    def _detect(self) -> str:
        for variable in CLAUDE_TEAM_VARIABLES:
            if (name := _present(self._environ.get(variable))) is not None:
                if is_valid_namespace(name):
                    return name
                log.warning("ignoring %s=%r: not a usable team name", variable, name)
        return newest_claude_team(self._claude_dir) if self._claude_dir is not None else ""


def newest_claude_team(claude_dir: Path) -> str:
    """The newest active agent team of Claude Code under ``claude_dir`` (engram.claudeteams), or ""."""
    return claudeteams.newest_claude_team(claude_dir, is_valid_namespace)


def require_scope(caller: Caller, scope: str) -> None:
    """Raises PermissionDenied unless the caller may ``scope`` ("read", "write" or "admin"; "admin" implies all)."""
    if scope in caller.scopes or "admin" in caller.scopes:
        return
    action = {
        "read": "read memories", "write": "save or change memories", "admin": "purge memories",
        "sync": "sync an edge device", "packs": "install expert packs",
    }.get(scope, scope)  # fmt: skip
    scopes = {"admin": "read,write,admin", "sync": "sync", "packs": "read,write,packs"}.get(scope, "read,write")
    raise PermissionDenied(
        f"This API key may not {action} (it grants: {', '.join(sorted(caller.scopes)) or 'nothing'}). "
        f"Use a key with the '{scope}' scope: `{CREATE_KEY_HINT} --scopes {scopes}`."
    )


def check_bind(settings: Settings, keys: KeyStore) -> None:
    """Refuses to start a gateway that other machines can reach while no API key exists."""
    if settings.loopback or len(keys) > 0:
        return
    raise SettingsError(
        f"Refusing to listen on {settings.host}: other machines can reach that address, and without API keys "
        f"({keys.path} has none) every request would be refused, since anonymous access is only allowed on a "
        f"loopback address. Create a key first with `{CREATE_KEY_HINT}`, "
        "or bind to 127.0.0.1 (ENGRAM_HOST=127.0.0.1) for local, keyless use."
    )


def _source(value: str | None) -> str | None:
    """The source a request names itself (X-Engram-Source), None when it names none; refused when unusable, since
    whoever sends the header can fix it."""
    if (named := _present(value)) is None:
        return None
    return _valid("X-Engram-Source", named, validate_source)


def _client_source(client_name: str | None) -> str | None:
    """The source an MCP client's clientInfo.name stands for, normalised (engram.names.source_of_client): the client
    chose its name, not the agent or its user, so an unusable one is never refused, only made safe or dropped."""
    return source_of_client(client_name) if client_name else None


def _present(value: str | None) -> str | None:
    return value.strip() if value is not None and value.strip() else None


def _valid(field: str, value: str, validate: Callable[[str], str]) -> str:
    try:
        return validate(value)
    except ValueError as e:
        raise InvalidArgument(field, str(e)) from e


def _split(field: str, value: str) -> tuple[str, str]:
    try:
        return split_agent(value)
    except ValueError as e:
        raise InvalidArgument(field, str(e)) from e


@dataclass(frozen=True, slots=True)
class _Claim:
    """An agent id the request itself states (header or query parameter), split into agent and device."""

    agent: str
    device: str
    where: str  # how the request said it, for error messages


def _claims(request: RequestIdentity) -> list[_Claim]:
    """The agent ids the request states, the header first; a malformed one is refused naming where it came from."""
    stated = (
        ("X-Engram-Agent-ID", "the X-Engram-Agent-ID header", request.agent_header),
        ("agent_id", "the ?agent_id= parameter", request.agent_query),
    )
    return [
        _Claim(*_split(field, value), where=where)
        for field, where, raw in stated
        if (value := _present(raw)) is not None
    ]


def _bound_agent(request: RequestIdentity, bound: tuple[str, ...]) -> tuple[str, str]:
    """The agent of a key created with --agent, which it always acts as. A request may repeat that name (with a
    device: ``alice@phone``), but one that claims another agent is refused: holding alice's key proves nothing
    about bob. The MCP client's name is not a claim (clients send their product's name) and is not consulted.

    A device's sync key may name several agents (those working on the device): a request acts as the one it names.
    """
    agents = dict(split_agent(name) for name in bound)  # agent -> its key's device; validated when the key was made
    claims = _claims(request)
    for claim in claims:
        if claim.agent not in agents:
            raise PermissionDenied(
                f"This key acts as {_one_of(agents)}; it cannot speak for '{claim.agent}'. "
                f"Drop {claim.where} or use {claim.agent}'s key."
            )
    if claims:
        return claims[0].agent, claims[0].device or agents[claims[0].agent]
    if len(agents) == 1:
        return next(iter(agents.items()))
    raise InvalidArgument(
        "agent",
        f"the API key names several agents ({_one_of(agents)}): send X-Engram-Agent-ID (or ?agent_id=) naming "
        "the one acting.",
    )


def _one_of(agents: Iterable[str]) -> str:
    """'a', 'a' or 'b', 'a', 'b' or 'c'."""
    quoted = [f"'{agent}'" for agent in agents]
    return " or ".join([", ".join(quoted[:-1]), quoted[-1]] if len(quoted) > 1 else quoted)


def _agent_from_client_name(name: str) -> tuple[str, str] | None:
    try:
        return split_agent("-".join(name.split()))
    except ValueError:
        return None


def _is_loopback_peer(host: str | None) -> bool:
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost"
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1 from a dual-stack socket
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def _scopes(key: ApiKey | None) -> frozenset[str]:
    return key.scopes if key is not None else DEV_SCOPES
