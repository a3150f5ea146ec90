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

PACK_RULES = (
    # expert packs: what exists in the namespace, and the path and name rules of the pack format
    "is installed in this namespace",
    "has no file",
    "leaves the pack",
    "is not a Markdown file",
    "names a hidden file",
    "is absolute",
    "has a control character or a backslash",
    "is not a pack name",
    "needs an API key with the packs",
    "was installed by",
    "is not a date",
    "no memory of pack",
    "has no active memory in category",
    "names a file Engram writes itself",
    "has a slash",
    "memory/ files are written from",
    "is not valid JSON",
    "must be a JSON object",
    "is required: the memory file's category",
    "is required: the entry's summary",
    "is required: the corrected memory",
    "characters long",
    "is required: the pack's name",
)

TIME_RULES = (
    # RFC 3339 writes years 0000-9999 with any offset; Engram stores 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z,
    # so year 0000, or an offset that crosses either end, is refused (JSON Schema's date-time cannot say so).
    "is outside the times Engram stores",
)

VALUE_RULES = (
    # Free JSON (metadata) holds any JSON value, but the index stores integers of 64 bits and finite numbers only
    # (engram.validation.check_storable): JSON Schema's "any value" cannot say so.
    "is a whole number beyond 64 bits",
)
