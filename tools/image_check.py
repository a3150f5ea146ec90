"""`make image-check`: the image built and run as `docker compose up` would, with figures (opt-in; needs a Docker
engine with BuildKit and docker compose or docker-compose).

1. The base: BASE_IMAGE (default python:3.12-slim-bookworm) is pulled; where it cannot be, a local stand-in is
   built and used instead, and the report says so: Debian bookworm by debootstrap with Debian's python3 (3.11),
   imported as STANDIN_IMAGE (needs root and debootstrap; kept for the next run).
2. The build: `docker build --build-arg BASE_IMAGE=...`, with the network's CA as the BuildKit secret `ca` when
   there is one (--ca, else the certificates added to /usr/local/share/ca-certificates), as docs/operations.md
   "Behind a proxy" describes.
3. The stack: deploy/compose/compose.yaml as project engram-image-check, on a free port: an API key made with the
   `cli` service, then `up`; the time until the gateway's /readyz answers 200.
4. Over MCP (streamable HTTP, the key): save_memory, then search_memory finds it.
5. Recovery: for each of nats-1, ingest, search, consolidation, sync and gateway in turn, its process is killed
   (SIGKILL from the host: a crash, which the restart policy answers); the time until the container is healthy
   again and until a new memory is saved and found over MCP.
6. `down -v` (unless --keep). The figures are printed and written as JSON (--report).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILE = ROOT / "deploy" / "compose" / "compose.yaml"
DEFAULT_BASE = "python:3.12-slim-bookworm"
STANDIN_IMAGE = "engram-standin-base:bookworm-python3.11"
STANDIN_PACKAGES = "python3,python3-venv,python-is-python3,ca-certificates"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
IMAGE = "engram:image-check"
PROJECT = "engram-image-check"
KILLED = ("nats-1", "ingest", "search", "consolidation", "sync", "gateway")
READY_TIMEOUT = 600.0
RECOVERY_TIMEOUT = 300.0
PULL_TIMEOUT = 120.0
NETWORK_CA_DIR = Path("/usr/local/share/ca-certificates")


class CheckFailed(RuntimeError):
    """A step of the image check failed; the message says which and why."""


@dataclass
class Report:
    base_image: str = ""
    stand_in: str = ""  # why the default base was not used, when it was not
    ca_secret: str = ""
    seconds: dict[str, float] = field(default_factory=dict)
    recovery: dict[str, dict[str, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


# --- tools ---------------------------------------------------------------------------------------------------


def docker_cli() -> str:
    """A docker CLI that builds with BuildKit without the buildx plugin: $DOCKER, else Debian's docker.io client
    (/usr/bin/docker), else docker on PATH."""
    for candidate in (os.environ.get("DOCKER"), "/usr/bin/docker", shutil.which("docker")):
        if candidate and Path(candidate).exists():
            return candidate
    raise CheckFailed("no docker CLI: install a Docker engine (Debian: apt-get install docker.io) and start dockerd")


def compose_cli(docker: str) -> list[str]:
    for command in ([docker, "compose"], ["docker-compose"]):
        if shutil.which(command[0]) and run([*command, "version"], check=False).returncode == 0:
            return command
    raise CheckFailed(
        "neither `docker compose` nor docker-compose: install one (Debian: apt-get install docker-compose)"
    )


def run(
    command: Sequence[str], *, check: bool = True, env: dict[str, str] | None = None, timeout: float | None = None,
    input_text: str | None = None,
) -> subprocess.CompletedProcess[str]:  # fmt: skip
    done = subprocess.run(
        list(command), capture_output=True, text=True, env=env, timeout=timeout, input=input_text, check=False
    )
    if check and done.returncode != 0:
        raise CheckFailed(f"{' '.join(command[:4])} … failed ({done.returncode}):\n{done.stderr.strip()[-3000:]}")
    return done


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- 1. the base, 2. the build -------------------------------------------------------------------------------


def base_image(docker: str, wanted: str, report: Report) -> str:
    """``wanted`` when it is here or can be pulled; else the local stand-in (built once)."""
    if run([docker, "image", "inspect", wanted], check=False).returncode == 0:
        return wanted
    try:
        pulled = run([docker, "pull", wanted], check=False, timeout=PULL_TIMEOUT)
        reason = pulled.stderr.strip().splitlines()[-1] if pulled.returncode else ""
    except subprocess.TimeoutExpired:
        reason = f"no answer in {PULL_TIMEOUT:.0f} s"
    if not reason:
        return wanted
    report.stand_in = (
        f"{wanted} cannot be pulled here ({reason}); built on a local stand-in instead: {STANDIN_IMAGE} "
        f"(Debian bookworm by debootstrap, Debian's python3 3.11)"
    )
    print(f"image-check: {report.stand_in}", file=sys.stderr)
    if run([docker, "image", "inspect", STANDIN_IMAGE], check=False).returncode != 0:
        build_standin(docker)
    return STANDIN_IMAGE


def build_standin(docker: str) -> None:
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None or os.geteuid() != 0:
        raise CheckFailed(
            "the default base image cannot be pulled and no stand-in can be built: that takes root and debootstrap "
            "(apt-get install debootstrap), or give --base-image an image of your registry"
        )
    with tempfile.TemporaryDirectory(prefix="engram-standin-", dir="/var/tmp") as tmp:
        rootfs = Path(tmp) / "rootfs"
        run([debootstrap, "--variant=minbase", f"--include={STANDIN_PACKAGES}", "bookworm", str(rootfs),
             DEBIAN_MIRROR], timeout=1800)  # fmt: skip
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for path in (rootfs / cache).glob("*"):
                if path.is_file():
                    path.unlink()
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(
            [docker, "import", "-c", "ENV LANG=C.UTF-8", "-c", 'CMD ["python3"]', "-", STANDIN_IMAGE],
            stdin=tar.stdout, capture_output=True, text=True, check=False,
        )  # fmt: skip
        tar.wait()
        if imported.returncode != 0 or tar.returncode != 0:
            raise CheckFailed(f"docker import of the stand-in failed: {imported.stderr.strip()}")


def network_ca(given: Path | None, workdir: Path) -> Path | None:
    """The CA to give the build: --ca, else the certificates added to this machine's store (a TLS-intercepting
    proxy's, typically), concatenated; None when there are none."""
    if given is not None:
        return given
    added = sorted(NETWORK_CA_DIR.glob("*.crt")) if NETWORK_CA_DIR.is_dir() else []
    if not added:
        return None
    bundle = workdir / "network-ca.pem"
    bundle.write_text("".join(path.read_text() for path in added))
    return bundle


def build(docker: str, base: str, ca: Path | None) -> None:
    command = [docker, "build", "--build-arg", f"BASE_IMAGE={base}", "-t", IMAGE]
    if ca is not None:
        command += ["--secret", f"id=ca,src={ca}"]
    run([*command, str(ROOT)], env={**os.environ, "DOCKER_BUILDKIT": "1"}, timeout=3600)


# --- 3. the stack, 4. MCP, 5. recovery -----------------------------------------------------------------------


@dataclass
class Stack:
    docker: str
    compose: list[str]
    env: dict[str, str]
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def compose_run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return run([*self.compose, "-p", PROJECT, "-f", str(COMPOSE_FILE), *args], env=self.env, timeout=timeout)

    def container(self, service: str) -> str:
        return self.compose_run("ps", "-q", service).stdout.strip()

    def health(self, service: str) -> str:
        state = run([self.docker, "inspect", "-f", "{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}"
                     "{{end}} {{.State.Pid}}", self.container(service)]).stdout.split()  # fmt: skip
        return state[1] if len(state) > 2 else state[0]

    def pid(self, service: str) -> int:
        return int(run([self.docker, "inspect", "-f", "{{.State.Pid}}", self.container(service)]).stdout.strip())

    def ready(self) -> bool:
        import httpx

        try:
            return httpx.get(f"{self.url}/readyz", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False


def wait(condition: Any, timeout: float, what: str) -> float:
    """Seconds until ``condition()`` holds (polled every 0.5 s), or CheckFailed."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        try:
            if condition():
                return time.monotonic() - started
        except CheckFailed:
            pass
        time.sleep(0.5)
    raise CheckFailed(f"{what}: not within {timeout:.0f} s")


async def save_and_find(url: str, key: str, text: str) -> None:
    """save_memory over MCP, then search_memory finds it (read-your-writes through the saved seq)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import Implementation

    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=120)) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http),
               client_info=Implementation(name="image-check", version="1.0")) as client,
    ):  # fmt: skip
        saved = await client.call_tool("save_memory", {"content": text})
        if saved.is_error or saved.structured_content is None:
            raise CheckFailed(f"save_memory failed: {saved.content}")
        found = await client.call_tool("search_memory", {"query": text, "min_seq": saved.structured_content["seq"]})
        hits = (found.structured_content or {}).get("results") or (found.structured_content or {}).get("hits") or []
        if found.is_error or not any(text in json.dumps(hit) for hit in hits):
            raise CheckFailed(f"search_memory did not find the memory just saved: {found.content}")


def mcp_round(stack: Stack, key: str, label: str) -> None:
    asyncio.run(save_and_find(stack.url, key, f"image-check {label} {secrets.token_hex(4)}: the cache warms at six"))


def kill_and_recover(stack: Stack, key: str, service: str) -> dict[str, float]:
    """SIGKILL the service's process from the host; seconds until its container is healthy again, and until a save
    and a search over MCP work."""
    pid = stack.pid(service)
    started = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    wait(lambda: stack.pid(service) not in (0, pid), RECOVERY_TIMEOUT, f"{service} restarted")
    wait(lambda: stack.health(service) == "healthy", RECOVERY_TIMEOUT, f"{service} healthy again")
    elapsed_healthy = time.monotonic() - started

    def served() -> bool:
        try:
            mcp_round(stack, key, f"after {service}")
            return True
        except Exception:  # not yet: any failure is retried until the bound
            return False

    wait(lambda: stack.ready() and served(), RECOVERY_TIMEOUT, f"MCP after killing {service}")
    return {"healthy_s": round(elapsed_healthy, 1), "mcp_s": round(time.monotonic() - started, 1)}


def check_stack(docker: str, report: Report, *, keep: bool) -> None:
    stack = Stack(docker, compose_cli(docker), {}, free_port())
    stack.env = {**os.environ, "ENGRAM_IMAGE": IMAGE, "ENGRAM_NATS_PASSWORD": secrets.token_hex(24),
                 "ENGRAM_PUBLISHED_PORT": str(stack.port)}  # fmt: skip
    try:
        started = time.monotonic()
        key = stack.compose_run("run", "--rm", "cli", "keys", "create", "--namespace", "default", "--agent",
                                "image-check").stdout.split()[0]  # fmt: skip
        stack.compose_run("up", "-d")
        report.seconds["compose up to /readyz 200"] = round(
            wait(stack.ready, READY_TIMEOUT, "the gateway's /readyz"), 1
        )
        report.seconds["first start, key included, to /readyz 200"] = round(time.monotonic() - started, 1)
        first = time.monotonic()
        mcp_round(stack, key, "first")
        report.seconds["MCP save and search"] = round(time.monotonic() - first, 2)
        for service in KILLED:
            report.recovery[service] = kill_and_recover(stack, key, service)
            print(f"image-check: killed {service}: {report.recovery[service]}", file=sys.stderr)
    except CheckFailed:
        logs = stack.compose_run("logs", "--tail", "40", timeout=120).stdout if stack.compose else ""
        print(logs[-6000:], file=sys.stderr)
        raise
    finally:
        if not keep:
            stack.compose_run("down", "-v", "--remove-orphans", timeout=300)


# --- all of it -----------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-image", default=DEFAULT_BASE, help=f"the image's base (default {DEFAULT_BASE})")
    parser.add_argument("--ca", type=Path, help="the network's CA (PEM) for the build's pip; default: the added ones")
    parser.add_argument("--keep", action="store_true", help="leave the compose stack running")
    parser.add_argument("--report", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    report = Report()
    try:
        docker = docker_cli()
        run([docker, "info"])
        with tempfile.TemporaryDirectory(prefix="engram-image-check-") as tmp:
            started = time.monotonic()
            report.base_image = base_image(docker, args.base_image, report)
            report.seconds["base image"] = round(time.monotonic() - started, 1)
            ca = network_ca(args.ca, Path(tmp))
            report.ca_secret = str(ca) if ca else ""
            started = time.monotonic()
            build(docker, report.base_image, ca)
            report.seconds["docker build"] = round(time.monotonic() - started, 1)
        size = run([docker, "image", "inspect", "-f", "{{.Size}}", IMAGE]).stdout.strip()
        report.notes.append(f"{IMAGE}: {int(size) / 1e6:.0f} MB")
        check_stack(docker, report, keep=args.keep)
    except (CheckFailed, subprocess.TimeoutExpired) as e:
        print(f"image-check: FAILED: {e}", file=sys.stderr)
        print(json.dumps(asdict(report), indent=2))
        return 1
    text = json.dumps(asdict(report), indent=2)
    print(text)
    if args.report:
        args.report.write_text(text + "\n")
    print("image-check: ok" + (f" (on a stand-in base: {report.stand_in})" if report.stand_in else ""), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
