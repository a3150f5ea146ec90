"""gRPC plumbing shared by every service: error translation, health, channels, and the UNIMPLEMENTED answer."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc
from grpc_health.v1 import health, health_pb2_grpc

from engram import errors

log = logging.getLogger(__name__)

_CODES: dict[str, grpc.StatusCode] = {
    "invalid_argument": grpc.StatusCode.INVALID_ARGUMENT,
    "not_found": grpc.StatusCode.NOT_FOUND,
    "unauthenticated": grpc.StatusCode.UNAUTHENTICATED,
    "permission_denied": grpc.StatusCode.PERMISSION_DENIED,
    "failed_precondition": grpc.StatusCode.FAILED_PRECONDITION,
    "unavailable": grpc.StatusCode.UNAVAILABLE,
    "resource_exhausted": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "payload_too_large": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "unimplemented": grpc.StatusCode.UNIMPLEMENTED,
    "internal": grpc.StatusCode.INTERNAL,
}
_ERRORS: dict[grpc.StatusCode, type[errors.EngramError]] = {
    grpc.StatusCode.UNAUTHENTICATED: errors.Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: errors.PermissionDenied,
    grpc.StatusCode.UNAVAILABLE: errors.Unavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: errors.Unavailable,
}

Method = TypeVar("Method", bound=Callable[..., Awaitable[Any]])


def translate_errors(method: Method) -> Method:
    """Turns kernel errors raised by a servicer method into gRPC status codes, once, at the edge."""

    @functools.wraps(method)
    async def wrapper(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Any:
        try:
            return await method(self, request, context)
        except errors.EngramError as e:
            await context.abort(_CODES.get(e.code, grpc.StatusCode.INTERNAL), str(e))
        except ValueError as e:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))

    return wrapper  # type: ignore[return-value]


async def unimplemented(context: grpc.aio.ServicerContext, what: str) -> Any:
    """The answer of every RPC in the contract that a later release builds."""
    await context.abort(grpc.StatusCode.UNIMPLEMENTED, str(errors.NotImplementedYet(what)))


def error_from_rpc(e: grpc.aio.AioRpcError) -> errors.EngramError:
    """The inverse of translate_errors, for gRPC clients (the gateway)."""
    details = e.details() or e.code().name
    code = e.code()
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        field, _, problem = details.partition(": ")
        return errors.InvalidArgument(field, problem) if problem else errors.InvalidArgument("request", details)
    if code in _ERRORS:
        return _ERRORS[code](details)
    kind = next((name for name, status in _CODES.items() if status == code), "internal")
    return errors.RemoteError(kind, details)


def add_health(server: grpc.aio.Server) -> health.aio.HealthServicer:
    """Registers the standard gRPC health service; runtime.serve keeps it in step with the process's Health."""
    servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    return servicer


def channel(address: str) -> grpc.aio.Channel:
    """An insecure channel to a service on the private network (loopback in embedded mode)."""
    return grpc.aio.insecure_channel(
        address,
        options=[("grpc.max_receive_message_length", 16 * 1024 * 1024), ("grpc.enable_retries", 1)],
    )


def bind(server: grpc.aio.Server, listen: str) -> str:
    """Binds server to host:port (port 0 picks one) and returns the address actually bound."""
    host = listen.rpartition(":")[0]
    bound = server.add_insecure_port(listen)
    if bound == 0:
        raise OSError(f"cannot listen on {listen} for gRPC")
    return f"{host}:{bound}"
