"""One code table (engram.errors.KINDS) answers every kernel error at each edge: the gRPC status of the servers'
ErrorInterceptor, the HTTP status and problem code of REST."""

from __future__ import annotations

import json
from http import HTTPStatus

import grpc
import pytest

from engram import errors
from engram.grpc.rpc import status_of
from engram.services.gateway.operations import packs  # noqa: F401  # the gateway's own errors register too
from engram.services.gateway.rest.problems import error_response


def test_every_error_class_has_a_row_in_the_table() -> None:
    for cls in set(errors.EngramError.by_reason.values()):
        if cls in (errors.ImportStopped, errors.RemoteError):
            continue  # their kind is their cause's, per instance
        assert cls.code in errors.KINDS, f"{cls.__name__}.code {cls.code!r} has no row in engram.errors.KINDS"


@pytest.mark.parametrize("kind", list(errors.KINDS.values()), ids=list(errors.KINDS))
def test_each_kind_is_answered_by_its_row_over_grpc_and_rest(kind: errors.Kind) -> None:
    error = errors.RemoteError(kind.code, "What to do next.")
    assert status_of(error).code == grpc.StatusCode[kind.grpc_status]
    response = error_response(error)
    assert response.status_code == kind.http_status == HTTPStatus(kind.http_status).value
    assert json.loads(bytes(response.body))["code"] == kind.code


def test_an_unknown_kind_is_answered_as_internal() -> None:
    error = errors.RemoteError("no_such_kind", "Something new.")
    assert status_of(error).code == grpc.StatusCode.INTERNAL
    assert error_response(error).status_code == 500
