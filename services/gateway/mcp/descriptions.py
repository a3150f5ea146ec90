"""What an agent reads about each tool: its description (every token is paid for: they steer in few words) and its
annotations (read-only, destructive, idempotent)."""

from __future__ import annotations

from mcp.types import ToolAnnotations

from engram.services.gateway.operations.context import DEFAULT_TOKEN_BUDGET, MAX_TOKEN_BUDGET, MIN_TOKEN_BUDGET

READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)

DELETE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
PIN = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
INSTALL = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True)

SAVE_DESCRIPTION = """\
Save a memory that you or other agents should be able to recall later. Use it whenever you learn \
something worth keeping: a fact about the user or the project, a preference, a decision and why it was made, \
a finding, a blocker, an action item, or a handoff of unfinished work to another agent. Save one \
self-contained statement per call, understandable without this conversation. Secrets are redacted \
before storage and listed in `redactions`. Returns the stored memory with its id and the log `seq` \
of the write."""

SEARCH_DESCRIPTION = """\
Search the shared memory of your namespace (hybrid semantic + keyword search). Use it at the start of every \
task, and before answering questions about the user, their preferences, the project or past decisions: \
other agents may already have recorded the answer. Returns the best hits with a relevance score and the \
full memory; filters narrow by tags, type, owner agent, topics, project, team, status and creation time. Only \
active memories are searched unless you ask for others (include_archived, status). With as_of (an RFC 3339 \
time) it searches the memories as they were then: their content then, the ones active then and valid in the \
world then; use it to answer "what did we know or decide at that time?"."""

GET_DESCRIPTION = """\
Fetch one memory by id: its complete, current content and fields, its status (active, archived, expired, \
superseded; a superseded one names its replacement in superseded_by), and its earlier versions in `history` \
(oldest first). Use it when a search hit, a handoff or another memory refers to an id, and to read the \
current `version` before changing a memory with expected_version."""

UPDATE_DESCRIPTION = """\
Correct or complete one of your own memories in place: a new version with the fields you pass changed; \
fields you leave out keep their value (lists and metadata are replaced whole). Use it when a memory you saved \
is wrong, imprecise or missing a tag. Only the agent that saved a memory may update it (read all, write own): \
for another agent's memory, save your own version instead. When the world changed (a new decision replaces an \
old one), use supersede_memory, so the old one stays on record. Pass expected_version (the version you read) to \
fail instead of overwriting a change made since. Returns the memory at its new version; the earlier versions \
stay in its history."""

DELETE_DESCRIPTION = """\
Delete one of your own memories that is wrong or no longer wanted: it is archived, so search and lists stop \
returning it, but it stays readable by id and in its history (reversible: nothing is erased). Only the agent \
that saved it may delete it. Prefer supersede_memory when a newer memory replaces it. Erasing a memory for \
good (purge) is not a tool: an administrator does it with `engram admin purge`. Two forms: by id, or (an expert \
pack's memory, as the pack tools' seed does) by name (the pack), category and summary as memory/_index.md shows \
it."""

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
Every version of a memory, oldest first (the last is the current one): its content then, who changed it \
(agent_id), from which client (source), when, the change (event: memory_saved, memory_updated, \
memory_deleted, memory_superseded, memory_expired) and the status it left. Use it to see how a fact or \
decision evolved, or who changed it."""

MEMORY_AT_DESCRIPTION = """\
A memory as it was at a past time (RFC 3339): the version that was current then. Use it to see what a memory \
said when a decision was made, or before it was updated or superseded. Fails if the memory did not exist yet \
at that time."""

STATS_DESCRIPTION = """\
Counts of the memories of your namespace: active and total, by owning agent, by type, by status and by team. \
Use it to get an overview of what the shared memory holds, or to see which agents contribute to it."""

LIST_DESCRIPTION = """\
List memories of your namespace, most recent first, optionally filtered. Use it to see what was saved \
lately (e.g. to catch up at the start of a session) or to browse by tag or type when you have no query; \
use search_memory when you are looking for something specific."""

PING_DESCRIPTION = """\
Check that Engram is reachable and see who you are to it: your agent id, device and team (identity \
agent@device, as other agents see you), namespace and scopes. Use it when a memory tool fails unexpectedly, \
or to confirm which agent id and team your memories are saved under."""

LIST_AGENTS_DESCRIPTION = """\
The agents that share this memory: for each, when it was first and last seen, how many active memories it \
owns, the devices and clients it wrote from, its teams and how many writes it made. Use it to find out who \
else works here (e.g. before creating a handoff, to name its target) or who recorded something."""

LIST_TEAMS_DESCRIPTION = """\
The teams of this namespace: for each, its active memories, the agents owning them, its current team summary \
(summary_id) and its latest activity. With `search`, also the team summaries matching it (e.g. "what did the \
auth team learn about sessions?"). Use it to get the overview of a team's work before joining in."""

CONSOLIDATE_DESCRIPTION = """\
Write a fresh summary of a team's memories: a Markdown digest grouped by finding, decision, hypothesis, \
blocker, action item and other, saved as a searchable team-summary memory tagged team:<name>. It replaces \
(supersedes) the team's previous summary, so running it again does not duplicate. Use it at the end of a \
stretch of team work, or before handing the team's work over. `team` defaults to yours."""

CONSOLIDATE_MEMORY_DESCRIPTION = """\
Keep the shared memory tidy, in one of two ways. (1) Replace a set of memories with your summary of them: pass \
consolidated_content and either memory_ids or a selector (memory_type, tag and/or topic: every active memory \
matching it, at most 100). The summary is saved as a new memory (of that memory_type, else general, with the tag \
and topic) and the originals are archived with a merged-into relation to it, so they leave search but stay \
readable by id. Use it when many small memories of a category say what one summary can; read them first \
(list_memories, get_memory) so the summary keeps every fact. Only your own memories merge unless an admin passes \
force. (2) Run a maintenance job on the namespace: pass kind (dedupe merges near-duplicates, contradictions \
flags memories that disagree, expire, decay, team_summary, enrich_backfill, or all); it answers once the job has \
ended, with its summary and result."""

DETECT_CONTRADICTIONS_DESCRIPTION = """\
List the open contradictions of this namespace: pairs of active memories that seem to disagree (e.g. two \
different ports for the same API), each with a score and why, flagged by the contradictions job (run it with \
consolidate_memory kind=contradictions). Use it before relying on a fact that may have changed, and tell the \
user about the pairs you find: only the user resolves a contradiction (keep both, keep the newer, merge, or \
override), from the REST API or `engram contradictions resolve` with an admin key; agents cannot."""

CREATE_HANDOFF_DESCRIPTION = """\
Hand unfinished work over to another agent: where it stands (context), and optionally the files being worked \
on, the decisions made so far and the next steps. Use it when you stop before the work is done and another \
agent (or you, on another device or in a later session) should continue. The target finds it with \
list_handoffs and accepts, then completes it; a handoff nobody accepts expires (by default after 24 hours) \
and stays as a plain memory. Returns the saved handoff memory."""

LIST_HANDOFFS_DESCRIPTION = """\
Handoffs: by default the pending ones handed to you. Call it at the start of a session to pick up work other \
agents left for you; role from_me shows the ones you created (and whether they were taken up), status all \
every state. Each is a memory whose `handoff` says its target, status (pending, accepted, completed, \
expired) and when a pending one expires; its content holds the context, files, decisions and next steps."""

ACCEPT_HANDOFF_DESCRIPTION = """\
Accept a handoff addressed to you: tells its author and every other agent that you took the work over (it \
no longer expires). Only its target agent may. Call it when you start on a handoff from list_handoffs; \
complete_handoff when the work is done."""

COMPLETE_HANDOFF_DESCRIPTION = """\
Mark a handoff addressed to you as completed, optionally with a note on the outcome. Only its target agent \
may. Call it when the handed-over work is done (a pending handoff may be completed directly)."""

SESSION_CONTEXT_DESCRIPTION = f"""\
The memories you should see first, as Markdown within a token budget: call it at the start of a session or \
task. Pinned memories come first (at most 5, in full), then the 3 most useful others in full (by importance, \
confidence, how often they are read and how recently they changed; with `query`, by relevance to it too), then \
the rest as one-line titles with their ids (get_memory reads one). `project` keeps to one project; `query` \
names what you are about to do. token_budget ({MIN_TOKEN_BUDGET}-{MAX_TOKEN_BUDGET}, default \
{DEFAULT_TOKEN_BUDGET}) bounds the Markdown, counted with the embedder's tokenizer. The structured result \
lists the memories shown and the tokens used."""

PIN_DESCRIPTION = """\
Pin one of your memories, so that session_context shows it first, in full, to every agent of the namespace \
(at most 5 pinned memories are shown in full). Use it for what every session must know: a standing \
instruction, a key decision, a critical constraint. It adds the tag "pinned" through an update, so only the \
agent that saved the memory may pin it (read all, write own); pinning a pinned memory changes nothing."""

UNPIN_DESCRIPTION = """\
Unpin one of your memories (removes the tag "pinned" through an update; only its owner may): it then competes \
with the others in session_context by importance and recency. Unpinning a memory that is not pinned changes \
nothing."""
