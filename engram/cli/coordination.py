"""`engram agents|teams|consolidate|contradictions|handoffs|context|pin|unpin`: who works in the shared memory, what
they hand over, how it is kept tidy and what a session should see first, from a shell, through the node's REST API,
for people (text) and scripts (--json)."""

from __future__ import annotations

import argparse
import json
from typing import Any
from urllib.parse import quote

from engram.cli.common import Call, UsageError, call_node, node_options, preview, sub
from engram.model import HANDOFF_STATUSES, IMPORTANCES
from engram.plural import counted

HANDOFF_ROLES = ("to_me", "from_me", "all")
# JOB_KINDS and the keys of RESOLUTION_NEEDS are engram.grpc.clients' JOB_KINDS and RESOLUTIONS (a test keeps them
# equal): importing the gRPC clients here would slow down every `engram` command, which all build this parser.
JOB_KINDS = ("expire", "dedupe", "contradictions", "team_summary", "decay", "enrich_backfill", "all")
# Each resolution, with what it needs besides the pair (the only options it takes).
RESOLUTION_NEEDS = {"keep_both": ("context", "other_context"), "keep_newer": (), "merge": ("content",),
                    "override": ("winner_id",), "supersede": ()}  # fmt: skip
RESOLUTION_FLAGS = {"context": "--context", "other_context": "--other-context", "content": "--content",
                    "winner_id": "--winner"}  # fmt: skip
DEFAULT_LIMIT = 20
MAX_LIMIT = 100
DEFAULT_TOKEN_BUDGET = 800  # as the server's session_context
_VERSION_HELP = "only if it is still at version N (else nothing changes and the current version is named)"


def register(subparsers: Any) -> None:
    """Registers the coordination commands on the ``engram`` sub-command parsers, in the order of `engram --help`."""
    for add in (add_agents, add_teams, add_consolidate, add_contradictions, add_handoffs, add_context, add_pins):
        add(subparsers)


def add_agents(subparsers: Any) -> None:
    """`engram agents`."""
    agents = node_options(
        sub(subparsers, "agents", "the agents of your namespace: when seen, memories, devices, clients, teams")
    )
    agents.set_defaults(func=call_node, build=_agents)


def add_teams(subparsers: Any) -> None:
    """`engram teams [--search QUERY]`."""
    teams = node_options(
        sub(subparsers, "teams", "the teams of your namespace, with their memory counts and summaries")
    )
    teams.add_argument("--search", metavar="QUERY", help="also search the team summaries for this")
    teams.set_defaults(func=call_node, build=_teams)


def add_consolidate(subparsers: Any) -> None:
    """`engram consolidate KIND | --team NAME | --job ID`."""
    consolidate = node_options(sub(subparsers, "consolidate", "run a maintenance job, or summarise a team's memories"))
    what = consolidate.add_mutually_exclusive_group(required=True)
    what.add_argument("kind", nargs="?", choices=JOB_KINDS, metavar="KIND",
                      help=f"the job to run on your namespace: {', '.join(JOB_KINDS)}")  # fmt: skip
    what.add_argument("--team", metavar="NAME", help="summarise this team's memories (the team_summary job)")
    what.add_argument("--job", metavar="ID", help="show how a job started earlier goes, instead of running one")
    consolidate.add_argument("--option", action="append", dest="options", type=_option, metavar="KEY=VALUE",
                             help="an option of the job (repeatable), e.g. topics=api,auth")  # fmt: skip
    consolidate.epilog = (
        "Jobs: expire (memories past expires_at), dedupe (merge near-duplicates; --option force=true with an admin "
        "key merges other agents' too), contradictions (flag memories that disagree; --option topics=a,b, "
        "--option judge=off), team_summary (with --team: a summary superseding the team's previous one), decay "
        "(idle memories to the cold tier), enrich_backfill (search questions; needs an LLM), all (every one). "
        "The command waits for the job to end and prints its summary and progress. Needs the write scope."
    )
    consolidate.set_defaults(func=call_node, build=_consolidate)


def add_contradictions(subparsers: Any) -> None:
    """`engram contradictions [list | resolve]`."""
    contradictions = sub(subparsers, "contradictions", "memories that disagree or update one another: list the open "
                         "ones, or resolve one")  # fmt: skip
    # `engram contradictions` alone lists
    contradictions.set_defaults(func=call_node, build=_contradictions, topics=None, limit=DEFAULT_LIMIT)
    node_options(contradictions)
    contradiction_actions = contradictions.add_subparsers(dest="contradictions_command")
    open_ones = node_options(sub(contradiction_actions, "list", "the open contradictions, most likely first (default)"))
    open_ones.add_argument("--topic", action="append", dest="topics", metavar="TOPIC",
                           help="only contradictions about this topic (repeatable)")  # fmt: skip
    open_ones.add_argument("--limit", type=int, default=DEFAULT_LIMIT, metavar="N", help="at most N pairs (1-100)")
    resolve = node_options(sub(contradiction_actions, "resolve", "decide what holds for a flagged pair (admin key)"))
    resolve.add_argument("id", help="one memory of the pair")
    resolve.add_argument("other_id", help="the other memory of the pair")
    resolution = resolve.add_mutually_exclusive_group(required=True)
    resolution.add_argument("--keep-both", dest="resolution", action="store_const", const="keep_both",
                            help="both hold, each in its context (--context and --other-context)")  # fmt: skip
    resolution.add_argument("--keep-newer", dest="resolution", action="store_const", const="keep_newer",
                            help="the newer holds; the older is archived")  # fmt: skip
    resolution.add_argument("--merge", dest="resolution", action="store_const", const="merge",
                            help="a new memory (--content) replaces both")  # fmt: skip
    resolution.add_argument("--override", dest="resolution", action="store_const", const="override",
                            help="the memory --winner supersedes the other")  # fmt: skip
    resolution.add_argument("--supersede", dest="resolution", action="store_const", const="supersede",
                            help="accept a proposed update: the newer supersedes the older")  # fmt: skip
    resolve.add_argument("--context", help="--keep-both: when the first memory (ID) holds")
    resolve.add_argument("--other-context", help="--keep-both: when the other memory (OTHER_ID) holds")
    resolve.add_argument("--content", help="--merge: the content of the memory that reconciles both")
    resolve.add_argument("--winner", dest="winner_id", metavar="ID", help="--override: the memory that stays")
    resolve.set_defaults(build=_resolve)
    resolve.epilog = (
        "Only the user resolves contradictions: set ENGRAM_API_KEY to a key with the admin scope "
        "(engram keys create --namespace N --agent A --scopes read,write,admin)."
    )


def add_handoffs(subparsers: Any) -> None:
    """`engram handoffs [list | create | accept | complete]`."""
    handoffs = sub(subparsers, "handoffs", "work handed over between agents: list (default), create, accept, complete")
    # `engram handoffs` alone lists
    handoffs.set_defaults(func=call_node, build=_handoffs, status="pending", role="to_me", limit=DEFAULT_LIMIT)
    node_options(handoffs)
    actions = handoffs.add_subparsers(dest="handoffs_command")
    listing = node_options(sub(actions, "list", "handoffs to you (default), from you or all; pending by default"))
    listing.add_argument("--status", choices=(*HANDOFF_STATUSES, "all"), default="pending")
    listing.add_argument("--role", choices=HANDOFF_ROLES, default="to_me", help="to_me, from_me or all")
    listing.add_argument("--limit", type=int, default=DEFAULT_LIMIT, metavar="N", help="at most N handoffs (1-100)")

    create = node_options(sub(actions, "create", "hand unfinished work over to another agent"))
    create.add_argument("target", help="the agent that takes the work over, e.g. gemini-cli")
    create.add_argument("--context", required=True, help="where the work stands; its first line is the summary")
    create.add_argument("--file", action="append", dest="active_files", metavar="PATH", help="a file being worked on")
    create.add_argument("--decision", action="append", dest="decisions_made", metavar="TEXT", help="a decision made")
    create.add_argument("--next", action="append", dest="next_steps", metavar="STEP", help="a next step (in order)")
    create.add_argument("--tag", action="append", dest="tags", metavar="TAG", help="a tag (repeat for several)")
    create.add_argument("--team")
    create.add_argument("--project")
    create.add_argument("--importance", choices=IMPORTANCES)
    create.epilog = "--file, --decision and --next may be repeated."
    create.set_defaults(build=_create_handoff)

    for verb, text in (("accept", "take over a handoff addressed to you"), ("complete", "finish a handoff")):
        move = node_options(sub(actions, verb, text))
        move.add_argument("id")
        move.add_argument("--note", help="what you say about it (e.g. the outcome)")
        move.add_argument("--expected-version", type=int, metavar="N", help=_VERSION_HELP)
        move.set_defaults(build=_move_handoff)


def add_context(subparsers: Any) -> None:
    """`engram context`."""
    context = node_options(sub(subparsers, "context", "the memories a session should see first, as Markdown"))
    context.add_argument("--project", help="only memories of this project")
    context.add_argument("--query", help="what the session is about: relevant memories rank higher")
    context.add_argument("--budget", type=int, default=DEFAULT_TOKEN_BUDGET, metavar="TOKENS",
                         help=f"at most this many tokens (default {DEFAULT_TOKEN_BUDGET})")  # fmt: skip
    context.epilog = "Pinned memories come first (engram pin ID), then the most useful in full, then titles."
    context.set_defaults(func=call_node, build=_context)


def add_pins(subparsers: Any) -> None:
    """`engram pin ID` and `engram unpin ID`."""
    for verb, text in (("pin", "pin one of your memories: session context shows it first"),
                       ("unpin", "unpin one of your memories")):  # fmt: skip
        pin = node_options(sub(subparsers, verb, text))
        pin.add_argument("id")
        pin.set_defaults(func=call_node, build=_pin)


# --- the request of each command ----------------------------------------------------------------------------


def _agents(args: argparse.Namespace) -> Call:
    return Call("GET", "/v1/agents", render_agents)


def _teams(args: argparse.Namespace) -> Call:
    return Call("GET", "/v1/teams", render_teams, params={"search": args.search} if args.search else None)


def _consolidate(args: argparse.Namespace) -> Call:
    """A job (KIND), a team summary (--team) or a job started earlier (--job): the parser lets exactly one through."""
    if args.options and args.kind is None:
        raise UsageError("--option goes with a job KIND, e.g. engram consolidate contradictions --option topics=api.")
    if args.job is not None:
        return Call("GET", f"/v1/consolidation/jobs/{quote(args.job, safe='')}", render_job)
    if args.team is not None:
        return Call("POST", f"/v1/teams/{quote(args.team, safe='')}/consolidate", render_consolidation)
    return Call(
        "POST", "/v1/consolidation/jobs", render_job, body={"kind": args.kind, "options": dict(args.options or [])}
    )


def _option(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE, e.g. topics=api,auth")
    return key.strip(), value.strip()


def _contradictions(args: argparse.Namespace) -> Call:
    """`engram contradictions [list]`: the open ones."""
    if not 1 <= args.limit <= MAX_LIMIT:
        raise UsageError(f"--limit must be between 1 and {MAX_LIMIT}, got {args.limit}.")
    params: dict[str, Any] = {"limit": args.limit}
    if args.topics:
        params["topics"] = args.topics
    return Call("GET", "/v1/contradictions", render_contradictions, params=params)


def _resolve(args: argparse.Namespace) -> Call:
    needs = RESOLUTION_NEEDS[args.resolution]
    flag = "--" + args.resolution.replace("_", "-")
    for name, option in RESOLUTION_FLAGS.items():
        given = getattr(args, name) is not None
        if name in needs and not given:
            raise UsageError(f"{flag} needs {option}.")
        if name not in needs and given:
            raise UsageError(f"{option} does not go with {flag}; leave it out.")
    body = {"id": args.id, "other_id": args.other_id, "resolution": args.resolution}
    body.update({name: getattr(args, name) for name in needs})
    return Call("POST", "/v1/contradictions/resolve", render_resolved, body=body,
                hint_403="Set ENGRAM_API_KEY to a key with the admin scope.")  # fmt: skip


def _handoffs(args: argparse.Namespace) -> Call:
    """`engram handoffs [list]`."""
    if not 1 <= args.limit <= MAX_LIMIT:
        raise UsageError(f"--limit must be between 1 and {MAX_LIMIT}, got {args.limit}.")
    params = {"status": args.status, "role": args.role, "limit": args.limit}
    return Call("GET", "/v1/handoffs", render_handoffs, params=params)


def _create_handoff(args: argparse.Namespace) -> Call:
    names = ("active_files", "decisions_made", "next_steps", "tags", "team", "project", "importance")
    body = {"target_agent": args.target, "context": args.context}
    body.update({name: getattr(args, name) for name in names if getattr(args, name) is not None})
    return Call("POST", "/v1/handoffs", render_created, body=body)


def _move_handoff(args: argparse.Namespace) -> Call:
    """`engram handoffs accept|complete ID`."""
    body = {name: getattr(args, name) for name in ("note", "expected_version") if getattr(args, name) is not None}
    return Call("POST", f"/v1/handoffs/{quote(args.id, safe='')}/{args.handoffs_command}", render_moved, body=body)


def _context(args: argparse.Namespace) -> Call:
    params = {"project": args.project, "query": args.query, "token_budget": args.budget}
    return Call("GET", "/v1/session-context", render_context,
                params={k: v for k, v in params.items() if v is not None})  # fmt: skip


def _pin(args: argparse.Namespace) -> Call:
    """`engram pin ID` and `engram unpin ID`."""
    method = "POST" if args.command == "pin" else "DELETE"
    return Call(method, f"/v1/memories/{quote(args.id, safe='')}/pin", render_pinned)


# --- rendering --------------------------------------------------------------------------------------------


def render_agents(answer: dict[str, Any]) -> str:
    agents = answer.get("agents") or []
    if not agents:
        return "No agent has written to this namespace yet."
    lines = [f"{len(agents)} agent{'s' if len(agents) != 1 else ''}, most recently seen first"]
    for agent in agents:
        count = agent.get("memories", 0)
        lines.append(
            f"  {agent['agent_id']}  {count} memor{'y' if count == 1 else 'ies'}  last seen {agent.get('last_seen')}"
            f"  (first {agent.get('first_seen')}, {agent.get('writes', 0)} writes)"
        )
        extras = [f"{name} {', '.join(agent[name])}" for name in ("devices", "clients", "teams") if agent.get(name)]
        if extras:
            lines.append("      " + " · ".join(extras))
    return "\n".join(lines)


def render_teams(answer: dict[str, Any]) -> str:
    teams = answer.get("teams") or []
    lines = [f"{len(teams)} team{'s' if len(teams) != 1 else ''}" if teams else "No team has memories yet."]
    for team in teams:
        summary = team.get("summary_id") or "none (engram consolidate --team NAME)"
        agents, count = ", ".join(team.get("agents") or []) or "-", team.get("memories", 0)
        lines.append(
            f"  {team['team']}  {count} memor{'y' if count == 1 else 'ies'}  agents {agents}"
            f"  last activity {team.get('last_activity')}  summary {summary}"
        )
    if answer.get("summaries") is not None:
        hits = answer["summaries"]
        lines.append(f"Team summaries matching: {len(hits)}")
        for hit in hits:
            memory = hit["memory"]
            lines.append(f"  {hit['score']:.3f}  {memory['id']}  team {memory.get('team') or '-'}")
            lines.append(f"      {preview(memory.get('summary') or memory.get('content', ''))}")
    return "\n".join(lines)


def render_consolidation(answer: dict[str, Any]) -> str:
    job, summary = answer["job"], answer.get("summary")
    head = f"Team {answer['team']}: job {job['id']} {job['state']}"
    if job.get("summary"):
        head += f" ({job['summary']})"
    if not summary:
        return head + "; no summary memory was written."
    return f"{head}\nSummary memory {summary['id']} (version {summary.get('version')}):\n\n{summary.get('content', '')}"


def render_job(answer: dict[str, Any]) -> str:
    lines = [
        f"Job {answer['id']} {answer['kind']} {answer['state']}"
        + (f": {answer['summary']}" if answer.get("summary") else "")
    ]
    done, total, phase = answer.get("done", 0), answer.get("total", 0), answer.get("phase", "")
    if done or total or phase:
        progress = f"{done} of {total}" if total else f"{done} done"
        lines.append(f"  progress: {progress}" + (f" ({phase})" if phase else ""))
    result = answer.get("result") or {}
    if result:
        lines.append("  result: " + ", ".join(f"{key} {_compact(value)}" for key, value in result.items()))
    if answer.get("state") == "running":
        lines.append(f"  (see how it goes: engram consolidate --job {answer['id']})")
    return "\n".join(lines)


def render_contradictions(answer: dict[str, Any]) -> str:
    pairs = answer.get("contradictions") or []
    if not pairs:
        return "No open contradictions (run `engram consolidate contradictions` to look for some)."
    updates = sum(pair.get("kind") == "update" for pair in pairs)
    counts = [counted(len(pairs) - updates, "open contradiction"), counted(updates, "proposed update")]
    lines = [" and ".join(c for c, n in zip(counts, (len(pairs) - updates, updates), strict=True) if n)
             + ", most likely first"]  # fmt: skip
    for pair in pairs:
        newer, older = pair["memory"], pair["other"]
        kind, rule = pair.get("kind") or "contradiction", pair.get("rule") or "-"
        lines.append(f"{newer['id']}  {older['id']}  {kind}  rule {rule}  score {pair.get('score', 0.0):.2f}  "
                     f"{pair.get('why', '')}")  # fmt: skip
        for label, memory in (("newer", newer), ("older", older)):
            lines.append(f"  {label}  {memory.get('owner_agent')}  {memory.get('created_at')}")
            lines.append(f"    {preview(memory.get('content', ''))}")
    lines.append(
        "Resolve one (admin key): engram contradictions resolve ID OTHER_ID --keep-both --context WHEN "
        "--other-context WHEN | --keep-newer | --merge --content TEXT | --override --winner ID | --supersede (accept "
        "an update)"
    )
    return "\n".join(lines)


def render_resolved(answer: dict[str, Any]) -> str:
    lines = [answer.get("summary", "")]
    for memory in answer.get("memories") or []:
        lines.append(f"  {memory['id']}  {memory.get('status')}  {preview(memory.get('content', ''))}")
    return "\n".join(lines)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else str(value)


def render_handoffs(answer: dict[str, Any]) -> str:
    handoffs = answer.get("memories") or []
    if not handoffs:
        return "No handoffs."
    lines = []
    for memory in handoffs:
        handoff = memory.get("handoff") or {}
        pending = handoff.get("status") == "pending" and handoff.get("expires_at")
        due = f"  expires {handoff['expires_at']}" if pending else ""
        lines.append(
            f"{memory['id']}  {handoff.get('status', '?')}  from {memory.get('owner_agent')} to "
            f"{handoff.get('target_agent', '?')}  created {memory.get('created_at')}{due}"
        )
        lines.append(f"  {preview(memory.get('summary') or memory.get('content', ''))}")
    if answer.get("next_page_token"):
        lines.append("(more: use --json and page with the REST API's page_token, or raise --limit)")
    return "\n".join(lines)


def render_created(answer: dict[str, Any]) -> str:
    handoff = answer["memory"].get("handoff") or {}
    expires = f"; expires {handoff['expires_at']} unless accepted" if handoff.get("expires_at") else ""
    return f"Handed over to {handoff.get('target_agent', '?')}: {answer['id']} ({handoff.get('status')}{expires})."


def render_moved(answer: dict[str, Any]) -> str:
    handoff = answer["memory"].get("handoff") or {}
    return (
        f"Handoff {answer['id']} {handoff.get('status', '?')} (version {answer['version']}, log seq {answer['seq']})."
    )


def render_context(answer: dict[str, Any]) -> str:
    shown, omitted = len(answer.get("memories") or []), answer.get("omitted", 0)
    foot = (
        f"({shown} memor{'y' if shown == 1 else 'ies'} in {answer.get('tokens')} of {answer.get('token_budget')} "
        f"tokens; {omitted} more left out)"
    )
    return f"{answer.get('markdown') or 'No memories yet.'}\n\n{foot}"


def render_pinned(answer: dict[str, Any]) -> str:
    state = "pinned" if answer.get("pinned") else "not pinned"
    if not answer.get("changed"):
        return f"{answer['id']} was {state} already; nothing written."
    return f"{answer['id']} is {state} now (version {answer['version']}, log seq {answer['seq']})."
