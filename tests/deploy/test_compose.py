"""deploy/compose/compose.yaml (`docker compose up` on one host) against the Helm chart it mirrors: each service runs
the chart's command with the chart's settings, is checked by the chart's readiness probe, runs as the chart's
user on a read-only root, and NATS is a 3-server JetStream cluster with the chart's account and limits; and, where a
compose tool is installed, `docker compose config` accepts the file."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from engram.config import Settings
from tests.helpers.tools import load_tool

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_DIR = ROOT / "deploy" / "compose"
SERVICES = ("gateway", "ingest", "search", "consolidation", "sync")
NATS = ("nats-1", "nats-2", "nats-3")
# Where the two differ by design: the pod's namespace (Kubernetes), the key store (a Secret there, the gateway's
# volume here), the Ingress's origins (optional here).
CHART_ONLY = {"ENGRAM_KEYS_FILE", "ENGRAM_ALLOWED_ORIGINS", "POD_NAMESPACE"}
SAME_VALUE = (
    "ENGRAM_HOME", "ENGRAM_DEV_MODE", "ENGRAM_STREAM_REPLICAS", "ENGRAM_NATS_USER", "ENGRAM_METRICS_LISTEN",
    "ENGRAM_GRPC_LISTEN", "ENGRAM_HOST", "ENGRAM_PORT",
)  # fmt: skip


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((COMPOSE_DIR / "compose.yaml").read_text())


@pytest.fixture(scope="module")
def chart(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The chart's container of each service, search from the edge backend (what compose runs)."""
    tool: ModuleType = load_tool("k8s_check")
    copy, _ = tool.chart_copy(tmp_path_factory.mktemp("chart"))
    containers = {}
    for sets in ((), tool.SCENARIOS["search-edge"]):
        for obj in tool.render(copy, sets):
            if obj["kind"] in ("Deployment", "StatefulSet") and tool.is_engrams(obj):
                component = obj["metadata"]["labels"]["app.kubernetes.io/component"]
                if component != "search" or sets:
                    containers[component] = obj["spec"]["template"]["spec"] | {
                        "container": obj["spec"]["template"]["spec"]["containers"][0]
                    }
    return containers


def _env(service: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in (service.get("environment") or {}).items()}


def test_every_service_of_the_chart_runs_its_command_with_its_settings(
    compose: dict[str, Any], chart: dict[str, dict[str, Any]]
) -> None:
    settings = {f"ENGRAM_{f.name.upper()}" for f in dataclasses.fields(Settings)}
    assert set(compose["services"]) == {*SERVICES, *NATS, "cli"}
    for name in SERVICES:
        service, container = compose["services"][name], chart[name]["container"]
        assert service["command"] == container["args"] == ["run", name]
        env = _env(service)
        assert set(env) <= settings, set(env) - settings
        wanted = {e["name"]: e.get("value") for e in container["env"]}
        assert set(wanted) - CHART_ONLY == set(env) - CHART_ONLY, name
        for variable in SAME_VALUE:
            if variable in wanted:
                assert env[variable] == wanted[variable], (name, variable)
        for variable in [v for v in env if v.endswith("_ADDR")]:
            target, port = env[variable].rsplit(":", 1)
            assert target == variable.removeprefix("ENGRAM_").removesuffix("_ADDR").lower() and target in SERVICES
            assert env["ENGRAM_NATS_URL"].count("nats://") == len(NATS) and int(port) == 50051


def test_health_checks_are_the_charts_readiness_probes(
    compose: dict[str, Any], chart: dict[str, dict[str, Any]]
) -> None:
    for name in SERVICES:
        check = " ".join(compose["services"][name]["healthcheck"]["test"])
        probe = chart[name]["container"]["readinessProbe"]
        if "grpc" in probe:
            assert probe["grpc"] == {"port": 50051}  # the overall status: service ''
            assert "HealthStub" in check and "127.0.0.1:50051" in check and "service=''" in check
        else:
            port = {p["name"]: p["containerPort"] for p in chart[name]["container"]["ports"]}[probe["httpGet"]["port"]]
            assert f"http://127.0.0.1:{port}{probe['httpGet']['path']}" in check
    for name in NATS:
        assert "8222/healthz" in " ".join(compose["services"][name]["healthcheck"]["test"])
        assert compose["services"][name]["volumes"][0] == f"{name}:/var/lib/engram"


def test_containers_run_as_the_charts_user_on_a_read_only_root(
    compose: dict[str, Any], chart: dict[str, dict[str, Any]]
) -> None:
    for name, service in compose["services"].items():
        context = chart["gateway"]["container"]["securityContext"]
        assert service["user"] == f"{context['runAsUser']}:{context['runAsGroup']}", name
        assert service["read_only"] is context["readOnlyRootFilesystem"] is True
        assert service["cap_drop"] == context["capabilities"]["drop"] == ["ALL"]
        assert service["tmpfs"] == ["/tmp"]
    gateway = compose["services"]["gateway"]
    assert gateway["ports"] == ["${ENGRAM_BIND:-127.0.0.1}:${ENGRAM_PUBLISHED_PORT:-8765}:8765"]
    assert {p["containerPort"] for p in chart["gateway"]["container"]["ports"]} >= {8765}
    assert "gateway:/var/lib/engram" in compose["services"]["cli"]["volumes"]  # keys created where the gateway reads


def test_nats_is_a_three_server_jetstream_cluster_with_the_charts_account(compose: dict[str, Any]) -> None:
    values = yaml.safe_load((ROOT / "deploy" / "k8s" / "helm" / "engram" / "values.yaml").read_text())
    merge = values["nats"]["config"]["merge"]
    conf = (COMPOSE_DIR / "nats.conf").read_text()
    assert f"max_payload: {merge['max_payload'].strip('<> ')}" in conf
    assert re.findall(r"nats://(nats-\d):6222", conf) == list(NATS)
    (services_user,) = [u for u in merge["accounts"]["ENGRAM"]["users"] if "permissions" not in u]
    assert f"user: {services_user['user']}, password: $SERVICES_PASSWORD" in conf and "jetstream: enabled" in conf
    for name in NATS:
        service = compose["services"][name]
        assert service["command"] == ["--name", name] and service["entrypoint"][0].endswith("/nats-server")
    for name in SERVICES:
        assert compose["services"][name].get("depends_on") and _env(compose["services"][name])[
            "ENGRAM_STREAM_REPLICAS"
        ] == str(len(NATS))
        depends = compose["services"][name]["depends_on"]
        if name != "gateway":
            assert depends == {n: {"condition": "service_healthy"} for n in NATS}


def test_the_nats_configuration_is_accepted_by_nats_server(tmp_path: Path) -> None:
    from engram.process.natsd import nats_server_binary

    conf = (COMPOSE_DIR / "nats.conf").read_text().replace("/var/lib/engram/jetstream", str(tmp_path / "js"))
    (tmp_path / "nats.conf").write_text(conf)
    done = subprocess.run(
        [str(nats_server_binary()), "-t", "-c", str(tmp_path / "nats.conf"), "--name", "nats-1"],
        env={**os.environ, "SERVICES_PASSWORD": "0f3c5e"}, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def _compose_tool() -> list[str] | None:
    for command in (["docker", "compose"], ["docker-compose"]):
        if (
            shutil.which(command[0])
            and subprocess.run([*command, "version"], capture_output=True, timeout=30, check=False).returncode == 0
        ):
            return command
    return None


def test_docker_compose_accepts_the_file() -> None:
    command = _compose_tool()
    if command is None:
        pytest.skip("neither `docker compose` nor docker-compose is installed: the file was checked by parsing only")
    env = {**os.environ, "ENGRAM_NATS_PASSWORD": "0f3c5e"}
    done = subprocess.run(
        [*command, "-f", str(COMPOSE_DIR / "compose.yaml"), "config", "--quiet"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    missing = subprocess.run(
        [*command, "-f", str(COMPOSE_DIR / "compose.yaml"), "config", "--quiet"],
        env={k: v for k, v in env.items() if k != "ENGRAM_NATS_PASSWORD"}, capture_output=True, text=True,
        timeout=60, check=False, cwd=COMPOSE_DIR.parent,
    )  # fmt: skip
    assert missing.returncode != 0 and "ENGRAM_NATS_PASSWORD" in missing.stderr
