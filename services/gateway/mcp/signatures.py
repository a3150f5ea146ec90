"""Tool signatures derived from the request models: a tool takes a request's fields as flat parameters without
listing them again.

The SDK builds a tool's input schema from ``inspect.signature`` of its function; ``flat`` gives the function the
signature of its own parameters followed by one parameter per field of the request (its annotated type, limits and
description included, and its default), and calls the body with the request built from them.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel

_Result = TypeVar("_Result")
_Tool = Callable[..., Awaitable[_Result]]


def flat(model: type[BaseModel], *, into: str = "request") -> Callable[[_Tool[_Result]], _Tool[_Result]]:
    """A decorator: the tool ``fn(..., request: model)`` takes ``model``'s fields as its arguments instead.

    Its other parameters come first, as declared; a field comes after them, keyword-only, so a required field may
    follow an optional one."""

    def decorate(fn: _Tool[_Result]) -> _Tool[_Result]:
        own = inspect.signature(fn, eval_str=True)
        hints = typing.get_type_hints(model, include_extras=True)
        fields = [
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=hints[name],
                default=inspect.Parameter.empty if info.is_required() else info.get_default(call_default_factory=True),
            )
            for name, info in model.model_fields.items()
        ]
        if clash := sorted(set(own.parameters) & set(model.model_fields)):
            raise TypeError(f"{fn.__name__} has parameters {clash} that are fields of {model.__name__} too")
        parameters = [*(p for name, p in own.parameters.items() if name != into), *fields]
        names = frozenset(model.model_fields)

        async def tool(**arguments: Any) -> _Result:
            values = {name: arguments.pop(name) for name in names if name in arguments}
            return await fn(**arguments, **{into: model(**values)})

        tool.__name__, tool.__qualname__, tool.__module__ = fn.__name__, fn.__qualname__, fn.__module__
        tool.__doc__ = fn.__doc__
        tool.__signature__ = own.replace(parameters=parameters)  # type: ignore[attr-defined]
        # The SDK finds the Context parameter by the function's type hints, which are these.
        tool.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": own.return_annotation}
        return tool

    return decorate
