"""Metrics: the gRPC interceptor's status codes, sampled gauges, the metrics endpoint, and the Grafana dashboard's
queries naming only metrics that exist."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from engram import errors
from engram.grpc.rpc import ErrorInterceptor, MetricsInterceptor
from engram.process import metrics

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "k8s" / "grafana" / "engram-dashboard.json"


def calls(service: str, method: str, code: str) -> float:
    return (
        REGISTRY.get_sample_value("engram_grpc_requests_total", {"service": service, "method": method, "code": code})
        or 0.0
    )


def timed(service: str, method: str) -> float:
    return (
        REGISTRY.get_sample_value("engram_grpc_request_duration_seconds_count", {"service": service, "method": method})
        or 0.0
    )


class _Servicer:
    """Methods that end every way a call can: OK, aborted, a kernel error, a bug, a kernel error mid-stream."""

    async def Ok(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        return b"ok"

    async def Abort(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        await context.abort(grpc.StatusCode.NOT_FOUND, "no such thing")
        raise AssertionError("abort returned")

    async def Refuse(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        raise errors.PermissionDenied("This API key may not write.")

    async def Bug(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        raise ValueError("a bug")

    async def Stream(self, request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
        yield b"first"
        raise errors.InvalidArgument("limit", "must be positive.")


@pytest.mark.anyio
async def test_the_interceptor_counts_each_call_under_the_status_code_its_client_got() -> None:
    # One test, one event loop: grpc.aio binds its poller to the loop it first ran on.
    service = f"test.Metrics{uuid.uuid4().hex[:8]}"
    servicer = _Servicer()
    unary = {name: grpc.unary_unary_rpc_method_handler(getattr(servicer, name))
             for name in ("Ok", "Abort", "Refuse", "Bug")}  # fmt: skip
    handlers = {**unary, "Stream": grpc.unary_stream_rpc_method_handler(servicer.Stream)}
    server = grpc.aio.server(interceptors=[MetricsInterceptor(), ErrorInterceptor()])  # as engram.process.runtime has
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")

    async def code_of(method: str) -> grpc.StatusCode:
        try:
            await channel.unary_unary(f"/{service}/{method}")(b"", timeout=10)
        except grpc.aio.AioRpcError as e:
            return e.code()
        return grpc.StatusCode.OK

    try:
        got = {method: await code_of(method) for method in unary}
        stream: Any = channel.unary_stream(f"/{service}/Stream")(b"", timeout=10)
        received = []
        with pytest.raises(grpc.aio.AioRpcError) as ended:
            async for item in stream:
                received.append(item)
    finally:
        await channel.close()
        await server.stop(0)

    expected = {"Ok": "OK", "Abort": "NOT_FOUND", "Refuse": "PERMISSION_DENIED", "Bug": "INTERNAL"}
    assert {method: code.name for method, code in got.items()} == expected  # what the clients saw
    for method, code in expected.items():
        assert calls(service, method, code) == 1, method
        assert timed(service, method) == 1, method
    assert received == [b"first"] and ended.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert calls(service, "Stream", "INVALID_ARGUMENT") == 1 and timed(service, "Stream") == 1


class _Gauges:
    def __init__(self, values: Mapping[str, float]) -> None:
        self.values = values

    def sample(self) -> Mapping[str, float]:
        return self.values


def _scraped() -> dict[str, float]:
    """The unlabelled samples of one scrape, by name."""
    families = text_string_to_metric_families(metrics.exposition().decode())
    return {s.name: s.value for family in families for s in family.samples if not s.labels}


def test_sampled_gauges_combine_their_sources_and_leave_with_them() -> None:
    before = _scraped()
    first = _Gauges({metrics.SSE_CLIENTS: 2, metrics.SSE_QUEUE_DEPTH_MAX: 5})
    second = _Gauges({metrics.SSE_CLIENTS: 3, metrics.SSE_QUEUE_DEPTH_MAX: 9})
    metrics.watch(first)
    metrics.watch(second)
    try:
        scraped = _scraped()
    finally:
        metrics.unwatch(first)
        metrics.unwatch(second)
    base = before.get(metrics.SSE_CLIENTS, 0.0)
    assert scraped[metrics.SSE_CLIENTS] == base + 5  # clients add up
    assert scraped[metrics.SSE_QUEUE_DEPTH_MAX] == max(9, before.get(metrics.SSE_QUEUE_DEPTH_MAX, 0.0))  # the fullest
    assert _scraped().get(metrics.SSE_CLIENTS, 0.0) == base


def test_the_metrics_endpoint_serves_the_registry_and_stops() -> None:
    with metrics.serving("127.0.0.1:0") as server:
        assert server is not None
        response = httpx.get(server.url, timeout=10)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/plain")
        assert "engram_sync_pulled_changes_total" in response.text
    with pytest.raises(httpx.TransportError):
        httpx.get(server.url, timeout=2)


def test_no_listen_address_serves_nothing() -> None:
    with metrics.serving("") as server:
        assert server is None


def test_a_taken_metrics_port_is_one_line_naming_the_setting(taken_port: int) -> None:
    with pytest.raises(metrics.MetricsPortInUse) as caught, metrics.serving(f"127.0.0.1:{taken_port}"):
        pass
    assert str(caught.value) == (
        f"port {taken_port} for metrics is in use (another engram?); set ENGRAM_METRICS_LISTEN to another address "
        f"(e.g. 127.0.0.1:{taken_port + 1}) or stop the other process"
    )


def test_a_listen_address_without_a_port_is_refused_with_an_example() -> None:
    with pytest.raises(ValueError, match=r"ENGRAM_METRICS_LISTEN must be host:port \(e.g. 0.0.0.0:9090\)"):
        metrics.parse_listen("localhost")
    assert metrics.parse_listen("[::1]:9100") == ("::1", 9100)
    assert metrics.parse_listen(":9100") == ("", 9100)


# -- the dashboard ---------------------------------------------------------------------------------------------


def _exported_names() -> set[str]:
    """Every series engram.process.metrics defines: counters as _total, histograms as _bucket/_sum/_count, gauges."""
    names = set(metrics.SAMPLED)
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
    for family in REGISTRY.collect():
        if family.name.startswith("engram_"):
            names.update(family.name + suffix for suffix in suffixes[family.type])
    return names


def _expressions(dashboard: dict[str, Any]) -> list[str]:
    return [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]


def test_the_dashboard_is_grafana_json_whose_queries_name_only_metrics_engram_exports() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert dashboard["schemaVersion"] >= 36 and dashboard["title"]
    assert "datasource" in {variable["name"] for variable in dashboard["templating"]["list"]}
    expressions = _expressions(dashboard)
    assert expressions
    named = {name for expr in expressions for name in re.findall(r"\bengram_[a-z0-9_]+", expr)}
    assert sorted(named - _exported_names()) == []
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))


def test_the_dashboard_shows_what_operators_watch() -> None:
    text = " ".join(_expressions(json.loads(DASHBOARD.read_text(encoding="utf-8"))))
    for needed in (
        "engram_grpc_requests_total", "engram_mcp_tool_calls_total", "engram_index_lag", "engram_sse_clients",
        "engram_sse_dropped_events_total", "engram_jobs_total", "engram_sync_pushed_changes_total",
        "engram_sync_pulled_changes_total",
    ):  # fmt: skip
        assert needed in text, needed
    for histogram in ("engram_grpc_request_duration_seconds", "engram_mcp_tool_duration_seconds"):
        for quantile in ("0.5", "0.95", "0.99"):
            assert f"histogram_quantile({quantile}, sum by (le" in text and f"{histogram}_bucket" in text
