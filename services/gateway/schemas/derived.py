"""Pydantic models derived from the domain dataclasses, so the REST and MCP shapes of a memory follow engram.model;
and models derived from another model, so a request that takes another's fields follows it.

A model that names its dataclass in ``__derived_from__`` gets one field per dataclass field, in the dataclass's order:
times (``*_at`` epoch floats) become RFC 3339 strings, nested dataclasses become their derived models, defaults
and default factories carry over. A model that names another model there gets that model's fields as declared
(types, limits, descriptions and defaults), but those it names in ``__left_out__``. In both, a field the class
declares itself (to add a description, say) is kept as declared, in the source's order; its other fields follow.
So a field added to the source shows in the published schemas without being written again.
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
            left_out = set(namespace.get("__left_out__", ()))
            annotations: dict[str, Any] = {}
            for field_name, annotation, default in _fields_of(source):
                if field_name in left_out:
                    continue
                if field_name in declared:
                    annotations[field_name] = declared.pop(field_name)
                    continue
                annotations[field_name], namespace[field_name] = annotation, default
            namespace["__annotations__"] = {**annotations, **declared}
        cls = super().__new__(mcs, name, bases, namespace, **kwargs)
        if source is not None and dataclasses.is_dataclass(source):
            _DERIVED[source] = cls  # type: ignore[assignment]
        return cls


class DerivedModel(BaseModel, metaclass=_DerivedMeta):
    """Base of the models derived from a dataclass, or from another model but some of its fields::

    class MemoryOut(DerivedModel):
        __derived_from__ = Memory

    class UpdateRequest(DerivedModel):
        __derived_from__ = SaveRequest
        __left_out__ = ("conversation_id",)
    """


def _fields_of(source: type) -> list[tuple[str, Any, Any]]:
    """Each field of ``source`` (a dataclass, or a model) as its name, public annotation and pydantic default."""
    hints = typing.get_type_hints(source, include_extras=True)
    if dataclasses.is_dataclass(source):
        return [(f.name, *_public(f, hints[f.name])) for f in dataclasses.fields(source)]
    model: type[BaseModel] = source  # type: ignore[assignment]
    return [(name, hints[name], _default(info)) for name, info in model.model_fields.items()]


def _default(info: Any) -> Any:
    """The default of a model's field, as a class body states it."""
    if info.default_factory is not None:
        return Field(default_factory=info.default_factory)
    return ... if info.is_required() else info.default


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
