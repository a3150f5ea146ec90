"""Validation of the names callers choose: namespaces and agent ids."""

from __future__ import annotations

import re
from typing import TypeGuard

# Namespaces become NATS subject tokens and file/collection names, so they exclude "." (the NATS token
# separator), "@", "*", ">" and whitespace; 64 characters keeps derived subjects and paths short.
NAMESPACE_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}"
# Agent ids are only ever payload, never subject tokens, so they may look like "claude@laptop" or
# "ci.bot-1"; the first character is alphanumeric so an id can't be mistaken for a CLI flag.
AGENT_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._@-]{0,127}"

AGENT_RULE = "use 1-128 characters from A-Z a-z 0-9 '_' '-' '.' '@', starting with a letter or digit (no spaces)."

# fullmatch rather than ^...$: "$" also matches before a trailing newline, which would let "ns\n" through.
_NAMESPACE_RE = re.compile(NAMESPACE_PATTERN)
_AGENT_RE = re.compile(AGENT_PATTERN)


def is_valid_namespace(name: object) -> TypeGuard[str]:
    """True if ``name`` is a usable namespace."""
    return isinstance(name, str) and _NAMESPACE_RE.fullmatch(name) is not None


def is_valid_agent(name: object) -> TypeGuard[str]:
    """True if ``name`` is a usable agent id."""
    return isinstance(name, str) and _AGENT_RE.fullmatch(name) is not None


def validate_namespace(name: object) -> str:
    """Return ``name`` unchanged if it is a valid namespace, else raise ValueError saying what is allowed."""
    if not is_valid_namespace(name):
        raise ValueError(
            f"invalid namespace {name!r}: use 1-64 characters from A-Z a-z 0-9 '_' '-', "
            "starting with a letter or digit (no '.', '@' or spaces)"
        )
    return name


def validate_agent(name: object) -> str:
    """Return ``name`` unchanged if it is a valid agent id, else raise ValueError saying what is allowed."""
    if not is_valid_agent(name):
        raise ValueError(f"invalid agent id {name!r}: {AGENT_RULE.rstrip('.')}")
    return name
