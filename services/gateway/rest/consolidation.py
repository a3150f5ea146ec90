"""REST for keeping the shared memory tidy: /v1/consolidation/jobs, /v1/consolidate and /v1/contradictions."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations as objects.

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from engram.services.gateway.rest.dependencies import CurrentCaller, Ops, description_of, path_of, query_of
from engram.services.gateway.rest.problems import ERROR_RESPONSES, NOT_FOUND, PROBLEM_MEDIA_TYPE, Problem
from engram.services.gateway.schemas.arguments import (
    DEFAULT_CONTRADICTIONS,
    ContradictionLimit,
    ContradictionTopics,
    JobId,
)
from engram.services.gateway.schemas.requests import ConsolidateRequest, JobRequest, ResolveRequest
from engram.services.gateway.schemas.results import ConsolidateMemoryResult, ContradictionsResult, JobOut, ResolveResult

# A maintenance job: 409 when the namespace's maintenance (or that job) is running already, or the job failed for
# a reason of state (its summary says which).
_JOB: dict[int | str, dict[str, Any]] = {
    409: {
        "model": Problem,
        "content": {PROBLEM_MEDIA_TYPE: {}},
        "description": "A maintenance job of this namespace is running already (the problem names it)",
    }
}

_JOB_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "content": {PROBLEM_MEDIA_TYPE: {}}, "description": "No such job in your namespace"}
}

# Replacing memories with a summary: 403 also for another agent's memory without an admin's force.
_CONSOLIDATE_MEMORIES: dict[int | str, dict[str, Any]] = {
    **NOT_FOUND,
    403: {
        "model": Problem,
        "content": {PROBLEM_MEDIA_TYPE: {}},
        "description": "Missing scope, or a memory of another agent without force (admin)",
    },
}

# Resolving a contradiction: the user's decision, so 403 without the admin scope.
_RESOLVE: dict[int | str, dict[str, Any]] = {
    **NOT_FOUND,
    403: {"model": Problem, "content": {PROBLEM_MEDIA_TYPE: {}}, "description": "The key lacks the admin scope"},
}

_LIST_QUERY = "Comma separated (topics=a,b), or the parameter repeated."


# Routes /v1/consolidation/jobs (run one, read one), /v1/consolidate (a summary replaces memories) and
# /v1/contradictions (list, resolve): keeping the shared memory tidy. build_app includes them; each route takes the
# app's operations and caller as injected dependencies (rest/dependencies.py).
# Tagged "memories" too, as when these routes were part of the memories router: the OpenAPI document is unchanged.
router = APIRouter(prefix="/v1", tags=["memories"], responses=ERROR_RESPONSES)


@router.post("/consolidation/jobs", response_model=JobOut, responses=_JOB, tags=["consolidation"],
             summary="Run a maintenance job on your namespace")  # fmt: skip
async def run_job(body: JobRequest, caller: CurrentCaller, ops: Ops) -> JobOut:
    """Runs the job to its end and answers it (progress: done of total, phase; its summary and result). A job
    that fails answers its error (e.g. 409 while another runs). 503 without a consolidation service."""
    return await ops.run_job(caller, body.kind, body.options)


@router.get("/consolidation/jobs/{job_id}", response_model=JobOut, responses=_JOB_NOT_FOUND,
            tags=["consolidation"], summary="A job of your namespace, running or ended")  # fmt: skip
async def get_job(job_id: Annotated[str, path_of(JobId)], caller: CurrentCaller, ops: Ops) -> JobOut:
    """The job's state (running, succeeded, failed), progress, summary and result; jobs are kept a week."""
    return await ops.get_job(caller, job_id)


@router.post("/consolidate", status_code=201, response_model=ConsolidateMemoryResult,
             responses=_CONSOLIDATE_MEMORIES, tags=["consolidation"],
             summary="Replace memories with your summary of them")  # fmt: skip
async def consolidate(
    body: ConsolidateRequest, caller: CurrentCaller, ops: Ops, response: Response
) -> ConsolidateMemoryResult:
    """Saves `consolidated_content` as a new memory and archives the memories named (`memory_ids`) or selected
    (`memory_type`, `tag`, `topic`: at most 100) with a merged-into relation to it."""
    result = await ops.consolidate(caller, body)
    if result.survivor is not None:
        response.headers["Location"] = f"/v1/memories/{result.survivor.id}"
    return result


@router.get("/contradictions", response_model=ContradictionsResult, tags=["consolidation"],
            summary="The open contradictions of your namespace")  # fmt: skip
async def list_contradictions(
    caller: CurrentCaller,
    ops: Ops,
    topics: Annotated[
        list[str] | None, Query(description=f"{description_of(ContradictionTopics)} {_LIST_QUERY}")
    ] = None,
    limit: Annotated[int, query_of(ContradictionLimit)] = DEFAULT_CONTRADICTIONS,
) -> ContradictionsResult:
    """Pairs of active memories that seem to disagree, flagged by the contradictions job, most likely first;
    resolve them with POST /v1/contradictions/resolve (admin)."""
    wanted = [topic.strip() for value in topics or [] for topic in value.split(",") if topic.strip()]
    return await ops.contradictions(caller, topics=wanted, limit=limit)


@router.post("/contradictions/resolve", response_model=ResolveResult, responses=_RESOLVE,
             tags=["consolidation"], summary="Resolve a contradiction (admin)")  # fmt: skip
async def resolve_contradiction(body: ResolveRequest, caller: CurrentCaller, ops: Ops) -> ResolveResult:
    """The user's decision on a flagged pair: keep_both (with `context` and `other_context`: when each holds),
    keep_newer (the older is archived), merge (`content` replaces both) or override (`winner_id` supersedes the
    other). Needs an admin key."""
    return await ops.resolve(caller, body)
