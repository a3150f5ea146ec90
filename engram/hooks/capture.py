"""The capture pipeline, run by the hook process after it answered the agent: extract, score, drop the weak and the
private, merge near-duplicates, scrub, cap, spool, then deliver what the spool holds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.config import Settings
from engram.hooks.extract import ERROR_FIX, Observation, edited_path, extract, first_sentence, snippet, words
from engram.hooks.files import private_dir
from engram.hooks.payloads import COMPACT, END, TOOL, HookEvent
from engram.hooks.privacy import git_ignored, mentions_private, opted_out, paths_in, paused, private, project_of
from engram.hooks.session import Recent, SessionState, open_session
from engram.hooks.spool import Delivery, Spool

OBSERVATION = "observation"  # the memory type of a captured observation
SESSION_SUMMARY = "session-summary"  # the memory type of a session's summary
HOOK_SOURCE = "hook"
NEAR_DUPLICATE = 0.8  # word overlap (Jaccard) from which an observation repeats one of the session's recent ones
SUMMARY_ITEMS = 5


@dataclass(frozen=True, slots=True)
class Paths:
    hooks: Path
    sessions: Path
    spool: Path
    projects: Path  # per project, the recent observations of every session (near-duplicates across sessions)

    @classmethod
    def of(cls, settings: Settings) -> Paths:
        hooks = settings.home / "hooks"
        return cls(hooks, hooks / "sessions", settings.home / "spool", hooks / "projects")


def capture(event: HookEvent, settings: Settings) -> list[dict[str, Any]]:
    """Spools the captures of one event and returns them (none when paused, opted out, or nothing passed)."""
    paths = Paths.of(settings)
    if paused(paths.hooks) or opted_out(event.cwd):
        return []
    private_dir(paths.hooks)  # 0700, also when an older version made it 0755
    _scrub_event(event)  # before anything of it is kept, even in the session's state file
    with open_session(paths.sessions, event.session_id or "unknown") as state:
        state.agent, state.events = event.agent, state.events + 1
        if not state.project:
            state.project = project_of(event.cwd)
        # A payload read only in part says nothing sure about what a tool did; a tool use about a private or
        # git-ignored file leaves nothing anywhere (no observation, summary line, session state or spool line).
        found = [] if (event.cut and event.kind == TOOL) or _about_private(event) else extract(event, state)
        kept = _kept(found, event, state, settings)
        if kept and state.project:  # then what this device captured lately in the project, in any session
            with open_session(paths.projects, state.project) as project:
                kept = [o for o in kept if not _merged(o, project, by_key=False)]
                captures = [_capture(o, event, state, settings) for o in kept]
                project.recent.extend(state.recent[len(state.recent) - len(captures) :])  # one each
        else:
            captures = [_capture(o, event, state, settings) for o in kept]
        if event.kind in (END, COMPACT) and not state.summarized and (state.captured or state.prompts):
            made = summary(event, state, settings)
            if not _summary_repeated(made, paths, state.project):
                captures.append(made)
            state.summarized = event.kind == END
    spool(settings).append(captures)
    return captures


def spool(settings: Settings) -> Spool:
    return Spool(Paths.of(settings).spool, max_bytes=settings.hook_spool_max_bytes)


def deliver(settings: Settings, *, wait: bool = False) -> Delivery:
    """Sends the spool to the node of the data dir (see engram.hooks.spool); ``wait`` (engram hooks flush) also
    retries the captures parked after the node refused the key."""
    return spool(settings).deliver(node_url(settings), api_key=settings.api_key, wait=wait, retry_parked=wait)


def node_url(settings: Settings) -> str:
    from engram.process.nodeinfo import read_node_info

    if settings.hook_url:  # a node elsewhere (engram hooks install --url, ENGRAM_HOOK_URL)
        return settings.hook_url.rstrip("/")
    info = read_node_info(settings.home)
    return info.http_url if info else f"http://{settings.host}:{settings.port}"


def _kept(found: list[Observation], event: HookEvent, state: SessionState, settings: Settings) -> list[Observation]:
    """The observations good enough to keep: above the quality threshold, about no private or git-ignored file,
    and no near-duplicate of one the session already captured (that one's count goes up instead)."""
    good = [o for o in found if o.quality >= settings.hook_min_quality]
    good = [o for o in good if not any(private(f) for f in o.files) and not mentions_private(o.command)]
    ignored = git_ignored(sorted({f for o in good for f in o.files}), event.cwd)
    good = [o for o in good if not ignored.intersection(o.files)]
    return [o for o in good if not _merged(o, state)]


def _about_private(event: HookEvent) -> bool:
    """A tool use on a private or git-ignored file, or a command naming one (`source .env && ...`, `cat
    build/secrets.log`): nothing of it is kept, not even the file's name among the files the session changed (the
    summary lists them), nor a failure of it waiting for its fix (the fix would tell its error)."""
    if event.kind != TOOL:
        return False
    path = edited_path(event)
    command = str(event.tool_input.get("command") or "")
    named = ([path] if path else []) + paths_in(command)
    if any(private(p) for p in named) or mentions_private(command):
        return True
    return bool(git_ignored(named, event.cwd))


def _merged(observation: Observation, state: SessionState, *, by_key: bool = True) -> bool:
    """Whether the observation repeats a recent one of ``state`` (the same key, e.g. the same file changed, or most
    of its words); that one's count goes up instead. Across sessions only the words count: the same file changed in
    another session is news."""
    mine = set(words(observation.content))
    for recent in state.recent:
        if recent.kind != observation.kind:
            continue
        theirs = set(recent.words)
        overlap = len(mine & theirs) / len(mine | theirs) if mine | theirs else 1.0
        if (by_key and recent.key == observation.key) or overlap >= NEAR_DUPLICATE:
            recent.count += 1
            return True
    return False


def _summary_repeated(made: dict[str, Any], paths: Paths, project: str) -> bool:
    """Whether a session's summary says nearly what a recent one of the project said (a session replayed or redone
    the same way): that one's count goes up instead of a copy crowding the answers (issue 34)."""
    if not project:
        return False
    mine = Observation(SESSION_SUMMARY, made["content"], quality=1.0, key="")
    with open_session(paths.projects, project) as state:
        if _merged(mine, state, by_key=False):
            return True
        state.recent.append(Recent(SESSION_SUMMARY, "", sorted(set(words(mine.content))), made["source_id"]))
    return False


def _capture(observation: Observation, event: HookEvent, state: SessionState, settings: Settings) -> dict[str, Any]:
    source_id = state.next_source_id()
    state.captured.append(source_id)
    state.recent.append(Recent(observation.kind, observation.key, sorted(set(words(observation.content))), source_id))
    if observation.kind in ("decision", "preference", ERROR_FIX):  # for the summary: only what was kept
        state.learned.append(observation.content)
    metadata: dict[str, Any] = {
        "source": HOOK_SOURCE, "kind": observation.kind, "agent": event.agent, "device": settings.device,
        "session_id": event.session_id, "event": event.name, "quality": round(observation.quality, 2),
    }  # fmt: skip
    if observation.tool:
        metadata["tool"] = observation.tool
    if observation.files:
        metadata["files"] = observation.files
    if observation.command:
        metadata["command"] = snippet(observation.command)
    return _scrubbed(
        {
            "content": observation.content,
            "memory_type": OBSERVATION,
            "importance": observation.importance,
            "tags": [HOOK_SOURCE, observation.kind],
            "project": state.project or None,
            "conversation_id": event.session_id or None,
            "metadata": metadata,
            "source_id": source_id,
            "agent": event.agent,
            "device": settings.device,
        },
        settings.hook_max_chars,
    )


def summary(event: HookEvent, state: SessionState, settings: Settings) -> dict[str, Any]:
    """The session's summary: what was asked, what changed, what was learned, what is left open."""
    asked = [first_sentence(p, 160) for p in state.prompts[:SUMMARY_ITEMS]]
    files = state.files[:10] + ([f"{len(state.files) - 10} more"] if len(state.files) > 10 else [])
    open_items = [f"`{snippet(f.command)}` still fails ({f.error})" for f in state.failures[-SUMMARY_ITEMS:]]
    parts = [f"Session summary ({event.agent}" + (f", project {state.project}" if state.project else "") + ")."]
    if asked:
        parts.append("Asked: " + "; ".join(asked) + ".")
    if files:
        parts.append("Changed: " + ", ".join(files) + ".")
    if state.learned:
        parts.append("Learned: " + " ".join(state.learned[-SUMMARY_ITEMS:]))
    parts.append("Open: " + ("; ".join(open_items) + "." if open_items else "nothing left failing."))
    if state.last_message:
        parts.append("Last answer: " + first_sentence(state.last_message, 300))
    source_id = state.next_source_id()
    metadata = {
        "source": HOOK_SOURCE, "kind": SESSION_SUMMARY, "agent": event.agent, "device": settings.device,
        "session_id": event.session_id, "event": event.name, "observations": list(state.captured),
        "files": state.files[:50], "open": len(state.failures),
    }  # fmt: skip
    if state.failures:
        metadata["handoff"] = handoff_proposal(state, asked)
    return _scrubbed(
        {
            "content": " ".join(parts),
            "memory_type": SESSION_SUMMARY,
            "tags": [HOOK_SOURCE, SESSION_SUMMARY] + (["open-work"] if state.failures else []),
            "project": state.project or None,
            "conversation_id": event.session_id or None,
            "metadata": metadata,
            "source_id": source_id,
            "agent": event.agent,
            "device": settings.device,
        },
        settings.hook_max_chars * 2,
    )


def handoff_proposal(state: SessionState, asked: list[str]) -> dict[str, Any]:
    """Work left open, as the fields of a handoff (create_handoff, POST /v1/handoffs) without its target: the hook
    cannot know who takes it over, so it proposes and the next agent or the user hands it over."""
    return {
        "context": "Left open by a " + (state.agent or "coding agent") + " session"
        + (f" on: {'; '.join(asked[:2])}" if asked else "") + ".",
        "active_files": state.files[:10],
        "next_steps": [f"Make `{snippet(f.command)}` pass: {f.error}" for f in state.failures[-SUMMARY_ITEMS:]],
    }  # fmt: skip


def _scrub_event(event: HookEvent) -> None:
    """The event's texts with secrets replaced by markers."""
    from engram.scrub import scrub_text, scrub_value

    event.prompt = scrub_text(event.prompt).text if event.prompt else ""
    event.error = scrub_text(event.error).text if event.error else ""
    event.last_message = scrub_text(event.last_message).text if event.last_message else ""
    tool_input, _ = scrub_value(event.tool_input)
    event.tool_input = tool_input if isinstance(tool_input, dict) else {}
    event.tool_response, _ = scrub_value(event.tool_response)


def _scrubbed(capture: dict[str, Any], max_chars: int) -> dict[str, Any]:
    """Secrets replaced by markers in the content and metadata (before the capture leaves this process), then the
    content cut to ``max_chars``."""
    from engram.scrub import scrub_text, scrub_value

    content = scrub_text(capture["content"]).text
    if len(content) > max_chars:
        content = content[: max_chars - 1] + "…"
    capture["content"] = content
    capture["metadata"], _ = scrub_value(capture["metadata"])
    return capture
