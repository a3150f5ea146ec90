"""Typed settings, read once from ENGRAM_* variables and command-line flags, then passed down."""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram.vocab import DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT  # noqa: F401  # defined where the CLI reads them

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


class SettingsError(ValueError):
    """A setting has a value Engram cannot use; the message names the variable."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything configurable about a node or a single service. See the README's configuration table."""

    home: Path = field(default_factory=lambda: Path.home() / ".engram")
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    nats_url: str | None = None  # None in embedded mode: start a private nats-server
    grpc_listen: str = DEFAULT_GRPC_LISTEN
    ingest_addr: str | None = None
    search_addr: str | None = None
    consolidation_addr: str | None = None  # gateway: where team summaries (and other jobs) run
    sync_addr: str | None = None  # gateway: where edge devices push and pull (the sync service)
    stream: str = DEFAULT_STREAM
    stream_replicas: int = 1  # cluster: copies of the log (and of its KV buckets) a NATS cluster keeps; 3 in the chart
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
    # everyday ones, for clients with a small context); `engram mcp --tools` for a stdio server.
    mcp_tools: str = "core"  # the everyday tools (under 20 KB of tools/list); full: every tool
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    max_content_bytes: int = DEFAULT_MAX_CONTENT_BYTES
    max_metadata_bytes: int = DEFAULT_MAX_METADATA_BYTES
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    max_import_line_bytes: int = DEFAULT_MAX_IMPORT_LINE_BYTES
    max_import_bytes: int = DEFAULT_MAX_IMPORT_BYTES
    disk_reserve_mb: int = DEFAULT_DISK_RESERVE_MB
    read_wait_seconds: float = DEFAULT_READ_WAIT_SECONDS
    access_flush_seconds: float = 10.0  # how often read counts (access_count) are written to the log, batched
    expiry_interval_seconds: float = 60.0  # how often consolidation expires memories whose expires_at passed
    job_lease_seconds: float = 30.0  # a consolidation job's lease in NATS KV outlives a dead runner this long
    consolidation_interval_seconds: float = 86400.0  # how often every namespace gets an `all` job (0: never)
    consolidation_max_proposals: int = 20  # contradictions and updates one run proposes per namespace at most
    # The `all` job's dedupe and contradictions (which read the whole namespace) run in a child process, whose memory
    # goes back to the system when it ends; false: in the service's own process (docs/operations.md, "Memory").
    consolidation_child: bool = True
    decay_cold_after_days: float = 30.0  # idle memories of a decaying importance move to the cold tier
    decay_archive_after_days: float = 0.0  # ... and are archived after this long idle (0: never archived)
    decay_importances: str = "low"  # comma separated: the importances that decay
    decay_keep_types: str = "fact"  # comma separated: memory types that never decay
    handoff_ttl_seconds: float = 86400.0  # a handoff still pending after this long expires into a plain memory
    derive_context: bool = True  # a save with a conversation_id and no context gets the previous memory as context
    # install_engram may read packs from the gateway host's own files (file:// URLs, paths): off, since a caller
    # would read files of the server; a single-user node may turn it on.
    packs_local_sources: bool = False
    sse_queue_events: int = 256  # events held per SSE client that reads slowly; the oldest go first, then a gap
    sse_heartbeat_seconds: float = 15.0  # a comment line this often keeps proxies from closing an idle stream
    session_quality_weight: float = 0.6  # session_context: how much quality (importance, confidence, use) counts
    session_recency_weight: float = 0.4  # session_context: how much recency counts
    similar_finding_threshold: float = 0.85  # dense similarity from which another agent's finding is "very similar"
    # Capture through agents' hooks (engram hooks, docs/hooks.md): the session context a session start injects, the
    # quality an observation needs to be kept, and the most characters one observation keeps.
    hook_context_tokens: int = 800
    hook_min_quality: float = 0.5
    hook_max_chars: int = 1000
    hook_url: str = ""  # the node the hooks deliver to; empty: the local node (`engram hooks install --url` sets it)
    hook_spool_max_bytes: int = 8 * 1024 * 1024  # captures waiting for the node: beyond it the oldest are dropped
    qdrant_url: str | None = None
    # Where built ONNX models, installed rerankers and a fetched embedding model are kept: one per machine by default
    # (every data dir on it shares them), $XDG_CACHE_HOME/engram/models or ~/.cache/engram/models.
    model_cache: Path = field(default_factory=lambda: default_model_cache())
    # int8: per-channel int8 weights, about 1.7x faster embedding on CPU at cosine ~0.99 to fp32 and the same
    # retrieval quality within 0.002 (docs/search.md); fp32 is the exact network.
    embed_precision: str = "int8"
    qdrant_api_key: str | None = None
    qdrant_collection: str = "engram_memories"
    llm_url: str | None = None  # OpenAI-compatible base URL, e.g. http://localhost:11434/v1
    llm_model: str = "gpt-4o-mini"
    llm_api_key: str | None = None
    llm_timeout_seconds: float = 30.0
    enrich_retry_base_seconds: float = 2.0  # first retry delay of a failed enrichment; doubles each time
    enrich_max_attempts: int = 6
    fusion: str = "adaptive"  # adaptive (by the query's kind), relative (min-max normalised weighted scores) or rrf
    rrf_k: float = 10.0
    weight_dense: float = 1.0
    weight_bm25: float = 1.5
    weight_questions: float = 1.0
    rerank: bool = True  # rerank by default when a reranker is installed
    rerank_top_n: int = 20
    min_relevance: float = 0.15  # the relevance floor (dense cosine) of a search that names none; 0: none
    hf_endpoint: str = "https://huggingface.co"
    hf_token: str | None = None
    log_level: str = "INFO"
    # Edge devices (engram edge): the cluster's gateway, the device's sync key, and how the sync worker paces itself.
    upstream: str = ""  # the cluster gateway's URL; empty: not an edge device
    upstream_key: str | None = None  # an API key of the cluster with the sync scope
    sync_interval_seconds: float = 5.0  # between sync rounds when nothing is waiting
    sync_retry_first_seconds: float = 1.0  # first back-off after a failed round; doubles (with jitter) up to the max
    sync_retry_max_seconds: float = 300.0
    sync_batch: int = 200  # changes per push and per pull page
    sync_namespace: str = "default"  # the device's namespace that syncs with the key's namespace on the cluster
    # Memory on small devices (docs/operations.md, "Edge devices"): ram keeps the index's dense vectors in memory and
    # scores them exactly; disk leaves them on disk and searches int8 copies in memory (what `engram edge` uses).
    index_vectors: str = "ram"
    # The index's shards each in a process of its own beside the node (engram.index.edge_process): Qdrant Edge holds
    # the GIL for each call, and a built copy's load stopped the node's every call for 0.5-1.6 s at 50k memories.
    index_process: bool = True
    malloc_arenas: int = 2  # glibc malloc arenas the native threads share (0: glibc's default, 8 per core)
    malloc_trim_mb: int = 64  # freed C heap kept before it is handed back to the system (0: never trimmed)

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
        """Raises SettingsError for values that cannot work."""
        if not 0 <= self.port <= 65535:
            raise SettingsError(f"ENGRAM_PORT must be 0-65535, got {self.port}")
        if self.malloc_arenas < 0 or self.malloc_trim_mb < 0:
            raise SettingsError("ENGRAM_MALLOC_ARENAS and ENGRAM_MALLOC_TRIM_MB must be >= 0")
        if self.index_vectors not in ("ram", "disk"):
            raise SettingsError(f"ENGRAM_INDEX_VECTORS must be 'ram' or 'disk', got {self.index_vectors!r}")
        if self.embed_precision not in ("fp32", "int8"):
            raise SettingsError(f"ENGRAM_EMBED_PRECISION must be 'fp32' or 'int8', got {self.embed_precision!r}")
        if self.mcp_tools not in MCP_TOOL_PROFILES:
            raise SettingsError(
                f"ENGRAM_MCP_TOOLS must be 'full' (every MCP tool) or 'core' (the everyday ones, for a small "
                f"context), got {self.mcp_tools!r}"
            )
        if self.fusion not in ("adaptive", "relative", "rrf"):
            raise SettingsError(f"ENGRAM_FUSION must be 'adaptive', 'relative' or 'rrf', got {self.fusion!r}")
        if not 0.0 <= self.min_relevance <= 1.0:
            raise SettingsError(f"ENGRAM_MIN_RELEVANCE must be between 0 and 1 (0: no floor), got {self.min_relevance}")
        if self.max_content_bytes <= 0 or self.read_wait_seconds < 0:
            raise SettingsError("ENGRAM_MAX_CONTENT_BYTES must be > 0 and ENGRAM_READ_WAIT_SECONDS >= 0")
        if self.max_request_bytes < 4096 or self.max_import_line_bytes < 4096:
            raise SettingsError("ENGRAM_MAX_REQUEST_BYTES and ENGRAM_MAX_IMPORT_LINE_BYTES must be at least 4096")
        if self.max_import_bytes < self.max_import_line_bytes:
            raise SettingsError("ENGRAM_MAX_IMPORT_BYTES must be at least ENGRAM_MAX_IMPORT_LINE_BYTES")
        if self.disk_reserve_mb < 0:
            raise SettingsError(f"ENGRAM_DISK_RESERVE_MB must be >= 0, got {self.disk_reserve_mb}")
        if self.access_flush_seconds <= 0:
            raise SettingsError(f"ENGRAM_ACCESS_FLUSH_SECONDS must be > 0, got {self.access_flush_seconds}")
        if self.handoff_ttl_seconds <= 0:
            raise SettingsError(f"ENGRAM_HANDOFF_TTL_SECONDS must be > 0, got {self.handoff_ttl_seconds}")
        if self.sse_queue_events < 1 or self.sse_heartbeat_seconds <= 0:
            raise SettingsError("ENGRAM_SSE_QUEUE_EVENTS must be >= 1 and ENGRAM_SSE_HEARTBEAT_SECONDS > 0")
        if self.session_quality_weight < 0 or self.session_recency_weight < 0:
            raise SettingsError("ENGRAM_SESSION_QUALITY_WEIGHT and ENGRAM_SESSION_RECENCY_WEIGHT must be >= 0")
        if (
            not 50 <= self.hook_context_tokens <= 8000
            or not 0 <= self.hook_min_quality <= 1
            or self.hook_max_chars < 80
            or self.hook_spool_max_bytes < 64 * 1024
        ):
            raise SettingsError(
                "ENGRAM_HOOK_CONTEXT_TOKENS must be 50-8000, ENGRAM_HOOK_MIN_QUALITY 0-1, "
                "ENGRAM_HOOK_MAX_CHARS >= 80 and ENGRAM_HOOK_SPOOL_MAX_BYTES >= 65536"
            )
        if not 0 < self.similar_finding_threshold <= 1:
            raise SettingsError(
                f"ENGRAM_SIMILAR_FINDING_THRESHOLD must be in (0, 1], got {self.similar_finding_threshold}"
            )
        if self.consolidation_max_proposals < 1:
            raise SettingsError(
                f"ENGRAM_CONSOLIDATION_MAX_PROPOSALS must be >= 1, got {self.consolidation_max_proposals}"
            )
        if self.consolidation_interval_seconds < 0 or self.decay_cold_after_days <= 0:
            raise SettingsError(
                "ENGRAM_CONSOLIDATION_INTERVAL_SECONDS must be >= 0 (0 turns scheduled runs off) and "
                "ENGRAM_DECAY_COLD_AFTER_DAYS > 0"
            )
        if 0 < self.decay_archive_after_days <= self.decay_cold_after_days:
            raise SettingsError(
                "ENGRAM_DECAY_ARCHIVE_AFTER_DAYS must be 0 (never) or more than ENGRAM_DECAY_COLD_AFTER_DAYS"
            )
        if self.job_lease_seconds <= 0:
            raise SettingsError(f"ENGRAM_JOB_LEASE_SECONDS must be > 0, got {self.job_lease_seconds}")
        if self.sync_interval_seconds <= 0 or not 0 < self.sync_retry_first_seconds <= self.sync_retry_max_seconds:
            raise SettingsError(
                "ENGRAM_SYNC_INTERVAL_SECONDS must be > 0 and 0 < ENGRAM_SYNC_RETRY_FIRST_SECONDS <= "
                "ENGRAM_SYNC_RETRY_MAX_SECONDS"
            )
        if not 1 <= self.stream_replicas <= 5:
            raise SettingsError(f"ENGRAM_STREAM_REPLICAS must be 1-5 (a NATS cluster keeps at most 5), got "
                                f"{self.stream_replicas}")  # fmt: skip
        if bool(self.nats_user) != bool(self.nats_password):
            raise SettingsError("ENGRAM_NATS_USER and ENGRAM_NATS_PASSWORD go together: set both or neither")
        if self.nats_creds and self.nats_user:
            raise SettingsError("Set ENGRAM_NATS_CREDS or ENGRAM_NATS_USER/ENGRAM_NATS_PASSWORD, not both")
        if not 1 <= self.sync_batch <= 500:
            raise SettingsError(f"ENGRAM_SYNC_BATCH must be 1-500, got {self.sync_batch}")
        if self.expiry_interval_seconds < 0:
            raise SettingsError(
                f"ENGRAM_EXPIRY_INTERVAL_SECONDS must be >= 0 (0 turns expiry off), got {self.expiry_interval_seconds}"
            )

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
