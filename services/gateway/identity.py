"""Who is calling: API-key authentication, agent resolution and scope checks, independent of any transport."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from engram.config import Settings, SettingsError
from engram.errors import InvalidArgument, PermissionDenied, Unauthenticated
from engram.keys import ApiKey, KeyStore
from engram.model import Caller
from engram.names import validate_agent

ANONYMOUS_AGENT = "anonymous"
DEV_NAMESPACE = "default"
DEV_SCOPES = frozenset({"read", "write"})
REST_SOURCE = "rest"
MCP_SOURCE = "mcp"

AGENT_HEADER = "x-engram-agent-id"
AGENT_QUERY = "agent_id"

CREATE_KEY_HINT = "engram keys create --namespace N --agent A"


@dataclass(frozen=True, slots=True)
class RequestIdentity:
    """What one request says about its caller, gathered by the transport (all optional)."""

    authorization: str | None = None  # the raw Authorization header
    agent_header: str | None = None  # X-Engram-Agent-ID
    agent_query: str | None = None  # ?agent_id=
    client_name: str | None = None  # MCP clientInfo.name

    @classmethod
    def from_http(
        cls,
        headers: Mapping[str, str] | None,
        query: Mapping[str, str] | None,
        client_name: str | None = None,
    ) -> RequestIdentity:
        """Reads the credential and agent hints of an HTTP request (headers must be case-insensitive)."""
        headers = headers or {}
        query = query or {}
        return cls(
            authorization=headers.get("authorization"),
            agent_header=headers.get(AGENT_HEADER),
            agent_query=query.get(AGENT_QUERY),
            client_name=client_name,
        )


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

    Over HTTP the key comes from the Authorization header only. A stdio resolver (``stdio=True``) acts with
    ``settings.api_key`` and falls back to ``settings.agent_id`` when nothing names the agent, because a
    spawned process has no headers.
    """

    def __init__(self, settings: Settings, keys: KeyStore, *, stdio: bool = False) -> None:
        self._settings = settings
        self._keys = keys
        self._stdio = stdio

    @property
    def dev(self) -> bool:
        """True when callers without a key are let in (anonymous, namespace ``default``)."""
        return self._settings.dev

    def authenticate(self, authorization: str | None) -> ApiKey | None:
        """The key presented, or None for an anonymous dev-mode caller; raises Unauthenticated otherwise.

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
                + f". Create one with `{CREATE_KEY_HINT}`."
            )
        key = self._keys.verify(secret)
        if key is None:
            where = "ENGRAM_API_KEY" if self._stdio else "The API key"
            raise Unauthenticated(
                f"{where} is not valid (unknown, revoked or mistyped). "
                f"Check it, or create a new one with `{CREATE_KEY_HINT}`."
            )
        return key

    def resolve(self, request: RequestIdentity, *, default_source: str = REST_SOURCE) -> Caller:
        """Authenticates and names the caller; the namespace only ever comes from the key."""
        key = self.authenticate(request.authorization)
        return Caller(
            namespace=key.namespace if key else DEV_NAMESPACE,
            agent_id=self._agent(request, key),
            source=_present(request.client_name) or default_source,
            scopes=_scopes(key),
        )

    def _agent(self, request: RequestIdentity, key: ApiKey | None) -> str:
        # DESIGN.md order: header, query parameter, key's agent, clientInfo.name, ENGRAM_AGENT_ID, anonymous.
        explicit = (
            ("X-Engram-Agent-ID", _present(request.agent_header)),
            ("agent_id", _present(request.agent_query)),
        )
        for field, value in explicit:
            if value is not None:
                return _valid_agent(field, value)
        if key is not None:
            return key.agent
        if (name := _present(request.client_name)) is not None:
            # Client names are free text ("Claude Code"); an unusable one is skipped rather than refused,
            # since the agent never chose it.
            return _agent_from_client_name(name) or self._fallback_agent()
        return self._fallback_agent()

    def _fallback_agent(self) -> str:
        configured = _present(self._settings.agent_id) if self._stdio else None
        return _valid_agent("ENGRAM_AGENT_ID", configured) if configured else ANONYMOUS_AGENT


def require_scope(caller: Caller, scope: str) -> None:
    """Raises PermissionDenied unless the caller may ``scope`` ("read", "write" or "admin"; "admin" implies all)."""
    if scope in caller.scopes or "admin" in caller.scopes:
        return
    action = {"read": "read memories", "write": "save or change memories", "admin": "purge memories"}.get(scope, scope)
    scopes = "read,write,admin" if scope == "admin" else "read,write"
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


def _present(value: str | None) -> str | None:
    return value.strip() if value is not None and value.strip() else None


def _valid_agent(field: str, value: str) -> str:
    try:
        return validate_agent(value)
    except ValueError as e:
        raise InvalidArgument(field, str(e)) from e


def _agent_from_client_name(name: str) -> str | None:
    candidate = "-".join(name.split())
    try:
        return validate_agent(candidate)
    except ValueError:
        return None


def _scopes(key: ApiKey | None) -> frozenset[str]:
    return key.scopes if key is not None else DEV_SCOPES
