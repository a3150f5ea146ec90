"""Pydantic models derived from the domain dataclasses, so the REST and MCP shapes of a memory follow engram.model.

A model that names its dataclass in ``__derived_from__`` gets one field per dataclass field, in the dataclass's order:
times (``*_at`` epoch floats) become RFC 3339 strings, nested dataclasses become their derived models, defaults
and default factories carry over. A field the class declares itself (to add a description, say) is kept as
declared. So a field added to the domain type shows in the published schemas without being written again.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from pydantic import BaseModel, Field

# pydantic's model metaclass, reached through the public class rather than its private module.
ModelMetaclass: Any = type(BaseModel)

_DERIVED: dict[type, type[BaseModel]] = {}  # dataclass -> its derived model


class _DerivedMeta(ModelMetaclass):
    def __new__(
        mcs,
        name: str,
        bases: tuple[type, ...],
        namespace: dict[str, Any],
        **kwargs: Any,
    ) -> type:
        source: type | None = namespace.get("__derived_from__")
        if source is not None:
            declared = dict(namespace.get("__annotations__", {}))
            annotations: dict[str, Any] = {}
            hints = typing.get_type_hints(source)
            for f in dataclasses.fields(source):
                if f.name in declared:
                    annotations[f.name] = declared.pop(f.name)
                    continue
                annotations[f.name], namespace[f.name] = _public(f, hints[f.name])
            namespace["__annotations__"] = {**annotations, **declared}
        cls = super().__new__(mcs, name, bases, namespace, **kwargs)
        if source is not None:
            _DERIVED[source] = cls  # type: ignore[assignment]
        return cls


class DerivedModel(BaseModel, metaclass=_DerivedMeta):
    """Base of the models derived from a dataclass::

    class MemoryOut(DerivedModel):
        __derived_from__ = Memory
    """


def _public(f: dataclasses.Field[Any], hint: Any) -> tuple[Any, Any]:
    """The public annotation of a dataclass field, and its pydantic default."""
    args = typing.get_args(hint)
    optional = type(None) in args
    inner = next((a for a in args if a is not type(None)), hint) if optional else hint
    if f.name.endswith("_at") and inner is float:
        return str | None, None  # epoch seconds are shown as RFC 3339 text (Memory.to_dict)
    if dataclasses.is_dataclass(inner):
        model = _DERIVED[inner]  # type: ignore[index]
        if optional:
            return model | None, None
        return model, Field(default_factory=model)
    items = typing.get_args(inner)
    if typing.get_origin(inner) is list and items and dataclasses.is_dataclass(items[0]):
        item_model: Any = _DERIVED[items[0]]  # type: ignore[index]
        return list[item_model], Field(default_factory=list)  # type: ignore[valid-type]
    if f.default is not dataclasses.MISSING:
        return hint, f.default
    if f.default_factory is not dataclasses.MISSING:
        return hint, Field(default_factory=f.default_factory)
    return hint, ...
