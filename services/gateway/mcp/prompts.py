"""The engram-system-prompt prompt: how to use Engram's shared memory, naming the agent (and the installed packs)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from engram.errors import EngramError
from engram.model import Caller
from engram.services.gateway.mcp.callers import CallerOf
from engram.services.gateway.operations.packs import PackService
from engram.services.gateway.operations.packs.render import packs_prompt

PROMPT_DESCRIPTION = (
    "How to use Engram's shared memory: search at the start, save what is worth keeping, tag it, change only "
    "your own memories, hand work over. Put it in the agent's instructions."
)

SYSTEM_PROMPT = """\
You share a long-term memory, Engram, with the other agents that work for the same people{team}. What one \
agent saves there, every other can recall, on any device and in any later session.{whoami}

1. At the start of a session or task, call session_context (project= and query= for what you are about to do) \
and list_handoffs (work left for you), then search_memory for what the task is about. Another agent may \
already know the answer or have decided it.
2. Save what is worth keeping as you learn it, with save_memory: one self-contained statement per memory that \
makes sense without this conversation, with the right memory_type: fact, preference, decision (with its \
reason), finding, hypothesis, blocker or action-item. Never save secrets.
3. Tag your memories with your name and the project (tags=["{agent}"], project="{project}"), so others can find \
them and know who recorded them.
4. Read every memory, change only your own: correct yours with update_memory, replace an outdated one with \
supersede_memory. Another agent's outdated memory you supersede too (its owner may undo it).
5. When you stop before the work is done, create_handoff for the agent that continues (where it stands, the \
active files, the decisions made, the next steps). Accept a handoff left for you with accept_handoff, and \
complete_handoff when it is done.
6. pin_memory what every session must see first."""

PromptProject = Annotated[str | None, Field(description="The project this session works on, if any.")]


class Prompts:
    """The prompts, each declared once as a method (its parameters are the prompt's arguments), with what they use
    given to the instance: how a request's caller is resolved and the pack service (None: no packs are listed)."""

    def __init__(self, caller: CallerOf, packs: PackService | None) -> None:
        self._caller, self._packs = caller, packs

    async def engram_system_prompt(self, ctx: Context, project: PromptProject = None) -> str:
        try:
            who: Caller | None = self._caller(ctx)
        except EngramError:  # the prompt still teaches; the tools will say how to name yourself
            who = None
        prompt = system_prompt(who, project)
        if self._packs is not None and who is not None:
            with contextlib.suppress(EngramError):  # a key that may not read: the memory part still holds
                prompt += "\n\n" + packs_prompt(await self._packs.installed(who))
        return prompt


# The prompts in the order prompts/list gives them: each one's method, name, title and description.
PROMPTS: tuple[tuple[Callable[..., Any], str, str, str], ...] = (
    (Prompts.engram_system_prompt, "engram-system-prompt", "How to use Engram's shared memory", PROMPT_DESCRIPTION),
)


def register(server: MCPServer, caller: CallerOf, packs: PackService | None) -> None:
    """Adds the prompts to ``server`` (listing the installed expert packs, with ``packs``)."""
    prompts = Prompts(caller, packs)
    for method, name, title, description in PROMPTS:
        server.prompt(name=name, title=title, description=description)(getattr(prompts, method.__name__))


def system_prompt(who: Caller | None, project: str | None = None) -> str:
    """The instructions, naming the agent, its team and the project when known."""
    whoami = f" You are {who.identity}." if who is not None else " (ping tells you your agent id.)"
    return SYSTEM_PROMPT.format(
        team=f" (team {who.team})" if who is not None and who.team else "",
        whoami=whoami,
        agent=who.agent_id if who is not None else "<your agent id>",
        project=project or "<project>",
    )
