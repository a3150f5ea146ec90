"""A request's fields as flat parameters: each field of a request model, and in the place of a field whose type is a
model (a search's ``filters``) that model's fields. MCP tools take them as arguments (mcp/signatures.py) and the REST
listing as query parameters (rest/dependencies.py), so a new option of a request is one field of its model."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel


def nested_models(model: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """The fields of ``model`` whose type is a model."""
    hints = typing.get_type_hints(model, include_extras=True)
    return {
        name: hint
        for name in model.model_fields
        if isinstance(hint := hints[name], type) and issubclass(hint, BaseModel)
    }


def flat_fields(model: type[BaseModel]) -> Iterator[inspect.Parameter]:
    """A keyword-only parameter per field of ``model`` (a nested model's fields in its place), with the field's
    annotated type (its limits and description) and its default."""
    hints = typing.get_type_hints(model, include_extras=True)
    nested = nested_models(model)
    for name, info in model.model_fields.items():
        if name in nested:
            yield from flat_fields(nested[name])
            continue
        default = inspect.Parameter.empty if info.is_required() else info.get_default(call_default_factory=True)
        yield inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=hints[name], default=default)


def flat_names(model: type[BaseModel]) -> list[str]:
    return [p.name for p in flat_fields(model)]


def built(model: type[BaseModel], values: dict[str, Any]) -> Any:
    """``model`` from flat ``values`` (taken out of it): a nested model's fields go into that model."""
    nested = {name: built(inner, values) for name, inner in nested_models(model).items()}
    own = {name: values.pop(name) for name in list(values) if name in model.model_fields}
    return model(**own, **nested)
