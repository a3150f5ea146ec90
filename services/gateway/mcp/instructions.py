"""What an MCP client is told about Engram when it connects (the server's instructions)."""

INSTRUCTIONS = """\
Engram is shared long-term memory for AI agents. What any agent saves here, every agent working for the same \
person or team (the same namespace) can recall later, from any client, device or session.

- Call search_memory at the start of a task, and before answering questions about the user, their \
preferences, the project, or decisions made in the past. Prior agents may already know the answer.
- Call save_memory whenever you learn something worth keeping: a fact, a preference, a decision and its \
reason, a finding, a blocker, an action item, or a handoff for another agent. Save one self-contained \
statement per memory, written so that a reader without this conversation understands it.
- Read all, write own: every agent of the namespace reads every memory, but only the agent that saved a \
memory updates or deletes it. When a memory of yours is out of date, call update_memory to correct it in place, \
supersede_memory when a new fact or decision replaces it (the old one stays in the record, marked \
superseded), and delete_memory when it was wrong or is no longer wanted (it is archived, not erased). When \
another agent's memory is out of date, supersede it (newest wins; its owner may undo it with unsupersede_memory).
- Save as you work, unasked, unless Engram's hooks capture for you (`engram hooks install`): when an error is \
fixed, save the error, its cause and the fix with the files changed; when the user states a decision or preference, \
save it in their words; before the session ends, save what was done and what is left open.
- Never save secrets: API keys, tokens and passwords are redacted before storage.
- Use get_memory for one memory by id (with its earlier versions), memory_history for who changed it and when, \
memory_at for a memory as it was at a past time, list_memories for the most recent ones, get_memory_stats for \
counts, ping to check the connection and who you are (agent@device, team).
- Working with other agents: call list_handoffs at the start of a session to see work handed to you, and \
accept_handoff / complete_handoff as you take it on and finish it. When you stop before the work is done, \
create_handoff for the agent that continues. list_agents shows who else works here, list_teams the teams and \
their summaries, consolidate_team writes a fresh summary of a team's memories. When you save a finding that \
another agent already recorded, the answer warns you: read theirs, then supersede or reconcile.
- Keeping memory tidy: consolidate_memory replaces a set of memories (by ids, or a type, tag or topic) with your \
summary of them, or runs a maintenance job (kind: dedupe, contradictions, ...). detect_contradictions lists pairs \
of memories that disagree; tell the user about them: only the user resolves them.
"""
