"""What an agent reads of a tool's answer: compact by default, since every byte of it lands in the agent's context.

A memory inside an answer shows what an agent acts on (``COMPACT_MEMORY``, when set and not at its default: a
status only when not active), a search hit is its memory with its score, scores keep four decimals, and every other
field is left out when empty (but a result's first field, its list of hits or memories) or when it only tells how
the answer was made (``INTERNAL``). A memory asked for by itself (get_memory, memory_at) and an answer asked for
with ``detail="full"`` are shown whole, as REST shows them. The answer travels as structured content and, for
clients that read only text, as the same JSON in one text block.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import pydantic_core
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from engram.services.gateway.schemas.results import HitOut, MemoryOut

# The fields of a memory an agent acts on; the others are one get_memory away. Each must be a field of MemoryOut
# (tests/unit/test_mcp_answers.py).
COMPACT_MEMORY = (
    "id", "content", "memory_type", "owner_agent", "project", "tags", "updated_at", "status", "superseded_by",
    "handoff",
)  # fmt: skip
# Fields of results that tell how an answer was made, not what it says (each a field of a result model).
INTERNAL = frozenset({"applied_seq", "reranked", "rerank_note"})
SCORE_DIGITS = 4  # scores and similarities: enough to compare, not 17 digits of float
DETAIL_ARGUMENT = "detail"
FULL = "full"

_Tool = Callable[..., Awaitable[Any]]
_DEFAULTS = {name: MemoryOut.model_fields[name].get_default(call_default_factory=True) for name in COMPACT_MEMORY}


def answering(fn: _Tool) -> _Tool:
    """The tool ``fn`` answering compactly: a tool that returns a result model returns it as ``answer`` shows it
    (read from its ``detail`` argument, if it takes one); any other tool is returned as it is."""
    signature = inspect.signature(fn, eval_str=True)
    returns = signature.return_annotation
    if not (isinstance(returns, type) and issubclass(returns, BaseModel)):
        return fn

    async def tool(**arguments: Any) -> CallToolResult:
        return answer(await fn(**arguments), full=arguments.get(DETAIL_ARGUMENT) == FULL)

    tool.__name__, tool.__qualname__, tool.__module__ = fn.__name__, fn.__qualname__, fn.__module__
    tool.__doc__ = fn.__doc__
    tool.__signature__ = signature.replace(return_annotation=CallToolResult)  # type: ignore[attr-defined]
    # The SDK finds the Context parameter by the function's type hints, which are these.
    tool.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()} | {"return": CallToolResult}
    return tool


def answer(result: BaseModel, *, full: bool = False) -> CallToolResult:
    """``result`` as the tool's answer: structured content, and the same JSON as text (compact, UTF-8)."""
    shown = shape(result, full=full)
    text = pydantic_core.to_json(shown).decode()  # four times as fast as json.dumps on a page of hits
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=shown)


def shape(result: BaseModel, *, full: bool = False) -> dict[str, Any]:
    """The JSON an agent reads of ``result``: whole when ``full`` or when it is a memory, else compact."""
    if full or isinstance(result, MemoryOut):
        return result.model_dump(mode="json")
    shown: dict[str, Any] = _compact(result)
    return shown


def compact_memory(memory: MemoryOut) -> dict[str, Any]:
    """The fields of ``memory`` an agent acts on, those that are set and not at their default (a status active, a
    memory_type general)."""
    shown = {name: _compact(getattr(memory, name)) for name in COMPACT_MEMORY}
    return {name: value for name, value in shown.items() if not _empty(value) and value != _DEFAULTS[name]}


def _compact(value: Any) -> Any:
    if isinstance(value, HitOut):
        return {**compact_memory(value.memory), **_fields(value, leave_out="memory")}
    if isinstance(value, MemoryOut):
        return compact_memory(value)
    if isinstance(value, BaseModel):
        return _fields(value)
    if isinstance(value, list | tuple):
        return [_compact(item) for item in value]
    if isinstance(value, dict):
        return {key: _compact(item) for key, item in value.items()}
    if isinstance(value, float):
        return round(value, SCORE_DIGITS)
    return value


def _fields(model: BaseModel, *, leave_out: str = "") -> dict[str, Any]:
    """The fields of ``model`` that are not empty, those that hold memories compacted."""
    shown: dict[str, Any] = {}
    subject = next(iter(type(model).model_fields), None)
    for name, dumped in model.model_dump(mode="json").items():  # its own exclusions (exclude_if) hold
        raw = getattr(model, name, None)
        value = _compact(raw) if isinstance(raw, BaseModel | list | tuple | dict | float) else dumped
        if name == leave_out or name in INTERNAL:
            continue
        if not _empty(value) or (name == subject and isinstance(value, list)):  # no hits is an answer too
            shown[name] = value
    return shown


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, str | list | dict) and not value)
