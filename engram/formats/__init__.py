"""File formats Engram reads and writes: YAML frontmatter, the Markdown vault, and the JSON-lines import file."""
