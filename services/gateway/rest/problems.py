"""HTTP problem responses (RFC 9457): every error of the REST API, Engram's and FastAPI's own, as a problem
document whose detail says what to do."""

from __future__ import annotations

import math
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from engram.errors import DEFAULT_RETRY_AFTER_SECONDS, KINDS, EngramError, ImportStopped, VersionConflict, kind_of
from engram.services.gateway.schemas.validation import describe_validation

PROBLEM_MEDIA_TYPE = "application/problem+json"

PROBLEM_TYPE_PREFIX = "urn:engram:problem:"

# The problem code of an HTTP error that is not Engram's (FastAPI's, Starlette's): the kind whose status it is, for
# the statuses one kind alone answers with (400, 401, 403, 404); any other is "http_error", or "internal" from 500.
_CODE_BY_STATUS = {
    KINDS[code].http_status: code for code in ("invalid_argument", "unauthenticated", "permission_denied", "not_found")
}


class Problem(BaseModel):
    """An RFC 9457 problem: what went wrong and, in ``detail``, what to do about it."""

    type: str = Field(description="A URI naming the kind of problem, e.g. urn:engram:problem:not_found.")
    title: str
    status: int
    detail: str
    code: str = Field(description="Engram's error code, the same over gRPC, MCP and REST.")


def problem(
    status: int,
    detail: str,
    *,
    code: str | None = None,
    headers: dict[str, str] | None = None,
    extensions: dict[str, Any] | None = None,
) -> Response:
    """An ``application/problem+json`` response; ``extensions`` are extra members (RFC 9457, section 3.2)."""
    code = code or _CODE_BY_STATUS.get(status, "internal" if status >= 500 else "http_error")
    body = Problem(
        type=PROBLEM_TYPE_PREFIX + code,
        title=HTTPStatus(status).phrase,
        status=status,
        detail=detail,
        code=code,
    )
    content = {**(extensions or {}), **body.model_dump()}
    return JSONResponse(content, status_code=status, headers=headers, media_type=PROBLEM_MEDIA_TYPE)


def unauthenticated(detail: str) -> Response:
    """A 401 problem that tells HTTP clients which scheme to use."""
    return problem(401, detail, code="unauthenticated", headers={"WWW-Authenticate": 'Bearer realm="engram"'})


def error_response(error: EngramError) -> Response:
    """The HTTP form of a service error."""
    if error.code == "unauthenticated":
        return unauthenticated(str(error))
    headers = {}
    if error.code in ("unavailable", "resource_exhausted"):
        retry_after = getattr(error, "retry_after", DEFAULT_RETRY_AFTER_SECONDS)
        headers["Retry-After"] = str(max(1, math.ceil(retry_after)))
    if error.code == "payload_too_large":
        # Closing the connection stops the client sending the rest (an import's rest was read up to a bound first).
        headers["Connection"] = "close"
    # A stopped import also says what was stored and where to resume (the fields of ImportResult); a version
    # conflict, the version to read again.
    extensions: dict[str, Any] | None = None
    if isinstance(error, ImportStopped):
        extensions = error.result
    elif isinstance(error, VersionConflict):
        extensions = {"expected_version": error.expected, "current_version": error.actual}
    # The HTTP status of its kind (errors.KINDS, the table gRPC answers from too); the problem code is the kind.
    return problem(kind_of(error).http_status, str(error), code=error.code, headers=headers, extensions=extensions)


def add_error_handlers(app: FastAPI) -> None:
    """Every error of the app, including FastAPI's own, answers as a problem document."""
    app.add_exception_handler(EngramError, _on_engram_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)


async def _on_engram_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, EngramError)
    return error_response(error)


async def _on_validation_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, RequestValidationError)
    return problem(400, _describe_validation(error), code="invalid_argument")


async def _on_http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, StarletteHTTPException)
    return problem(error.status_code, str(error.detail), headers=dict(error.headers or {}))


def _describe_validation(error: RequestValidationError) -> str:
    """'body.limit: Input should be less than or equal to 100; ...' — field first, like InvalidArgument."""
    return describe_validation(error.errors())


# Every answer an API route can give besides its success, documented once for all routers.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": Problem, "content": {PROBLEM_MEDIA_TYPE: {}}, "description": HTTPStatus(status).phrase}
    for status in (400, 401, 403, 413, 415, 421, 503, 507)
}

NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {
        "model": Problem,
        "content": {PROBLEM_MEDIA_TYPE: {}},
        "description": "No such memory in your namespace",
    }
}
