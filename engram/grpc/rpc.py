"""gRPC plumbing shared by every service: error translation (ErrorInterceptor, error_from_rpc), health, metrics
(MetricsInterceptor), channels, and the UNIMPLEMENTED answer."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health, health_pb2_grpc
from grpc_status import rpc_status

from engram import errors
from engram.process.metrics import GRPC_DURATION, GRPC_REQUESTS
from engram.process.ports import require_free

log = logging.getLogger(__name__)

_STATUS_DETAILS_KEY = "grpc-status-details-bin"
# Each kind's status (errors.KINDS, the one table), and back: a status two kinds share goes to the first of them.
_STATUS_BY_KIND = {code: grpc.StatusCode[kind.grpc_status] for code, kind in errors.KINDS.items()}
_KIND_BY_STATUS = {status: code for code, status in reversed(list(_STATUS_BY_KIND.items()))}
ERROR_DOMAIN = "engram"

Wrap = Callable[[Callable[..., Any]], Callable[..., Any]]  # a method's behavior -> the same, wrapped


def status_of(error: errors.EngramError) -> grpc.Status:
    """The gRPC status of a kernel error: its kind's status (errors.KINDS) as the code, its class and data as a
    google.rpc.ErrorInfo."""
    info = error_details_pb2.ErrorInfo(reason=error.reason, domain=ERROR_DOMAIN, metadata=error.details())
    detail = any_pb2.Any()
    detail.Pack(info)
    code = grpc.StatusCode[errors.kind_of(error).grpc_status]
    return rpc_status.to_status(status_pb2.Status(code=code.value[0], message=str(error), details=[detail]))


class ErrorInterceptor(grpc.aio.ServerInterceptor):
    """Turns the kernel errors a servicer raises into gRPC statuses, once, at the edge: every server has one
    (engram.process.runtime.serve), around every method, unary and streaming, so servicers only raise.

    Anything else is a bug: logged here with its traceback, answered as INTERNAL without internals. An abort under
    way (a servicer's own context.abort) goes on as it is.
    """

    def __init__(self) -> None:
        self._translated: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if handler is None:  # no such method: grpc answers UNIMPLEMENTED itself
            return handler
        known = self._translated.get(details.method)
        if known is None or known[0] is not handler:
            name = details.method.rpartition("/")[2]
            known = (handler, _wrapped_handler(handler, _translated_call(name), _translated_stream(name)))
            self._translated[details.method] = known
        return known[1]


def _translated_call(name: str) -> Wrap:
    def wrap(behavior: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
        async def call(request: Any, context: grpc.aio.ServicerContext) -> Any:
            try:
                return await behavior(request, context)
            except Exception as e:
                await _abort(context, name, e)

        return call

    return wrap


def _translated_stream(name: str) -> Wrap:
    def wrap(behavior: Callable[..., AsyncGenerator[Any, None]]) -> Callable[..., Any]:
        async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            try:
                async with contextlib.aclosing(behavior(request, context)) as responses:
                    async for response in responses:
                        yield response
            except Exception as e:
                await _abort(context, name, e)

        return stream

    return wrap


async def _abort(context: grpc.aio.ServicerContext, name: str, e: Exception) -> None:
    """Ends the call with the status of a kernel error; any other error is a bug, logged with its traceback and
    answered as INTERNAL without internals. An abort already under way goes on."""
    if isinstance(e, grpc.aio.AbortError):
        raise e
    if isinstance(e, errors.EngramError):
        await context.abort_with_status(status_of(e))
    log.exception("%s failed", name)
    internal = errors.EngramError(f"Internal error in {name} ({type(e).__name__}); see the log.")
    await context.abort_with_status(status_of(internal))


async def unimplemented(context: grpc.aio.ServicerContext, what: str) -> Any:
    """The answer of every RPC in the contract that a later release builds."""
    await context.abort_with_status(status_of(errors.NotImplementedYet(what)))


def error_from_rpc(e: grpc.aio.AioRpcError) -> errors.EngramError:
    """The inverse of ErrorInterceptor, for gRPC clients: the same class with the same data when the peer sent
    its ErrorInfo, else an error of the status's kind."""
    message = e.details() or e.code().name
    for info in _error_infos(e):
        cls = errors.EngramError.by_reason.get(info.reason)
        if cls is not None and info.domain == ERROR_DOMAIN:
            try:
                return cls.rebuild(message, dict(info.metadata))
            except (TypeError, ValueError):
                break  # malformed details: fall back to the status code
    kind = _KIND_BY_STATUS.get(e.code(), "internal")
    if e.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return errors.Unavailable(message)  # the peer itself is down or slow: not one of its errors
    return errors.RemoteError(kind, message)


def _error_infos(e: grpc.aio.AioRpcError) -> list[error_details_pb2.ErrorInfo]:
    found = []
    for key, value in e.trailing_metadata() or ():
        if key != _STATUS_DETAILS_KEY or not isinstance(value, bytes):
            continue
        status = status_pb2.Status.FromString(value)
        for detail in status.details:
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info):
                found.append(info)
    return found


def add_health(server: grpc.aio.Server) -> health.aio.HealthServicer:
    """Registers the standard gRPC health service; runtime.serve keeps it in step with the process's Health."""
    servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    return servicer


class MetricsInterceptor(grpc.aio.ServerInterceptor):
    """Counts every call a server answers by service, method and status code, and times it (engram.process.metrics).

    The code is the one the client gets: OK, the code of an abort (every kernel error is one, and every bug INTERNAL,
    when the ErrorInterceptor runs inside this one), CANCELLED when the client left or its deadline passed, UNKNOWN
    for an exception grpc answers itself. A streaming call counts once, when its stream ends.
    """

    def __init__(self) -> None:
        self._measured: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if handler is None:  # no such method: grpc answers UNIMPLEMENTED, and the name is the caller's to choose
            return handler
        known = self._measured.get(details.method)
        if known is None or known[0] is not handler:
            # "/engram.v1.Search/GetMemory" names it
            service, _, method = details.method.lstrip("/").rpartition("/")
            measured = _wrapped_handler(
                handler,
                lambda behavior: _measured_call(behavior, service, method),
                lambda behavior: _measured_stream(behavior, service, method),
            )
            known = (handler, measured)
            self._measured[details.method] = known
        return known[1]


_BEHAVIORS = ("unary_unary", "unary_stream", "stream_unary", "stream_stream")


def _wrapped_handler(handler: Any, wrap_call: Wrap, wrap_stream: Wrap) -> Any:
    """The handler with its behavior wrapped: an async generator (a streaming method written with yield) by
    wrap_stream, a coroutine function by wrap_call."""
    for kind in _BEHAVIORS:
        behavior = getattr(handler, kind, None)
        if behavior is None:
            continue
        if inspect.isasyncgenfunction(behavior):
            return handler._replace(**{kind: wrap_stream(behavior)})
        if inspect.iscoroutinefunction(behavior):
            return handler._replace(**{kind: wrap_call(behavior)})
    return handler  # a synchronous behavior (none of Engram's): served as it is


def _measured_call(behavior: Callable[..., Awaitable[Any]], service: str, method: str) -> Callable[..., Any]:
    async def call(request: Any, context: grpc.aio.ServicerContext) -> Any:
        started, error = time.perf_counter(), None
        try:
            return await behavior(request, context)
        except BaseException as e:
            error = e
            raise
        finally:
            _record(service, method, context, error, started)

    return call


def _measured_stream(behavior: Callable[..., AsyncIterator[Any]], service: str, method: str) -> Callable[..., Any]:
    async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        started, error = time.perf_counter(), None
        try:
            async for response in behavior(request, context):
                yield response
        except BaseException as e:
            error = e
            raise
        finally:
            _record(service, method, context, error, started)

    return stream


def _record(
    service: str, method: str, context: grpc.aio.ServicerContext, error: BaseException | None, started: float
) -> None:
    GRPC_REQUESTS.labels(service, method, status_name(context, error)).inc()
    GRPC_DURATION.labels(service, method).observe(time.perf_counter() - started)


def status_name(context: grpc.aio.ServicerContext, error: BaseException | None) -> str:
    """The name of the status code a call ended with, as its client sees it."""
    if isinstance(error, asyncio.CancelledError):
        return grpc.StatusCode.CANCELLED.name
    code = context.code()  # set by an abort (AbortError) or by the servicer
    if code is not None:
        return str(getattr(code, "name", code))
    return grpc.StatusCode.OK.name if error is None else grpc.StatusCode.UNKNOWN.name


def channel(address: str) -> grpc.aio.Channel:
    """An insecure channel to a service on the private network (loopback in embedded mode).

    ``address`` is any gRPC target: ``host:port``; ``dns:///name:port``, whose every address (a Kubernetes
    headless Service: one per pod) gets calls in turn; or ``ipv4:host:port,host:port`` for a fixed set of replicas.
    Calls are spread round robin over the addresses that answer, so a replica that dies only costs the calls
    that were on it.
    """
    return grpc.aio.insecure_channel(
        address,
        options=[
            ("grpc.max_receive_message_length", 16 * 1024 * 1024),
            ("grpc.enable_retries", 1),
            ("grpc.lb_policy_name", "round_robin"),
        ],
    )


def bind(server: grpc.aio.Server, listen: str) -> str:
    """Binds server to host:port (port 0 picks one) and returns the address actually bound."""
    host, _, port = listen.rpartition(":")
    if port.isdigit():
        # grpc binds with SO_REUSEPORT and reports a taken port as a bare RuntimeError: check it plainly first.
        require_free(host.strip("[]"), int(port), flag="--listen")
    try:
        bound = server.add_insecure_port(listen)
    except RuntimeError as e:
        raise OSError(f"cannot listen on {listen} for gRPC: {e}") from e
    if bound == 0:
        raise OSError(f"cannot listen on {listen} for gRPC")
    return f"{host}:{bound}"
