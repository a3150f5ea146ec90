"""/readyz of a real node whose nats-server stops answering: it says "not ready" at once (within a second), with
the log as the reason, whether nats-server was stopped (SIGSTOP: the connection stays open, so nothing notices
by itself) or killed; and it is ready again once nats-server is back."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.conftest import NodeHandle

pytestmark = pytest.mark.integration

BUDGET = 1.0  # seconds /readyz may take, whatever the log does
SLACK = 0.5  # the HTTP round trip on a busy two-core machine
RECOVERY = 30.0


@pytest.fixture
def api(node: NodeHandle) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=node.http_url, timeout=30) as client:
        yield client


def timed_readyz(api: httpx.Client) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = api.get("/readyz")
    return response, time.monotonic() - started


def wait_for(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def assert_not_ready_in_time(api: httpx.Client) -> None:
    # A reply already on its way when the server stopped may still say ready once; the next one must not.
    deadline = time.monotonic() + BUDGET + SLACK
    while timed_readyz(api)[0].status_code == 200:
        assert time.monotonic() < deadline, "/readyz still says ready a second after the log stopped answering"
    for _ in range(3):
        response, seconds = timed_readyz(api)
        assert seconds < BUDGET + SLACK, f"/readyz took {seconds:.2f}s"
        assert response.status_code == 503, response.text
        body = response.json()
        assert "log" in {p["condition"] for p in body["problems"]}, body
        assert body["detail"].startswith("Not ready: ") and response.headers["retry-after"]


def test_readyz_says_not_ready_within_a_second_while_a_stopped_nats_server_does_not_answer(
    node: NodeHandle, api: httpx.Client
) -> None:
    assert api.get("/readyz").status_code == 200
    os.kill(node.nats_pid, signal.SIGSTOP)  # hung: its socket stays open, no disconnect is seen
    try:
        assert_not_ready_in_time(api)
        detail = api.get("/readyz").json()["detail"]
        assert "NATS (the log) does not answer (no reply within 0.5 s)" in detail
    finally:
        os.kill(node.nats_pid, signal.SIGCONT)
    wait_for(lambda: api.get("/readyz").status_code == 200, RECOVERY)
    assert timed_readyz(api)[1] < BUDGET + SLACK


@contextlib.contextmanager
def holding_port(port: int, timeout: float = 2.0) -> Iterator[None]:
    """Listens on 127.0.0.1:port once its killed owner has let go, so the restarted nats-server cannot (yet)."""
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    deadline = time.monotonic() + timeout
    while True:
        try:
            holder.bind(("127.0.0.1", port))
            break
        except OSError:
            if time.monotonic() > deadline:
                holder.close()
                raise
            time.sleep(0.001)
    holder.listen(1)
    try:
        yield
    finally:
        holder.close()


def test_readyz_says_not_ready_within_a_second_right_after_nats_server_is_killed(
    node: NodeHandle, api: httpx.Client
) -> None:
    wait_for(lambda: api.get("/readyz").status_code == 200, RECOVERY)
    os.kill(node.nats_pid, signal.SIGKILL)  # the node's supervisor restarts it, once the port is free again
    with holding_port(int(node.nats_url.rsplit(":", 1)[1])):
        assert_not_ready_in_time(api)
    wait_for(lambda: api.get("/readyz").status_code == 200, RECOVERY)
