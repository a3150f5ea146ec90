"""The one scrubbing step every write passes: an entry's text is scrubbed as it is appended to the log.

Write paths scrub what they are given first (so that they can say what was redacted, and embed the clean text);
this step makes sure that no path, present or future, stores a secret it forgot to scrub. Only the vectors are
left as they are: they are numbers derived from text that was scrubbed before it was embedded.
"""

from __future__ import annotations

import logging
from typing import Any

from engram.scrub import Redaction, scrub_value

log = logging.getLogger(__name__)

NOT_TEXT = frozenset({"vectors"})  # body fields that hold no text


def scrubbed_body(event: str, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with every string scrubbed (``body`` itself when nothing was found); logs what a path missed."""
    text = {key: value for key, value in body.items() if key not in NOT_TEXT}
    clean, found = scrub_value(text)
    if not found:
        return body
    log.warning("scrubbed %s from a %s entry that reached the log unscrubbed", _kinds(found), event)
    assert isinstance(clean, dict)
    return {**clean, **{key: body[key] for key in NOT_TEXT if key in body}}


def _kinds(found: list[Redaction]) -> str:
    return ", ".join(f"{r.count} {r.kind}" for r in found)
