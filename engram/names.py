"""Validation of the names callers choose: namespaces, agent ids, devices and teams."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, TypeGuard

if TYPE_CHECKING:
    from engram.scrub import ScrubResult

# Namespaces become NATS subject tokens and file/collection names, so they exclude "." (the NATS token
# separator), "@", "*", ">" and whitespace; 64 characters keeps derived subjects and paths short.
NAMESPACE_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}"
NAMESPACE_RULE = "use 1-64 characters from A-Z a-z 0-9 '_' '-', starting with a letter or digit (no '.', '@' or spaces)"
# Agent ids are only ever payload, never subject tokens, so they may look like "claude@laptop" or
# "ci.bot-1"; the first character is alphanumeric so an id can't be mistaken for a CLI flag.
AGENT_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._@-]{0,127}"

AGENT_RULE = "use 1-128 characters from A-Z a-z 0-9 '_' '-' '.' '@', starting with a letter or digit (no spaces)."
# A device is the part after the last "@" of "agent@device" (a host name, usually), so it holds no "@".
DEVICE_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
# How callers name themselves: an agent id, or "agent@device" (split at the last "@", the device part then follows
# DEVICE_PATTERN), at most MAX_IDENTITY_CHARS long. Published as the pattern of the agent header and query parameter.
IDENTITY_PATTERN = r"[A-Za-z0-9](?:[A-Za-z0-9._@-]*@[A-Za-z0-9][A-Za-z0-9._-]{0,63}|[A-Za-z0-9._-]*)"
MAX_IDENTITY_CHARS = 128
DEVICE_RULE = "use 1-64 characters from A-Z a-z 0-9 '_' '-' '.', starting with a letter or digit (no '@' or spaces)"
# Teams become "team:<name>" tags and filters, and Claude Code's team names are kebab-case: the namespace rule fits.
TEAM_PATTERN = NAMESPACE_PATTERN
# A memory's source: what client or tool wrote it ("hook", "claude-code"), shown beside it in the console and its
# history. It is the caller's word, never an authority, so the names Engram records for its own writes (and the
# operator's surfaces) are not a caller's to take.
SOURCE_PATTERN = r"[a-z][a-z0-9._-]{0,31}"
MAX_SOURCE_CHARS = 32
SOURCE_RULE = (
    "use a short lowercase word such as 'hook' (1-32 characters from a-z 0-9 '.' '_' '-', starting with a letter)"
)
RESERVED_SOURCES = frozenset({"admin", "console", "sync", "consolidation", "enrichment", "engram", "system"})

# fullmatch rather than ^...$: "$" also matches before a trailing newline, which would let "ns\n" through.
_NAMESPACE_RE = re.compile(NAMESPACE_PATTERN)
_AGENT_RE = re.compile(AGENT_PATTERN)
_DEVICE_RE = re.compile(DEVICE_PATTERN)
_SOURCE_RE = re.compile(SOURCE_PATTERN)
_NOT_SOURCE_CHARS = re.compile(r"[^a-z0-9._-]+")


def is_valid_namespace(name: object) -> TypeGuard[str]:
    """True if ``name`` is a usable namespace."""
    return isinstance(name, str) and _NAMESPACE_RE.fullmatch(name) is not None


def is_valid_agent(name: object) -> TypeGuard[str]:
    """True if ``name`` is a usable agent id."""
    return isinstance(name, str) and _AGENT_RE.fullmatch(name) is not None


def validate_namespace(name: object) -> str:
    """Return ``name`` unchanged if it is a valid namespace, else raise ValueError saying what is allowed."""
    if not is_valid_namespace(name):
        raise ValueError(f"invalid namespace {name!r}: {NAMESPACE_RULE}")
    return name


def validate_agent(name: object) -> str:
    """Return ``name`` unchanged if it is a valid agent id, else raise ValueError saying what is allowed."""
    if not is_valid_agent(name):
        raise ValueError(f"invalid agent id {name!r}: {AGENT_RULE.rstrip('.')}")
    return _not_a_secret("agent id", name)


def validate_device(name: object) -> str:
    """Return ``name`` unchanged if it is a valid device name, else raise ValueError saying what is allowed."""
    if not isinstance(name, str) or _DEVICE_RE.fullmatch(name) is None:
        raise ValueError(f"invalid device {name!r}: {DEVICE_RULE}")
    return _not_a_secret("device", name)


def validate_team(name: object) -> str:
    """Return ``name`` unchanged if it is a valid team name, else raise ValueError saying what is allowed."""
    if not is_valid_namespace(name):
        raise ValueError(f"invalid team {name!r}: {NAMESPACE_RULE}")
    return _not_a_secret("team", name)


def validate_source(name: object) -> str:
    """Return ``name`` unchanged if a caller may name itself so (X-Engram-Source), else raise ValueError saying what
    is allowed: a short lowercase word, not one of RESERVED_SOURCES, not a credential."""
    if not isinstance(name, str) or _SOURCE_RE.fullmatch(name) is None:
        shown = name[:40] if isinstance(name, str) else name
        raise ValueError(f"{shown!r} is not a source: {SOURCE_RULE}")
    if name in RESERVED_SOURCES:
        raise ValueError(
            f"'{name}' is reserved for what Engram itself records ({', '.join(sorted(RESERVED_SOURCES))}); "
            "name your client or tool instead, e.g. 'hook' or 'nightly-script'"
        )
    return _not_a_secret("source", name)


def source_of_client(name: str) -> str | None:
    """The source a free-text client name stands for (MCP clientInfo.name, which its user cannot change): lower-cased,
    every run of other characters (spaces, markup, line breaks, bidi controls) one "-", cut to MAX_SOURCE_CHARS,
    starting with a letter. None when nothing usable is left, or it is reserved or a credential: the caller then gets
    the transport's name. "Claude Code" -> "claude-code", "Cursor (1.2)" -> "cursor-1.2"."""
    head = name[: MAX_SOURCE_CHARS * 8]
    if _scrubbed(head).redactions:  # lower-cased and cut, a token would no longer be recognised as one
        return None
    cleaned = _NOT_SOURCE_CHARS.sub("-", head.lower())
    cleaned = cleaned.lstrip("0123456789._-")[:MAX_SOURCE_CHARS].rstrip("._-")
    try:
        return validate_source(cleaned)
    except ValueError:
        return None


def _not_a_secret(what: str, name: str) -> str:
    """Names are stored with every memory and shown to every agent of the namespace: one that is a credential (a
    token pasted into X-Engram-Device, say) is refused, never stored."""
    if found := _scrubbed(name).redactions:
        raise ValueError(
            f"invalid {what}: it looks like a secret ({found[0].kind}); names are shown to every agent, so use a "
            "plain name such as 'laptop' or 'claude-code'"
        )
    return name


def split_agent(name: object) -> tuple[str, str]:
    """``"claude-code@laptop"`` -> ``("claude-code", "laptop")``; ``"claude-code"`` -> ``("claude-code", "")``.

    An agent owns its memories on every device, so the owner is the part before the last "@" and the device is
    recorded apart. Raises ValueError (naming the whole id) when the id or its device part is unusable.
    """
    agent, at, device = validate_agent(name).rpartition("@")
    if not at:
        return device, ""
    # The agent part is valid whenever the whole id is (it starts the id and is shorter); only the device can fail.
    if device and _DEVICE_RE.fullmatch(device) is None:
        raise ValueError(f"invalid agent id {name!r}: in 'agent@device' the device part must {DEVICE_RULE}")
    return agent, device


def device_name(name: str) -> str:
    """A usable device name from a host name (or ENGRAM_DEVICE): characters outside DEVICE_PATTERN become '-',
    at most 64 characters; "device" when nothing usable is left."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "-", name.strip()).lstrip("._-")[:64]
    return cleaned or "device"


def _scrubbed(text: str) -> ScrubResult:
    # Imported on use: the secret catalog takes a few hundred ms to load, and `engram mcp` checks team names
    # (is_valid_namespace) before it knows whether it needs anything more.
    from engram.scrub import scrub_text

    return scrub_text(text)
