"""Typed settings, read once from ENGRAM_* variables and command-line flags, then passed down."""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram.models import catalog
from engram.vocab import DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT  # noqa: F401  # defined where the CLI reads them

DEFAULT_MIN_RELEVANCE = 0.15  # dense cosine; calibrated in docs/search.md ("Only relevant hits")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_GRPC_LISTEN = "127.0.0.1:0"
DEFAULT_STREAM = "ENGRAM"
DEFAULT_MAX_CONTENT_BYTES = 32 * 1024
DEFAULT_MAX_METADATA_BYTES = 16 * 1024
DEFAULT_READ_WAIT_SECONDS = 5.0
DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024  # a JSON request (save, search, an MCP message)
DEFAULT_MAX_IMPORT_LINE_BYTES = 1024 * 1024  # one line of a bulk import
# One import request (a chunk of a JSONL file; `engram import` sends at most 8 MiB per request). It is streamed,
# never held whole, so it may be larger than a JSON request; the limit bounds how long one request can run.
DEFAULT_MAX_IMPORT_BYTES = 32 * 1024 * 1024
DEFAULT_DISK_RESERVE_MB = 100  # writes stop (and readiness says why) when less is free in the data dir
# The MCP tool profiles (engram.services.gateway.mcp.profiles): full lists every tool, core the everyday ones.
MCP_TOOL_PROFILES = ("full", "core")
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # an installed model's directory name


class SettingsError(ValueError):
    """A setting has a value Engram cannot use; the message names the variable."""


LIMIT = "limit"  # the key of a field's Limit in its dataclass metadata
Bound = float | str  # a number, or the name of the setting whose value bounds this one


@dataclass(frozen=True, slots=True)
class Limit:
    """The values a setting may take, declared with its field (``limited``): bounds (numbers, or other settings
    named), choices, a pattern, values allowed whatever the rest says (0: off), and how its error reads."""

    ge: Bound | None = None
    gt: Bound | None = None
    le: Bound | None = None
    choices: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = None
    allow: tuple[object, ...] = ()
    what: str = ""  # the bounds as the message says them ("0-65535"); derived from them when empty
    message: str = ""  # the whole message, for settings whose limits are said together; {value} fills in

    def check(self, settings: Settings, name: str) -> None:
        """Raises SettingsError when ``settings.<name>`` is outside this limit."""
        value = getattr(settings, name)
        if value not in self.allow and not self._within(value, settings):
            raise SettingsError(self.error(name, value))

    def _within(self, value: Any, settings: Settings) -> bool:
        def bound(b: Bound) -> Any:
            return getattr(settings, b) if isinstance(b, str) else b

        if self.choices and value not in self.choices:
            return False
        if self.pattern is not None and not self.pattern.fullmatch(value):
            return False
        return (
            (self.ge is None or value >= bound(self.ge))
            and (self.gt is None or value > bound(self.gt))
            and (self.le is None or value <= bound(self.le))
        )

    def error(self, name: str, value: Any) -> str:
        if self.message:
            return self.message.format(value=value)
        variable = f"ENGRAM_{name.upper()}"
        if self.choices:
            return f"{variable} must be {_either(repr(c) for c in self.choices)}, got {value!r}"
        bounds = [f"{op} {b}" for op, b in ((">=", self.ge), (">", self.gt), ("<=", self.le)) if b is not None]
        return f"{variable} must be {self.what or ' and '.join(bounds)}, got {value}"


def limited(default: Any, **limit: Any) -> Any:
    """A settings field with its default and its ``Limit`` (as pydantic's ``Field(default, ge=..., le=...)``)."""
    return field(default=default, metadata={LIMIT: Limit(**limit)})


def _either(words: Iterable[str]) -> str:
    """ "a", "a or b", "a, b or c"."""
    items = list(words)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def _named(kind: str) -> str:
    return (
        f"{catalog.SETTINGS[kind]} must be a model name ({catalog.choices(kind)}, or one installed with "
        "`engram models pull`), got {value!r}"
    )


# The messages of settings said together (one message names every setting of its group), as users have seen them.
_MCP_TOOLS = (
    "ENGRAM_MCP_TOOLS must be 'full' (every MCP tool) or 'core' (the everyday ones, for a small context), got {value!r}"
)
_CONTENT_AND_WAIT = "ENGRAM_MAX_CONTENT_BYTES must be > 0 and ENGRAM_READ_WAIT_SECONDS >= 0"
_REQUEST_BYTES = "ENGRAM_MAX_REQUEST_BYTES and ENGRAM_MAX_IMPORT_LINE_BYTES must be at least 4096"
_IMPORT_BYTES = "ENGRAM_MAX_IMPORT_BYTES must be at least ENGRAM_MAX_IMPORT_LINE_BYTES"
_EXPIRY = "ENGRAM_EXPIRY_INTERVAL_SECONDS must be >= 0 (0 turns expiry off), got {value}"
_INTERVAL_AND_COLD = (
    "ENGRAM_CONSOLIDATION_INTERVAL_SECONDS must be >= 0 (0 turns scheduled runs off) and "
    "ENGRAM_DECAY_COLD_AFTER_DAYS > 0"
)
_ARCHIVE = "ENGRAM_DECAY_ARCHIVE_AFTER_DAYS must be 0 (never) or more than ENGRAM_DECAY_COLD_AFTER_DAYS"
_SSE = "ENGRAM_SSE_QUEUE_EVENTS must be >= 1 and ENGRAM_SSE_HEARTBEAT_SECONDS > 0"
_SESSION_WEIGHTS = "ENGRAM_SESSION_QUALITY_WEIGHT and ENGRAM_SESSION_RECENCY_WEIGHT must be >= 0"
_HOOKS = (
    "ENGRAM_HOOK_CONTEXT_TOKENS must be 50-8000, ENGRAM_HOOK_MIN_QUALITY 0-1, "
    "ENGRAM_HOOK_MAX_CHARS >= 80 and ENGRAM_HOOK_SPOOL_MAX_BYTES >= 65536"
)
_MIN_RELEVANCE = "ENGRAM_MIN_RELEVANCE must be between 0 and 1 (0: no floor), got {value}"
_SYNC = (
    "ENGRAM_SYNC_INTERVAL_SECONDS must be > 0 and 0 < ENGRAM_SYNC_RETRY_FIRST_SECONDS <= ENGRAM_SYNC_RETRY_MAX_SECONDS"
)
_MALLOC = "ENGRAM_MALLOC_ARENAS and ENGRAM_MALLOC_TRIM_MB must be >= 0"
_EMBED_MODEL = (
    f"ENGRAM_EMBED_MODEL must be {catalog.choices(catalog.EMBEDDER)} (see `engram models list`), got {{value!r}}"
)


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything configurable about a node or a single service. See the README's configuration table."""

    home: Path = field(default_factory=lambda: Path.home() / ".engram")
    host: str = DEFAULT_HOST
    port: int = limited(DEFAULT_PORT, ge=0, le=65535, what="0-65535")
    nats_url: str | None = None  # None in embedded mode: start a private nats-server
    grpc_listen: str = DEFAULT_GRPC_LISTEN
    ingest_addr: str | None = None
    search_addr: str | None = None
    consolidation_addr: str | None = None  # gateway: where team summaries (and other jobs) run
    sync_addr: str | None = None  # gateway: where edge devices push and pull (the sync service)
    stream: str = DEFAULT_STREAM
    # Cluster: copies of the log (and of its KV buckets) a NATS cluster keeps; 3 in the chart
    stream_replicas: int = limited(
        1, ge=1, le=5, message="ENGRAM_STREAM_REPLICAS must be 1-5 (a NATS cluster keeps at most 5), got {value}"
    )
    nats_user: str | None = None  # cluster: NATS credentials when its server requires them (the chart's accounts)
    nats_password: str | None = None
    nats_creds: Path | None = None  # cluster: a NATS .creds file (JWT + nkey), instead of a user and password
    # Prometheus: every service answers GET /metrics on this host:port (empty: off). The gateway also answers
    # /metrics on its own port (loopback callers and admin keys only).
    metrics_listen: str = ""
    dev_mode: bool | None = None  # None: on when bound to loopback
    keys_file: Path | None = None
    agent_id: str | None = None  # stdio clients: who the agent is when the client does not say
    api_key: str | None = None  # stdio clients: the key to act with
    device: str = field(default_factory=socket.gethostname)  # stdio clients: the device the agent runs on
    team: str | None = None  # stdio clients: the agent's team (else CLAUDE_TEAM_NAME, else ~/.claude/teams)
    # The MCP tools a connection lists unless it asks (?tools= or X-Engram-Tools over HTTP): full or core (the
    # Everyday ones, for clients with a small context); `engram mcp --tools` for a stdio server.
    mcp_tools: str = limited("core", choices=MCP_TOOL_PROFILES, message=_MCP_TOOLS)  # core: under 20 KB of tools/list
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    max_content_bytes: int = limited(DEFAULT_MAX_CONTENT_BYTES, gt=0, message=_CONTENT_AND_WAIT)
    max_metadata_bytes: int = DEFAULT_MAX_METADATA_BYTES
    max_request_bytes: int = limited(DEFAULT_MAX_REQUEST_BYTES, ge=4096, message=_REQUEST_BYTES)
    max_import_line_bytes: int = limited(DEFAULT_MAX_IMPORT_LINE_BYTES, ge=4096, message=_REQUEST_BYTES)
    max_import_bytes: int = limited(DEFAULT_MAX_IMPORT_BYTES, ge="max_import_line_bytes", message=_IMPORT_BYTES)
    disk_reserve_mb: int = limited(DEFAULT_DISK_RESERVE_MB, ge=0)
    read_wait_seconds: float = limited(DEFAULT_READ_WAIT_SECONDS, ge=0, message=_CONTENT_AND_WAIT)
    # How often read counts (access_count) are written to the log, batched
    access_flush_seconds: float = limited(10.0, gt=0)
    # How often consolidation expires memories whose expires_at passed
    expiry_interval_seconds: float = limited(60.0, ge=0, message=_EXPIRY)
    # A consolidation job's lease in NATS KV outlives a dead runner this long
    job_lease_seconds: float = limited(30.0, gt=0)
    # How often every namespace gets an `all` job (0: never)
    consolidation_interval_seconds: float = limited(86400.0, ge=0, message=_INTERVAL_AND_COLD)
    # Contradictions and updates one run proposes per namespace at most
    consolidation_max_proposals: int = limited(20, ge=1)
    # The `all` job's dedupe and contradictions (which read the whole namespace) run in a child process, whose memory
    # goes back to the system when it ends; false: in the service's own process (docs/operations.md, "Memory").
    consolidation_child: bool = True
    # Idle memories of a decaying importance move to the cold tier
    decay_cold_after_days: float = limited(30.0, gt=0, message=_INTERVAL_AND_COLD)
    # ... and are archived after this long idle (0: never archived)
    decay_archive_after_days: float = limited(0.0, gt="decay_cold_after_days", allow=(0,), message=_ARCHIVE)
    decay_importances: str = "low"  # comma separated: the importances that decay
    decay_keep_types: str = "fact"  # comma separated: memory types that never decay
    # A handoff still pending after this long expires into a plain memory
    handoff_ttl_seconds: float = limited(86400.0, gt=0)
    derive_context: bool = True  # a save with a conversation_id and no context gets the previous memory as context
    # install_engram may read packs from the gateway host's own files (file:// URLs, paths): off, since a caller
    # would read files of the server; a single-user node may turn it on.
    packs_local_sources: bool = False
    # Events held per SSE client that reads slowly; the oldest go first, then a gap
    sse_queue_events: int = limited(256, ge=1, message=_SSE)
    # A comment line this often keeps proxies from closing an idle stream
    sse_heartbeat_seconds: float = limited(15.0, gt=0, message=_SSE)
    # Session_context: how much quality (importance, confidence, use) counts
    session_quality_weight: float = limited(0.6, ge=0, message=_SESSION_WEIGHTS)
    # Session_context: how much recency counts
    session_recency_weight: float = limited(0.4, ge=0, message=_SESSION_WEIGHTS)
    # Dense similarity from which another agent's finding is "very similar"
    similar_finding_threshold: float = limited(0.85, gt=0, le=1, what="in (0, 1]")
    # Capture through agents' hooks (engram hooks, docs/hooks.md): the session context a session start injects, the
    # Quality an observation needs to be kept, and the most characters one observation keeps.
    hook_context_tokens: int = limited(800, ge=50, le=8000, message=_HOOKS)
    hook_min_quality: float = limited(0.5, ge=0, le=1, message=_HOOKS)
    hook_max_chars: int = limited(1000, ge=80, message=_HOOKS)
    hook_url: str = ""  # the node the hooks deliver to; empty: the local node (`engram hooks install --url` sets it)
    # Captures waiting for the node: beyond it the oldest are dropped
    hook_spool_max_bytes: int = limited(8 * 1024 * 1024, ge=64 * 1024, message=_HOOKS)
    qdrant_url: str | None = None
    # Where built ONNX models, installed rerankers and a fetched embedding model are kept: one per machine by default
    # (every data dir on it shares them), $XDG_CACHE_HOME/engram/models or ~/.cache/engram/models.
    model_cache: Path = field(default_factory=lambda: default_model_cache())
    # int8: per-channel int8 weights, about 1.7x faster embedding on CPU at cosine ~0.99 to fp32 and the same
    # Retrieval quality within 0.002 (docs/search.md); fp32 is the exact network.
    embed_precision: str = limited("int8", choices=("fp32", "int8"))
    # The models by name (engram.models.catalog, `engram models list`): the embedder of the list (a data dir keeps the
    # one it started with); the reranker and the NLI model of the list or installed under that name (empty: the
    # Active installed reranker, the newest installed NLI model, if any).
    embed_model: str = limited(
        catalog.DEFAULT_EMBEDDER, choices=tuple(catalog.names(catalog.EMBEDDER)), message=_EMBED_MODEL
    )
    rerank_model: str = limited("", pattern=_PLAIN_NAME, allow=("",), message=_named(catalog.RERANKER))
    nli_model: str = limited("", pattern=_PLAIN_NAME, allow=("",), message=_named(catalog.NLI))
    # Runs of a bulk embed (an import's batch) at once, each on one thread; 0: one per usable core. 1 runs them one
    # after another on the intra-op threads, as a save's single run always does (engram.embed.OnnxEmbedder.embed).
    # 1 until a quiet machine shows the workers' gain outweighs the RSS they add (docs/benchmarks.md, issue 35).
    embed_workers: int = limited(1, ge=0, message="ENGRAM_EMBED_WORKERS must be >= 0 (0: one per core), got {value}")
    qdrant_api_key: str | None = None
    qdrant_collection: str = "engram_memories"
    llm_url: str | None = None  # OpenAI-compatible base URL, e.g. http://localhost:11434/v1
    llm_model: str = "gpt-4o-mini"
    llm_api_key: str | None = None
    llm_timeout_seconds: float = 30.0
    enrich_retry_base_seconds: float = 2.0  # first retry delay of a failed enrichment; doubles each time
    enrich_max_attempts: int = 6
    # Adaptive (by the query's kind), relative (min-max normalised weighted scores) or rrf
    fusion: str = limited("adaptive", choices=("adaptive", "relative", "rrf"))
    rrf_k: float = 10.0
    weight_dense: float = 1.0
    weight_bm25: float = 1.5
    weight_questions: float = 1.0
    rerank: bool = True  # rerank by default when a reranker is installed
    rerank_top_n: int = 20
    min_relevance: float = limited(DEFAULT_MIN_RELEVANCE, ge=0, le=1, message=_MIN_RELEVANCE)  # 0: no floor
    subject_first: bool = True  # the newest statement of a subject ranks first (issue 36; services/search/latest.py)
    superseded_match: bool = True  # a superseded memory's match counts for the one that replaced it (docs/search.md)
    # The embedded node's gateway asks its own search service for searches directly (no gRPC hop; issue 35); off: over
    # gRPC, as a gateway of the cluster does (kept to measure one against the other, docs/benchmarks.md).
    search_in_process: bool = True
    hf_endpoint: str = "https://huggingface.co"
    hf_token: str | None = None
    log_level: str = "INFO"
    # Edge devices (engram edge): the cluster's gateway, the device's sync key, and how the sync worker paces itself.
    upstream: str = ""  # the cluster gateway's URL; empty: not an edge device
    upstream_key: str | None = None  # an API key of the cluster with the sync scope
    sync_interval_seconds: float = limited(5.0, gt=0, message=_SYNC)  # between sync rounds when nothing is waiting
    # First back-off after a failed round; doubles (with jitter) up to the max
    sync_retry_first_seconds: float = limited(1.0, gt=0, le="sync_retry_max_seconds", message=_SYNC)
    sync_retry_max_seconds: float = 300.0
    sync_batch: int = limited(200, ge=1, le=500, what="1-500")  # changes per push and per pull page
    sync_namespace: str = "default"  # the device's namespace that syncs with the key's namespace on the cluster
    # Memory on small devices (docs/operations.md, "Edge devices"): ram keeps the index's dense vectors in memory and
    # Scores them exactly; disk leaves them on disk and searches int8 copies in memory (what `engram edge` uses).
    index_vectors: str = limited("ram", choices=("ram", "disk"))
    # The index's shards each in a process of its own beside the node (engram.index.qdrant_edge.process): Qdrant
    # Edge holds the GIL for each call, and a built copy's load stopped the node's every call for 0.5-1.6 s at 50k
    # memories.
    index_process: bool = True
    # Glibc malloc arenas the native threads share (0: glibc's default, 8 per core)
    malloc_arenas: int = limited(2, ge=0, message=_MALLOC)
    # Freed C heap kept before it is handed back to the system (0: never trimmed)
    malloc_trim_mb: int = limited(64, ge=0, message=_MALLOC)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Reads ENGRAM_<FIELD> variables, then applies non-None overrides (command-line flags)."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            raw = env.get(f"ENGRAM_{f.name.upper()}")
            if raw is not None and raw != "":
                values[f.name] = _parse(f.name, str(f.type), raw)
        values.update({k: v for k, v in overrides.items() if v is not None})
        if "home" in values:
            values["home"] = Path(values["home"]).expanduser()
        settings = cls(**values)
        settings.validate()
        return settings

    def validate(self) -> None:
        """Raises SettingsError for values that cannot work: each field's own limit (``limited``), then the rules that
        relate settings without bounding either."""
        for f in dataclasses.fields(self):
            limit = f.metadata.get(LIMIT)
            if limit is not None:
                limit.check(self, f.name)
        if bool(self.nats_user) != bool(self.nats_password):
            raise SettingsError("ENGRAM_NATS_USER and ENGRAM_NATS_PASSWORD go together: set both or neither")
        if self.nats_creds and self.nats_user:
            raise SettingsError("Set ENGRAM_NATS_CREDS or ENGRAM_NATS_USER/ENGRAM_NATS_PASSWORD, not both")

    @property
    def loopback(self) -> bool:
        """True when the gateway only listens on a loopback address."""
        return is_loopback(self.host)

    @property
    def dev(self) -> bool:
        """Dev mode (anonymous callers allowed): only ever on a loopback bind."""
        return self.loopback and self.dev_mode is not False

    @property
    def keys_path(self) -> Path:
        return self.keys_file or self.home / "keys.json"

    @property
    def model_cache_dir(self) -> Path:
        return self.model_cache

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)


def default_model_cache(env: Mapping[str, str] | None = None) -> Path:
    """The machine's model cache: $XDG_CACHE_HOME/engram/models, else ~/.cache/engram/models."""
    env = os.environ if env is None else env
    cache_home = env.get("XDG_CACHE_HOME", "")
    root = Path(cache_home).expanduser() if Path(cache_home).expanduser().is_absolute() else Path.home() / ".cache"
    return root / "engram" / "models"


def is_loopback(host: str) -> bool:
    """True for localhost and loopback IPs."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _parse(name: str, type_name: str, raw: str) -> Any:
    try:
        if "bool" in type_name:
            lowered = raw.strip().lower()
            if lowered not in {"1", "0", "true", "false", "yes", "no", "on", "off"}:
                raise ValueError(raw)
            return lowered in {"1", "true", "yes", "on"}
        if type_name.startswith("int"):
            return int(raw)
        if type_name.startswith("float"):
            return float(raw)
        if type_name.startswith("tuple"):
            return tuple(part.strip() for part in raw.split(",") if part.strip())
        if type_name.startswith("Path"):
            return Path(raw).expanduser()
        return raw
    except ValueError as e:
        raise SettingsError(f"ENGRAM_{name.upper()}={raw!r} is not a valid {type_name}") from e
