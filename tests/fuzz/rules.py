"""Rules JSON Schema cannot state (several fields, or the server's state), shared by the MCP and REST fuzzers: a
schema-valid call may break them, and then a refusal naming the rule is the right answer."""

CONSOLIDATION_RULES = (
    # the arguments that go together, and what the state of the namespace allows
    "give either kind",
    "only goes with consolidated_content",
    "takes no topic",
    "takes no force",
    "no active memory matches",
    "active memories match",
    "name the memories your summary replaces",
    "unknown option(s)",
    "none is configured: set ENGRAM_LLM_URL",
    "only active memories merge",
    "would be readable as part of a non-secret memory",
    "merge into an active memory",
    "cannot be one of the memories merged into it",
    "needs when each one holds",
    "needs the content of the memory",
    "override needs winner_id",
    "name the other memory of the pair",
    "give true or false",
    "or run the job as a member of one",  # a team_summary job by a caller in no team
    "job takes only",
    "job takes no options",
)
