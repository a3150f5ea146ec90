"""What an agent reads about each tool: its description (every token is paid for: they steer in few words) and its
annotations (read-only, destructive, idempotent)."""

from __future__ import annotations

from mcp.types import ToolAnnotations

READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)

DELETE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
PIN = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
INSTALL = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True)

SAVE_DESCRIPTION = """\
Save something worth keeping, for you and other agents: one self-contained fact, preference, decision (with why), \
finding, blocker or action item, readable without this conversation. Secrets are redacted. Answers its id and seq \
(a min_seq to read it back)."""

SEARCH_DESCRIPTION = """\
Search the shared memory (meaning and keywords). Use it at the start of every task and before answering about the \
user, the project or past decisions: another agent may know. Hits show id, content, type, owner, tags, score \
(detail=full: every field). Active memories only unless status or include_archived; as_of searches them as they \
were then."""

GET_DESCRIPTION = """\
One memory by id, every field: its status (superseded_by names a replacement), version (for expected_version) and \
earlier versions (history). Use it when a hit, handoff or memory names an id."""

UPDATE_DESCRIPTION = """\
Correct one of your own memories in place: the fields you pass change (lists and metadata whole), the others \
stay. Only its owner may. When a newer fact replaces it, use supersede_memory instead (the old one stays on \
record). expected_version fails the call if it changed since you read it."""

DELETE_DESCRIPTION = """\
Archive one of your own memories that is wrong or unwanted: it leaves search and lists but stays readable by id \
(erasing is `engram admin purge`, not a tool). Prefer supersede_memory when a newer one replaces it. By id, or a \
pack's memory by name, category and summary."""

SUPERSEDE_DESCRIPTION = """\
Replace an outdated memory, yours or another agent's (a fact that changed, a decision that was revised), with \
a new one: pass old_id and either content (plus any save_memory field) for a new memory, or new_id of an \
existing memory that replaces it. The old memory is marked superseded and names its replacement (superseded_by); \
it leaves search but stays on record, so memory_at and search with as_of still show what was known before. If \
the old memory was superseded already, the head of its chain (the memory that currently replaces it) is the one \
replaced. Returns the replacing memory and the superseded one. Its owner may undo it (unsupersede_memory)."""

UNSUPERSEDE_DESCRIPTION = """\
Undo the supersession of one of your memories (id): it is active again, and its replacement no longer supersedes \
it. Only the superseded memory's owner (or an admin) may."""

HISTORY_DESCRIPTION = """\
Every version of a memory, oldest first: its content, who changed it (agent_id), from which client, when, and the \
change (event). Use it to see how a fact or decision evolved."""

MEMORY_AT_DESCRIPTION = """\
A memory as it was at a past time (the version current then), e.g. when a decision was made. Fails if it did not \
exist yet."""

STATS_DESCRIPTION = """\
Counts of your namespace's memories: active and total, by agent, type, status and team. Use it for an overview of \
the shared memory."""

LIST_DESCRIPTION = """\
Recent memories, newest first, optionally filtered (detail=full: every field). Use it to catch up at the start of \
a session or to browse by tag or type; search_memory finds something specific."""

PING_DESCRIPTION = """\
Check that Engram answers and who you are to it: agent id, device, team, namespace, scopes. Use it when a tool \
fails unexpectedly or to confirm your agent id."""

LIST_AGENTS_DESCRIPTION = """\
The agents sharing this memory: first and last seen, active memories owned, devices, clients, teams, writes. Use \
it to find who works here (e.g. a handoff's target) or who recorded something."""

LIST_TEAMS_DESCRIPTION = """\
The teams here: active memories, agents, current summary (summary_id), latest activity; with search, the team \
summaries that match it. Use it for a team's overview before joining its work."""

CONSOLIDATE_DESCRIPTION = """\
Write a fresh Markdown summary of a team's memories (findings, decisions, hypotheses, blockers, action items) as \
a team-summary memory tagged team:<name>, replacing the previous one. Use it at the end of a stretch of team work \
or before a handover."""

CONSOLIDATE_MEMORY_DESCRIPTION = """\
Tidy the shared memory. (1) Replace memories with your summary: consolidated_content and memory_ids or a selector \
(memory_type, tag, topic); the originals are archived (merged-into), still readable by id. Read them first so no \
fact is lost. (2) Run a maintenance job: kind; answers when it ended."""

DETECT_CONTRADICTIONS_DESCRIPTION = """\
Open contradictions and proposed updates (kind), pairs of active memories that seem to disagree or where the newer \
replaces the older, with score, why and the rule that raised it (found by consolidate_memory \
kind=contradictions). Check before relying on a fact that may have changed and tell the user: \
only the user resolves them (REST or `engram contradictions resolve`, admin key)."""

CREATE_HANDOFF_DESCRIPTION = """\
Hand unfinished work to another agent (or yourself, elsewhere or later) when you stop before the work is done: \
where it stands, files, decisions, next steps. The target finds it with list_handoffs, accepts, then completes \
it; unaccepted, it expires (24 h by default)."""

LIST_HANDOFFS_DESCRIPTION = """\
Handoffs, by default the pending ones handed to you: call it at the start of a session to pick up work left for \
you. role from_me: the ones you created. Each is a memory whose handoff says target, status and expiry; its \
content holds the work."""

ACCEPT_HANDOFF_DESCRIPTION = """\
Accept a handoff addressed to you (only its target may): everyone sees you took it over, and it no longer \
expires. complete_handoff when done."""

COMPLETE_HANDOFF_DESCRIPTION = """\
Mark a handoff addressed to you completed, with an optional note on the outcome (only its target may)."""

SESSION_CONTEXT_DESCRIPTION = """\
The memories to see first, as Markdown: call it at the start of a session or task. Pinned ones first (up to 5), \
then the 3 most useful in full, then one-line titles with ids (get_memory reads one). project keeps to one \
project; query names what you are about to do; token_budget bounds the Markdown."""

PIN_DESCRIPTION = """\
Pin one of your memories so session_context shows it first, in full, to every agent (up to 5): a standing \
instruction, key decision or critical constraint. Adds the tag pinned (owner only)."""

UNPIN_DESCRIPTION = """\
Unpin one of your memories (removes the tag pinned; owner only): it then competes by importance and recency in \
session_context."""
