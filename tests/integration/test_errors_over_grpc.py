"""Kernel errors cross gRPC as structure: the client rebuilds the same class with the same data."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from engram import errors
from engram.grpc.rpc import ErrorInterceptor, error_from_rpc

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

EXAMPLES: list[errors.EngramError] = [
    errors.InvalidArgument("content", "is required: the text of the memory."),
    errors.NotFound("0190a0b0-0000-7000-8000-000000000001"),
    errors.Unauthenticated("An API key is required."),
    errors.PermissionDenied("This API key may not write."),
    errors.OwnershipError("gemini-cli", "claude-code"),
    errors.VersionConflict(3, 5),
    errors.Unavailable("The log is unreachable.", retry_after=7.5),
    errors.DiskFull("only 3 MiB free in /data.", retry_after=10.0),
    errors.PayloadTooLarge(2_000_000, 1_048_576),
    errors.PayloadTooLarge(None, 1_048_576, "The line", setting="ENGRAM_MAX_IMPORT_LINE_BYTES", hint="Shorten it."),
    errors.UnsupportedMediaType("text/plain", "application/json"),
    errors.NotImplementedYet("PullChanges"),
    errors.NoVersionAt("0190a0b0-0000-7000-8000-000000000001", 1700000000.25, 1800000000.5),
]


class _Raiser:
    """A servicer whose one method raises whatever it is told to."""

    def __init__(self) -> None:
        self.error: Exception = RuntimeError("unset")

    async def Call(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        raise self.error


async def test_kernel_errors_arrive_as_the_same_class_with_the_same_data() -> None:
    # One event loop for every call: grpc.aio binds its poller to the loop it first ran on.
    raiser = _Raiser()
    server = grpc.aio.server(interceptors=[ErrorInterceptor()])  # as every Engram server has it
    handler = grpc.method_handlers_generic_handler(
        "test.Raiser", {"Call": grpc.unary_unary_rpc_method_handler(raiser.Call)}
    )
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    call: Any = channel.unary_unary("/test.Raiser/Call")

    async def through_grpc(error: Exception) -> errors.EngramError:
        raiser.error = error
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await call(b"", timeout=10)
        return error_from_rpc(raised.value)

    try:
        for error in EXAMPLES:
            received = await through_grpc(error)
            assert type(received) is type(error)
            assert (str(received), received.details(), received.code) == (str(error), error.details(), error.code)

        owned = await through_grpc(errors.OwnershipError("gemini-cli", "claude-code"))
        assert isinstance(owned, errors.OwnershipError)
        assert (owned.owner, owned.caller) == ("gemini-cli", "claude-code")
        assert "Use search_memory to read it" in str(owned)

        retry = await through_grpc(errors.Unavailable("down", retry_after=7.5))
        assert isinstance(retry, errors.Unavailable) and retry.retry_after == 7.5

        # A bug is INTERNAL, not INVALID_ARGUMENT, and its internals stay in the service's log.
        bug = await through_grpc(ValueError("something deep went wrong"))
        assert bug.code == "internal" and "something deep went wrong" not in str(bug)
    finally:
        await channel.close()
        await server.stop(0)


def test_every_error_class_can_be_rebuilt_from_its_details() -> None:
    for error in EXAMPLES:
        again = type(error).rebuild(str(error), error.details())
        assert (type(again), str(again), again.details()) == (type(error), str(error), error.details())
    assert set(errors.EngramError.by_reason) >= {type(e).reason for e in EXAMPLES}
