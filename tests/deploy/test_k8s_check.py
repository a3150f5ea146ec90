"""`make k8s-check` under `make test`: the Helm chart renders in every values combination and each object is valid
for the supported Kubernetes versions, the kustomize base is the chart's default render and the overlays build,
the policy scan and the Dockerfile lint pass, and the NATS accounts the chart gives NATS do what docs/events.md
says (tools/k8s_check.py; its tools come with `make install`)."""

from __future__ import annotations

import asyncio
import copy
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import nats
import pytest
import yaml

from tests.helpers.tools import free_port, load_tool

ROOT = Path(__file__).resolve().parents[2]
BOUND = 10.0  # seconds any one wait may take


def _load_tool() -> ModuleType:
    return load_tool("k8s_check")


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    return _load_tool()


@pytest.fixture(scope="module")
def chart(tool: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy, _notes = tool.chart_copy(tmp_path_factory.mktemp("chart"))
    return Path(copy)


@pytest.fixture(scope="module")
def renders(tool: ModuleType, chart: Path) -> dict[str, list[dict[str, Any]]]:
    return {name: tool.render(chart, sets) for name, sets in tool.SCENARIOS.items()}


def _one(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def _env(workload: dict[str, Any]) -> dict[str, Any]:
    container = workload["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def _assert_clean(report: Any) -> None:
    assert not report.problems, "\n".join(report.problems)


def test_the_chart_lints_in_every_values_combination(tool: ModuleType, chart: Path) -> None:
    _assert_clean(tool.helm_lint(chart))


def test_every_rendered_object_is_valid_for_the_oldest_and_newest_supported_kubernetes(
    tool: ModuleType, renders: dict[str, list[dict[str, Any]]]
) -> None:
    for name, objects in renders.items():
        report = tool.validate(objects, name)
        _assert_clean(report)
        assert report.counts["objects validated"] >= 15


def test_names_labels_and_settings_meet_across_the_rendered_objects(
    tool: ModuleType, renders: dict[str, list[dict[str, Any]]]
) -> None:
    for name, objects in renders.items():
        _assert_clean(tool.check_references(objects, name))


def test_the_kustomize_base_is_the_charts_default_render(
    tool: ModuleType, renders: dict[str, list[dict[str, Any]]]
) -> None:
    _assert_clean(tool.compare_base(renders["defaults"]))


def test_the_overlays_build_with_kubectl_and_their_objects_are_valid(
    tool: ModuleType, renders: dict[str, list[dict[str, Any]]]
) -> None:
    report, overlays = tool.check_kustomize(renders["defaults"])
    _assert_clean(report)
    dev, prod = overlays["overlays/dev"], overlays["overlays/prod"]
    assert {o["metadata"]["namespace"] for o in dev} == {"engram-dev"}
    assert not [o for o in dev if o["kind"] in ("HorizontalPodAutoscaler", "Ingress")]
    assert _env(_one(dev, "Deployment", "engram-ingest"))["ENGRAM_STREAM_REPLICAS"] == "1"
    gateway = _one(prod, "Deployment", "engram-gateway")
    assert "engram.example.com" in _env(gateway)["ENGRAM_ALLOWED_HOSTS"]
    assert gateway["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example.com/engram:0.1.0"


@pytest.mark.slow
def test_every_policy_finding_is_fixed_or_justified(tool: ModuleType, renders: dict[str, list[dict[str, Any]]]) -> None:
    report = tool.policy_scan(renders)
    _assert_clean(report)
    assert report.counts["checkov checks passed"] > 100


def test_the_dockerfile_lints_clean(tool: ModuleType) -> None:
    _assert_clean(tool.hadolint())


def test_search_is_a_deployment_on_a_qdrant_server_or_a_statefulset_with_a_volume_per_pod(
    renders: dict[str, list[dict[str, Any]]],
) -> None:
    shared = _one(renders["defaults"], "Deployment", "engram-search")
    assert _env(shared)["ENGRAM_QDRANT_URL"] == "http://engram-qdrant:6333"
    assert _one(renders["defaults"], "HorizontalPodAutoscaler", "engram-search")["spec"]["scaleTargetRef"]["kind"] == (
        "Deployment"
    )
    edge = _one(renders["search-edge"], "StatefulSet", "engram-search")
    assert "ENGRAM_QDRANT_URL" not in _env(edge)
    assert [t["metadata"]["name"] for t in edge["spec"]["volumeClaimTemplates"]] == ["data"]
    assert edge["spec"]["serviceName"] == "engram-search-headless"
    assert (
        _one(renders["search-edge"], "HorizontalPodAutoscaler", "engram-search")["spec"]["scaleTargetRef"]["kind"]
        == "StatefulSet"
    )


def test_services_call_each_other_through_headless_services_and_reach_existing_nats_and_qdrant(
    renders: dict[str, list[dict[str, Any]]],
) -> None:
    env = _env(_one(renders["defaults"], "Deployment", "engram-gateway"))
    for service in ("ingest", "search", "consolidation", "sync"):
        target = env[f"ENGRAM_{service.upper()}_ADDR"]
        assert target == f"dns:///engram-{service}-headless.$(POD_NAMESPACE).svc.cluster.local:50051"
        assert _one(renders["defaults"], "Service", f"engram-{service}-headless")["spec"]["clusterIP"] == "None"
    existing = renders["existing-nats-and-qdrant"]
    search = _env(_one(existing, "Deployment", "engram-search"))
    assert search["ENGRAM_NATS_URL"] == "nats://nats-0.nats:4222,nats://nats-1.nats:4222"
    assert search["ENGRAM_NATS_CREDS"] == "/etc/engram/nats/nats.creds" and "ENGRAM_NATS_USER" not in search
    assert search["ENGRAM_QDRANT_URL"] == "https://qdrant.example.com:6333"
    assert not [o for o in existing if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] != "engram-gateway"
                and o["metadata"]["name"] != "engram-services"]  # fmt: skip


def test_only_the_gateway_is_reachable_from_outside_and_nats_only_from_the_services(
    renders: dict[str, list[dict[str, Any]]],
) -> None:
    objects = renders["defaults"]
    engram_pods = {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "engram",
                                                   "app.kubernetes.io/instance": "engram"}}}  # fmt: skip
    gateway = _one(objects, "NetworkPolicy", "engram-gateway")["spec"]["ingress"]
    assert [rule for rule in gateway if "from" not in rule] == [{"ports": [{"port": "http", "protocol": "TCP"}]}]
    services = _one(objects, "NetworkPolicy", "engram-services")["spec"]
    assert services["podSelector"]["matchExpressions"][0]["values"] == ["ingest", "search", "consolidation", "sync"]
    assert services["ingress"][0] == {"ports": [{"port": "grpc", "protocol": "TCP"}], "from": [engram_pods]}
    nats_clients = _one(objects, "NetworkPolicy", "engram-nats")["spec"]["ingress"][0]
    assert nats_clients == {"ports": [{"port": 4222, "protocol": "TCP"}], "from": [engram_pods]}
    ingress = _one(objects, "Ingress", "engram-gateway")
    assert {p["backend"]["service"]["name"] for r in ingress["spec"]["rules"] for p in r["http"]["paths"]} == {
        "engram-gateway"
    }


def test_every_container_runs_unprivileged_on_a_read_only_root_without_a_token(
    tool: ModuleType, renders: dict[str, list[dict[str, Any]]]
) -> None:
    workloads = [
        o for objects in renders.values() for o in objects
        if o["kind"] in ("Deployment", "StatefulSet") and tool.is_engrams(o)
    ]  # fmt: skip
    assert len(workloads) == 5 * len(renders)
    for workload in workloads:
        pod = workload["spec"]["template"]["spec"]
        assert pod["automountServiceAccountToken"] is False
        assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] >= 10000
        for container in pod["containers"]:
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True and context["allowPrivilegeEscalation"] is False
            assert context["capabilities"] == {"drop": ["ALL"]}
            assert {m["mountPath"] for m in container["volumeMounts"]} >= {"/var/lib/engram", "/tmp"}
            assert container["readinessProbe"] and container["livenessProbe"] and container["startupProbe"]


def test_grpc_services_are_ready_by_grpc_health_and_the_gateway_by_readyz(
    renders: dict[str, list[dict[str, Any]]],
) -> None:
    objects = renders["defaults"]
    ingest = _one(objects, "Deployment", "engram-ingest")["spec"]["template"]["spec"]["containers"][0]
    assert ingest["readinessProbe"]["grpc"] == {"port": 50051}
    assert ingest["livenessProbe"]["grpc"] == {"port": 50051, "service": "liveness"}  # SERVING while it runs
    gateway = _one(objects, "Deployment", "engram-gateway")["spec"]["template"]["spec"]["containers"][0]
    assert gateway["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert gateway["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    with_liveness = _one(renders["monitoring-tls-digest"], "Deployment", "engram-sync")["spec"]["template"]["spec"]
    assert with_liveness["containers"][0]["livenessProbe"]["grpc"] == {"port": 50051, "service": "liveness"}


def test_the_vendored_nats_and_qdrant_charts_render_with_engrams_offline(
    tool: ModuleType, renders: dict[str, list[dict[str, Any]]]
) -> None:
    _assert_clean(tool.check_vendored())
    defaults = renders["defaults"]
    nats, qdrant = _one(defaults, "StatefulSet", "engram-nats"), _one(defaults, "StatefulSet", "engram-qdrant")
    assert not tool.is_engrams(nats) and not tool.is_engrams(qdrant)
    assert not [o for o in renders["search-edge"] if o["metadata"]["name"] == "engram-qdrant"]
    assert not [o for o in renders["existing-nats-and-qdrant"] if o["metadata"]["name"].startswith("engram-nats")]
    assert {tool.key(o) for o in tool.installed_by_engram(defaults)} == {
        tool.key(o) for o in defaults if tool.is_engrams(o) and not tool.is_hook(o)
    }


def test_engrams_network_policies_must_select_the_subcharts_pods_they_are_for(
    tool: ModuleType, renders: dict[str, list[dict[str, Any]]]
) -> None:
    objects = copy.deepcopy(renders["defaults"])
    qdrant = _one(objects, "StatefulSet", "engram-qdrant")
    qdrant["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] = "vector-db"  # a renamed chart
    problems = tool.check_references(objects, "renamed").problems
    assert "renamed: NetworkPolicy/engram-qdrant protects no pod (its podSelector matches none rendered)" in problems
    assert any("Service/engram-qdrant selects no pod" in p for p in problems)


def test_the_nats_and_qdrant_urls_must_name_rendered_services_and_ports(
    tool: ModuleType, renders: dict[str, list[dict[str, Any]]]
) -> None:
    objects = copy.deepcopy(renders["defaults"])
    nats = _one(objects, "Service", "engram-nats")
    nats["spec"]["ports"] = [p for p in nats["spec"]["ports"] if p["port"] != 4222]
    problems = tool.check_references(objects, "no-client-port").problems
    assert any("ENGRAM_NATS_URL names engram-nats:4222, not a rendered Service port" in p for p in problems)


def test_the_chart_deploys_the_nats_server_the_image_and_tests_run_and_its_helm_test_is_ours(
    tool: ModuleType, renders: dict[str, list[dict[str, Any]]]
) -> None:
    _assert_clean(tool.check_versions_and_tests(renders["defaults"]))
    older = copy.deepcopy(renders["defaults"])
    _one(older, "StatefulSet", "engram-nats")["spec"]["template"]["spec"]["containers"][0]["image"] = (
        "nats:2.14.2-alpine"
    )
    assert tool.check_versions_and_tests(older).problems
    test = _one(renders["defaults"], "Pod", tool.HELM_TEST)
    assert test["metadata"]["annotations"]["helm.sh/hook"] == "test"
    assert "/readyz" in test["spec"]["containers"][0]["args"][0]
    assert "--filter 'name=<release>-test-gateway'" in (ROOT / "docs" / "operations.md").read_text()


def test_nats_server_accepts_the_accounts_the_chart_gives_nats(tool: ModuleType) -> None:
    _assert_clean(tool.check_nats_values())


@pytest.fixture
def chart_nats(tool: ModuleType, tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """A nats-server running the chart's NATS configuration (nats.config.merge); the passwords it reads."""
    from engram.process.natsd import nats_server_binary

    values = yaml.safe_load((tool.CHART / "values.yaml").read_text())
    port = free_port()
    text, env = tool.nats_config(values, tmp_path / "store", port)
    (tmp_path / "nats.conf").write_text(text)
    log = open(tmp_path / "nats.log", "wb")  # noqa: SIM115 - the server's, closed below
    process = subprocess.Popen([str(nats_server_binary()), "-c", str(tmp_path / "nats.conf")],
                               env={**os.environ, **env}, stdout=log, stderr=log)  # fmt: skip
    try:
        _wait_accepting(port, process)
        yield f"nats://127.0.0.1:{port}", env
    finally:
        process.terminate()
        process.wait(BOUND)
        log.close()


def _wait_accepting(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + BOUND
    while True:
        assert process.poll() is None, "nats-server exited: the chart's configuration was refused"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, "nats-server did not listen in time"
            time.sleep(0.02)


async def _connect(url: str, user: str, password: str, errors: asyncio.Queue[Exception]) -> nats.NATS:
    async def on_error(e: Exception) -> None:
        errors.put_nowait(e)

    return await nats.connect(url, user=user, password=password, error_cb=on_error, allow_reconnect=False)


@pytest.mark.integration
@pytest.mark.anyio
async def test_an_events_reader_gets_only_its_namespaces_events_and_can_neither_publish_nor_subscribe_wider(
    chart_nats: tuple[str, dict[str, str]],
) -> None:
    url, passwords = chart_nats
    errors: asyncio.Queue[Exception] = asyncio.Queue()
    services = await _connect(url, "engram", passwords["SERVICES_PASSWORD"], errors)
    reader = await _connect(url, "events-default", passwords["EVENTS_DEFAULT_PASSWORD"], errors)
    try:
        received: asyncio.Queue[str] = asyncio.Queue()

        async def on_event(msg: Any) -> None:
            received.put_nowait(msg.subject)

        await reader.subscribe("engram.events.default.>", cb=on_event)
        await reader.flush()
        await services.publish("engram.events.team-a.memory_saved", b"{}")  # another namespace's event first
        await services.publish("engram.events.default.memory_saved", b"{}")
        await services.flush()
        assert await asyncio.wait_for(received.get(), BOUND) == "engram.events.default.memory_saved"

        await reader.subscribe("engram.events.team-a.>", cb=on_event)
        assert "permissions violation for subscription" in str(await asyncio.wait_for(errors.get(), BOUND)).lower()
        await reader.publish("engram.events.default.memory_saved", b"{}")  # would append to the log
        assert "permissions violation for publish" in str(await asyncio.wait_for(errors.get(), BOUND)).lower()
        await reader.publish("$JS.API.STREAM.INFO.ENGRAM", b"")  # the JetStream API would read the whole stream
        assert "permissions violation for publish" in str(await asyncio.wait_for(errors.get(), BOUND)).lower()
        assert received.empty()
    finally:
        await reader.close()
        await services.close()


def test_monitoring_adds_a_service_monitor_of_the_metrics_ports_and_the_grafana_dashboard(
    tool: ModuleType, renders: dict[str, list[dict[str, Any]]]
) -> None:
    objects = renders["monitoring-tls-digest"]
    monitor = _one(objects, "ServiceMonitor", "engram")
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == ["metrics"]
    headless = [o for o in objects if o["kind"] == "Service" and o["metadata"]["name"].endswith("-headless")]
    assert headless and not [o for o in headless if "metrics" in {p["name"] for p in o["spec"]["ports"]}]
    dashboards = [o for o in objects if o["kind"] == "ConfigMap" and tool.is_engrams(o)]
    if (tool.CHART / "dashboards" / "engram-dashboard.json").exists():  # the symlink's target may not exist yet
        (dashboard,) = dashboards
        assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert dashboard["data"]["engram-dashboard.json"].lstrip().startswith("{")
    assert not [o for o in renders["defaults"] if o["kind"] in ("ServiceMonitor", "ConfigMap") and tool.is_engrams(o)]


def test_the_chart_renders_without_the_dashboard_while_its_file_does_not_exist(
    tool: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chart = tmp_path / "k8s" / "helm" / "engram"
    shutil.copytree(tool.CHART, chart, symlinks=True)
    link = chart / "dashboards" / "engram-dashboard.json"
    link.unlink()
    link.symlink_to("../../../grafana/engram-dashboard.json")  # nothing there
    monkeypatch.setattr(tool, "CHART", chart)
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    copy, notes = tool.chart_copy(tmp_path / "render")
    assert notes == ["k8s/helm/engram/dashboards/engram-dashboard.json points at a file that does not exist yet: "
                     "rendered without it"]  # fmt: skip
    objects = tool.render(copy, ("metrics.grafanaDashboard.enabled=true",))
    assert not [o for o in objects if o["kind"] == "ConfigMap" and tool.is_engrams(o)]
