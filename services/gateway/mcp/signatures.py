"""Tool signatures derived from the request models: a tool takes a request's fields as flat parameters without
listing them again.

The SDK builds a tool's input schema from ``inspect.signature`` of its function; ``flat`` gives the function the
signature of its own parameters with one parameter per field of the request in the request's place (its annotated
type, limits and description included, and its default), and calls the body with the request built from them. A
field whose type is itself a model (a search's ``filters``) is given by that model's fields, in its place
(engram.services.gateway.schemas.flat).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from engram.services.gateway.schemas.flat import built, flat_fields

_Result = TypeVar("_Result")
_Tool = Callable[..., Awaitable[_Result]]


def flat(model: type[BaseModel], *, into: str = "request") -> Callable[[_Tool[_Result]], _Tool[_Result]]:
    """A decorator: the tool ``fn(..., request: model, ...)`` takes ``model``'s fields as its arguments instead.

    The fields take the request's place among its other parameters; they are keyword-only, so a required field may
    follow an optional one, and so are the parameters after them."""

    def decorate(fn: _Tool[_Result]) -> _Tool[_Result]:
        own = inspect.signature(fn, eval_str=True)
        fields = list(flat_fields(model))
        names = [p.name for p in fields]
        if clash := sorted(set(own.parameters) & set(names)):
            raise TypeError(f"{fn.__name__} has parameters {clash} that are fields of {model.__name__} too")
        if len(set(names)) < len(names):
            raise TypeError(f"{model.__name__} and the models in it name one field twice")
        before, after = _around(own, into)
        parameters = [*before, *fields, *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in after)]
        taken = frozenset(names)

        async def tool(**arguments: Any) -> _Result:
            values = {name: arguments.pop(name) for name in taken if name in arguments}
            return await fn(**arguments, **{into: built(model, values)})

        tool.__name__, tool.__qualname__, tool.__module__ = fn.__name__, fn.__qualname__, fn.__module__
        tool.__doc__ = fn.__doc__
        tool.__signature__ = own.replace(parameters=parameters)  # type: ignore[attr-defined]
        # The SDK finds the Context parameter by the function's type hints, which are these.
        tool.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": own.return_annotation}
        return tool

    return decorate


def _around(signature: inspect.Signature, into: str) -> tuple[list[inspect.Parameter], list[inspect.Parameter]]:
    """The parameters before and after ``into``."""
    names = list(signature.parameters)
    if into not in names:
        raise TypeError(f"the tool has no parameter {into!r} for its request")
    at = names.index(into)
    parameters = list(signature.parameters.values())
    return parameters[:at], parameters[at + 1 :]
