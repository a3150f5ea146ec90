"""For `engram mcp`: find the node of a data dir or start one, and stay attached to it while the client lives."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import subprocess
import time
from pathlib import Path

import grpc

from engram.grpc.rpc import channel
from engram.process.children import python_module
from engram.process.nodeinfo import SPAWN_LOCK, NodeInfo, read_node_info
from engram.v1 import node_control_pb2, node_control_pb2_grpc

DEFAULT_START_TIMEOUT = 120.0  # the first start builds the ONNX model


class NodeStartError(RuntimeError):
    """The node could not be started; the message points at its log."""


async def node_answers(info: NodeInfo, timeout: float = 2.0) -> bool:
    chan = channel(info.grpc_address)
    try:
        reply = await node_control_pb2_grpc.NodeControlStub(chan).GetNodeInfo(
            node_control_pb2.GetNodeInfoRequest(), timeout=timeout
        )
        return reply.pid == info.pid
    except grpc.aio.AioRpcError:
        return False
    finally:
        await chan.close()


async def find_or_start(home: Path, *, timeout: float = DEFAULT_START_TIMEOUT) -> NodeInfo:
    """The running node of home, starting one (that exits when its last stdio client leaves) if none runs.

    A spawn lock serialises concurrent `engram mcp` processes, so exactly one of them starts the node.
    """
    home.mkdir(parents=True, exist_ok=True)
    with open(home / SPAWN_LOCK, "a+") as lock:
        await asyncio.to_thread(fcntl.flock, lock, fcntl.LOCK_EX)
        info = read_node_info(home)
        if info is not None and await node_answers(info):
            return info
        return await _spawn(home, timeout)


async def _spawn(home: Path, timeout: float) -> NodeInfo:
    log_dir = home / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / "node.log"
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [
                *python_module("engram.services.node"),
                "serve",
                "--home",
                str(home),
                "--port",
                "0",
                "--idle-exit",
                "--quiet",
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,  # the client's terminal signals are not the node's business
            close_fds=True,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise NodeStartError(f"The Engram node exited with code {process.returncode}; see {log_path}")
        info = read_node_info(home)
        if info is not None and info.pid == process.pid and await node_answers(info):
            return info
        await asyncio.sleep(0.1)
    process.terminate()
    raise NodeStartError(f"The Engram node did not start within {timeout:.0f}s; see {log_path}")


@contextlib.asynccontextmanager
async def attached(info: NodeInfo, client: str):  # type: ignore[no-untyped-def]
    """Holds an Attach stream open for the duration of the block; the node counts this client while it is open."""
    chan = channel(info.grpc_address)
    call = node_control_pb2_grpc.NodeControlStub(chan).Attach(
        node_control_pb2.AttachRequest(client=client, pid=os.getpid())
    )
    await call.read()  # the node has counted us once this arrives
    try:
        yield call
    finally:
        call.cancel()
        await chan.close()
