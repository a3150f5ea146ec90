"""The `all` job's dedupe and contradictions in a child process of their own, which ends with them.

They read the whole namespace and compare every memory with its neighbours: at 50k memories 450 MiB of Python
objects at the peak. Freed in small pieces among objects that live on, that memory mostly stayed resident in the
node (pymalloc keeps an arena while one object in it lives; glibc a page): 930 MiB after a job at 50k against 527
before it, measured (docs/benchmarks.md, lean memory). A child gives it all back when it exits. It talks to the
node's ingest and search services over gRPC, as the job did, and reports its progress and result as JSON lines.

`python -m engram.services.consolidation.isolated` reads its request (a JSON object) on stdin.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.errors import Unavailable
from engram.process.children import die_with_parent, python_module
from engram.services.consolidation.checkpoint import Checkpoint
from engram.services.consolidation.jobs import Progress
from engram.services.consolidation.maintenance import Compared

CHILD = "engram.services.consolidation.isolated"
LINE_LIMIT = 64 * 1024 * 1024  # the result line (each step's result) may be long
CALL_TIMEOUT = 30.0  # seconds per gRPC call, as the service's own clients (server.DEFAULT_INGEST_TIMEOUT)


@dataclass(frozen=True, slots=True)
class ChildCompare:
    """Maintenance's compare, run by a child process against the node's ingest and search gRPC services."""

    ingest_addr: str
    search_addr: str
    max_proposals: int
    models_dir: Path
    nli_dir: Path | None = None  # the NLI model ENGRAM_NLI_MODEL names; None: the newest installed

    async def __call__(
        self, namespace: str, progress: Progress, since: Checkpoint | None = None, *, gated: bool = True
    ) -> Compared:
        request = {"namespace": namespace, "ingest": self.ingest_addr, "search": self.search_addr,
                   "max_proposals": self.max_proposals, "models": str(self.models_dir), "nli": str(self.nli_dir or ""),
                   "since": (since or Checkpoint()).to_dict(), "gated": gated}  # fmt: skip
        child = await asyncio.create_subprocess_exec(
            *python_module(CHILD), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            limit=LINE_LIMIT,
        )  # fmt: skip
        assert child.stdin is not None and child.stdout is not None
        try:
            child.stdin.write(json.dumps(request).encode())
            await child.stdin.drain()
            child.stdin.close()
            compared = None
            async for line in child.stdout:
                try:
                    message = json.loads(line)
                except ValueError:  # not ours (a library that prints): the lines that count are JSON objects
                    continue
                if not isinstance(message, dict):
                    continue
                if "phase" in message:
                    progress.start(message["phase"], message["total"])
                    progress.advance(message["done"])
                elif "seconds" in message:
                    steps = [tuple(step) for step in message["steps"]]
                    compared = Compared(message["seconds"], steps, Checkpoint.from_dict(message.get("checkpoint")))
            code = await child.wait()
        finally:
            if child.returncode is None:  # cancelled: the job's comparison ends with it
                with contextlib.suppress(ProcessLookupError):
                    child.kill()
                await child.wait()
        if compared is None or code != 0:
            raise Unavailable(f"the comparison of the memories (a child process) ended with exit code {code}; "
                              "its error is in the node's log. The next run starts it again.")  # fmt: skip
        return compared


async def _compare(request: dict[str, Any]) -> Compared:
    from engram.grpc.clients import IngestClient, SearchClient
    from engram.models.nli import load_nli
    from engram.services.consolidation.maintenance import Maintenance

    ingest = IngestClient(request["ingest"], timeout=CALL_TIMEOUT)
    search = SearchClient(request["search"], timeout=CALL_TIMEOUT)
    try:
        nli = load_nli(Path(request["models"]), model_dir=Path(request["nli"]) if request.get("nli") else None)
        maintenance = Maintenance(search, ingest, max_proposals=request["max_proposals"], nli=nli)
        since = Checkpoint.from_dict(request.get("since"))
        return await maintenance.compare(request["namespace"], _Reported(), since, gated=request.get("gated", True))
    finally:
        await search.close()
        await ingest.close()


class _Reported(Progress):
    """The child's progress, told to the parent as it changes."""

    def __init__(self) -> None:
        super().__init__(on_change=self._report)

    def _report(self) -> None:
        _say({"phase": self.phase, "total": self.total, "done": self.done})


def _say(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    die_with_parent()  # a node killed mid-job (SIGKILL, the out-of-memory killer) takes its comparison with it
    request = json.loads(sys.stdin.read())
    compared = asyncio.run(_compare(request))
    _say({"seconds": compared.seconds, "steps": compared.steps, "checkpoint": compared.checkpoint.to_dict()})


if __name__ == "__main__":
    main()
