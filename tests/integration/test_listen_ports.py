"""A taken port is reported as one line naming the flag to change, for the gateway and for gRPC services alike."""

from __future__ import annotations

import socket

import grpc
import pytest

from engram.grpc.rpc import bind
from engram.process.ports import PortInUse, listen_socket

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


async def test_grpc_listen_on_a_taken_port_names_the_listen_flag(taken_port: int) -> None:
    server = grpc.aio.server()
    try:
        with pytest.raises(PortInUse) as caught:
            bind(server, f"127.0.0.1:{taken_port}")
    finally:
        await server.stop(None)
    assert str(caught.value) == (
        f"port {taken_port} is in use (another engram?); try --listen 127.0.0.1:{taken_port + 1} "
        "or stop the other process"
    )


async def test_grpc_listen_on_port_zero_picks_a_free_port() -> None:
    server = grpc.aio.server()
    try:
        address = bind(server, "127.0.0.1:0")
    finally:
        await server.stop(None)
    assert int(address.rpartition(":")[2]) > 0


def test_http_socket_on_a_taken_port_names_the_port_flag(taken_port: int) -> None:
    with pytest.raises(PortInUse, match=rf"^port {taken_port} is in use .* try --port {taken_port + 1} "):
        listen_socket("127.0.0.1", taken_port)


def test_http_socket_on_port_zero_listens_on_a_free_port() -> None:
    with listen_socket("127.0.0.1", 0) as sock:
        assert sock.getsockname()[1] > 0


def test_the_gateway_socket_is_tcp_so_answers_are_not_held_back_by_nagle() -> None:
    # asyncio sets TCP_NODELAY only on sockets whose proto is IPPROTO_TCP; without it every kept-alive HTTP
    # answer waited ~40 ms for the client's delayed ACK (found by make bench: /healthz took 44 ms).
    sock = listen_socket("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()
