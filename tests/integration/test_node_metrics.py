"""Prometheus metrics of a real node: an MCP tool call and REST calls move the counters and histograms of the
gateway, the gRPC services and ingest, under bounded labels; the index lag is exposed; the gateway's /metrics and
ENGRAM_METRICS_LISTEN serve the same registry; only loopback callers and admin keys read the gateway's."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from engram.config import Settings
from engram.keys import KeyStore
from engram.services.gateway.app import build_app
from engram.services.gateway.backend import Backend
from tests.conftest import NodeHandle, engram_env, start_node
from tests.helpers.mcp import call, http_client, tool_error
from tests.helpers.rest import assert_problem
from tests.helpers.tools import free_port

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

MEMORY_ROUTE = "/v1/memories/{memory_id}"


@dataclass(frozen=True, slots=True)
class Metered:
    node: NodeHandle
    metrics_url: str  # ENGRAM_METRICS_LISTEN
    port: int


@pytest.fixture(scope="module")
def metered(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[Metered]:
    """A dev-mode node that also serves its metrics on ENGRAM_METRICS_LISTEN."""
    port = free_port()
    node = start_node(tmp_path_factory.mktemp("metered"), model_cache, ENGRAM_METRICS_LISTEN=f"127.0.0.1:{port}")
    yield Metered(node, f"http://127.0.0.1:{port}/metrics", port)
    assert node.stop() == 0


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Samples:
    response = httpx.get(url, timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def test_calls_move_counters_and_histograms_under_bounded_labels_and_the_index_lag_is_exposed(
    metered: Metered,
) -> None:
    node, missing = metered.node, str(uuid.uuid4())
    async with http_client(node.mcp_url, agent="metrics-probe") as client:
        saved = await call(client, "save_memory", content=f"Grafana reads Prometheus on port 9090 {uuid.uuid4()}")
        assert "no memory with id" in (await tool_error(client, "get_memory", id=missing)).lower()
    memory_id = saved["memory"]["id"]
    with httpx.Client(base_url=node.http_url, timeout=60) as api:
        assert api.get(f"/v1/memories/{memory_id}").status_code == 200
        assert_problem(api.get(f"/v1/memories/{missing}"), 404)

    gateway = scrape(f"{node.http_url}/metrics")  # a loopback caller needs no key
    listen = scrape(metered.metrics_url)

    for samples in (gateway, listen):  # the embedded node: one registry behind both
        # MCP tools, by tool and outcome (the error's kind)
        assert value(samples, "engram_mcp_tool_calls_total", tool="save_memory", outcome="ok") >= 1
        assert value(samples, "engram_mcp_tool_calls_total", tool="get_memory", outcome="not_found") >= 1
        assert value(samples, "engram_mcp_tool_duration_seconds_count", tool="save_memory") >= 1
        # REST by route template, never by raw path
        assert value(samples, "engram_http_requests_total", route=MEMORY_ROUTE, method="GET", status="200") >= 1
        assert value(samples, "engram_http_requests_total", route=MEMORY_ROUTE, method="GET", status="404") >= 1
        assert value(samples, "engram_http_request_duration_seconds_count", route=MEMORY_ROUTE, method="GET") >= 2
        assert value(samples, "engram_http_requests_total", route="/mcp", method="POST", status="200") >= 1
        # the gRPC services behind them, by status code
        assert value(samples, "engram_grpc_requests_total", service="engram.v1.Ingest", method="SaveMemory",
                     code="OK") >= 1  # fmt: skip
        assert value(samples, "engram_grpc_requests_total", service="engram.v1.Search", method="GetMemory",
                     code="NOT_FOUND") >= 1  # fmt: skip
        assert value(samples, "engram_grpc_request_duration_seconds_bucket", service="engram.v1.Ingest",
                     method="SaveMemory", le="+Inf") >= 1  # fmt: skip
        assert value(samples, "engram_log_appends_total", event="memory_saved") >= 1
        # the index: applied, the log's end, the difference
        assert value(samples, "engram_index_applied_seq") >= saved["seq"]
        assert value(samples, "engram_log_last_seq") >= value(samples, "engram_index_applied_seq")
        assert ("engram_index_lag", frozenset()) in samples and value(samples, "engram_index_lag") >= 0
        assert ("engram_sse_clients", frozenset()) in samples and ("engram_jobs_running", frozenset()) in samples
        labels = {v for (_, pairs) in samples for _, v in pairs}
        assert not {label for label in labels if memory_id in label or missing in label}
        assert not {label for label in labels if "metrics-probe" in label}  # agents are never labels


def test_a_second_node_on_a_taken_metrics_port_says_so_in_one_line(metered: Metered, tmp_path: Path) -> None:
    env = engram_env(metered.node.model_cache, ENGRAM_METRICS_LISTEN=f"127.0.0.1:{metered.port}")
    done = subprocess.run(
        [sys.executable, "-m", "engram.services.node", "serve", "--home", str(tmp_path / "other"), "--port", "0",
         "--quiet"], env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"engram: port {metered.port} for metrics is in use (another engram?); set ENGRAM_METRICS_LISTEN to another "
        f"address (e.g. 127.0.0.1:{metered.port + 1}) or stop the other process"
    )
    assert "Traceback" not in done.stderr


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_gateway_metrics_need_a_loopback_caller_or_an_admin_key(tmp_path: Path) -> None:
    settings = Settings.from_env({}, home=tmp_path, dev_mode=False)
    keys = KeyStore(settings.keys_path)
    _, reader = keys.create(namespace="ops", agent="grafana", scopes=["read"])
    _, admin = keys.create(namespace="ops", agent="prometheus", scopes=["read", "admin"])
    backend = Backend(ingest_addr="127.0.0.1:9", search_addr="127.0.0.1:9")  # never called
    app = build_app(settings, backend, keys)
    refused = _sample("engram_http_requests_total", route="/metrics", method="GET", status="403")
    unmatched = _sample("engram_http_requests_total", route="unmatched", method="OTHER", status="404")
    try:
        remote = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app, client=("10.0.0.7", 40000)), base_url="http://127.0.0.1"
        )
        local = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app, client=("127.0.0.1", 40000)), base_url="http://127.0.0.1"
        )
        async with remote, local:
            anonymous = await remote.get("/metrics")
            wrong = await remote.get("/metrics", headers={"Authorization": "Bearer engram_0000"})
            read_only = await remote.get("/metrics", headers={"Authorization": f"Bearer {reader}"})
            allowed = await remote.get("/metrics", headers={"Authorization": f"Bearer {admin}"})
            on_this_machine = await local.get("/metrics")
            nowhere = await local.request("BREW", f"/coffee/{uuid.uuid4()}")
    finally:
        await backend.close()

    assert "'admin' scope" in assert_problem(anonymous, 401)["detail"]
    assert_problem(wrong, 401)
    assert "'admin' scope" in assert_problem(read_only, 403)["detail"]
    for response in (allowed, on_this_machine):
        assert response.status_code == 200 and "engram_http_requests_total" in response.text
    assert nowhere.status_code == 404
    # the refusals and an unknown path and method counted, under bounded labels
    assert _sample("engram_http_requests_total", route="/metrics", method="GET", status="403") == refused + 1
    assert _sample("engram_http_requests_total", route="unmatched", method="OTHER", status="404") == unmatched + 1
