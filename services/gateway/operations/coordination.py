"""Agents working together: the agents and teams of a namespace, and handoffs of work between agents."""

from __future__ import annotations

import dataclasses

from engram.config import DEFAULT_SEARCH_LIMIT
from engram.model import HANDOFF_STATUSES, Caller, SearchFilter
from engram.services.gateway.identity import require_scope
from engram.services.gateway.operations.memories import MemoryOperations, list_result, save_result
from engram.services.gateway.schemas.requests import (
    Filters,
    HandoffListRequest,
    HandoffMoveRequest,
    HandoffRequest,
    SaveRequest,
    SearchRequest,
)
from engram.services.gateway.schemas.results import AgentOut, AgentsResult, ListResult, SaveResult, TeamOut, TeamsResult
from engram.validation import MAX_SUMMARY_CHARS


class CoordinationOperations(MemoryOperations):
    """The agents, teams and handoffs of the caller's namespace, for an already resolved caller."""

    async def agents(self, caller: Caller) -> AgentsResult:
        """The agent registry of the caller's namespace, most recently seen first."""
        require_scope(caller, "read")
        agents = await self._backend.search_client.list_agents(caller, min_seq=self._cursors.min_seq(caller.namespace))
        agents.sort(key=lambda agent: agent.last_seen or 0.0, reverse=True)
        return AgentsResult(agents=[AgentOut.of(agent) for agent in agents])

    async def teams(
        self, caller: Caller, *, search: str | None = None, limit: int = DEFAULT_SEARCH_LIMIT
    ) -> TeamsResult:
        """The teams of the caller's namespace; with ``search``, also the team summaries matching it."""
        require_scope(caller, "read")
        teams = await self._backend.search_client.list_teams(caller, min_seq=self._cursors.min_seq(caller.namespace))
        result = TeamsResult(teams=[TeamOut.of(team) for team in teams])
        if search is not None:
            query = SearchRequest(query=search, limit=limit, filters=Filters(memory_type="team-summary"))
            result.summaries = (await self.search(caller, query)).hits
        return result

    async def create_handoff(self, caller: Caller, request: HandoffRequest) -> SaveResult:
        """Saves a pending handoff for ``request.target_agent``: readable Markdown, with its lists in metadata."""
        save = SaveRequest(
            content=handoff_content(request), summary=handoff_summary(request), memory_type="handoff",
            handoff_target=request.target_agent, tags=request.tags, team=request.team, project=request.project,
            importance=request.importance,
            metadata={name: list(getattr(request, name) or []) for name in HANDOFF_LISTS},
        )  # fmt: skip
        return await self.save(caller, save)

    async def handoffs(self, caller: Caller, request: HandoffListRequest) -> ListResult:
        """Handoffs to the caller, from it, or all of the namespace's, in one state or all, newest first."""
        require_scope(caller, "read")
        # By state, not by type: an expired handoff has become a plain (general) memory and keeps its state.
        statuses = list(HANDOFF_STATUSES) if request.status == "all" else [request.status]
        flt = SearchFilter(handoff_statuses=statuses)
        if request.role == "to_me":
            flt.handoff_target = caller.agent_id
        elif request.role == "from_me":
            flt.owner_agent = caller.agent_id
        outcome = await self._backend.list(
            caller, limit=request.limit, flt=flt, page_token=request.page_token or "",
            min_seq=self._cursors.min_seq(caller.namespace, request.min_seq),
        )  # fmt: skip
        if request.role == "to_me":  # a handoff to agent@device is the agent's on that device only
            mine = (caller.agent_id, caller.identity)
            outcome = dataclasses.replace(
                outcome, memories=[m for m in outcome.memories if m.handoff is None or m.handoff.target_agent in mine]
            )
        return list_result(outcome)

    async def move_handoff(
        self, caller: Caller, memory_id: str, status: str, request: HandoffMoveRequest
    ) -> SaveResult:
        """Accepts or completes a handoff (``status``): the act of its target agent, not its owner."""
        require_scope(caller, "write")
        outcome = await self._backend.ingest.update_handoff(
            caller, memory_id, status, expected_version=request.expected_version or 0, note=request.note or ""
        )
        self._cursors.observe(caller.namespace, outcome.seq)
        return save_result(outcome.memory, outcome.seq, outcome.redactions)


# The lists of a handoff: its metadata keys, and the headings of its Markdown sections.
HANDOFF_LISTS = {"active_files": "Active files", "decisions_made": "Decisions made", "next_steps": "Next steps"}


def handoff_content(request: HandoffRequest) -> str:
    """The handoff as a reader sees it: its context, then a Markdown section per list given."""
    parts = [request.context.strip()]
    for name, heading in HANDOFF_LISTS.items():
        items = getattr(request, name)
        if items:
            parts.append(f"## {heading}\n" + "\n".join(f"- {item.strip()}" for item in items))
    return "\n\n".join(parts)


def handoff_summary(request: HandoffRequest) -> str:
    """ "Handoff to <target>: <first line of the context>", within the summary limit."""
    first = next((line.strip() for line in request.context.splitlines() if line.strip()), "")
    text = f"Handoff to {request.target_agent}: {first}"
    return text if len(text) <= MAX_SUMMARY_CHARS else text[: MAX_SUMMARY_CHARS - 1] + "…"
