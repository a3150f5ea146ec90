// The memory browser (#/memories) and one memory's page (#/memory/<id>): fields, history with diffs, relations
// and the supersession chain.

import { ApiError, get } from "../api.js";
import { diffWords } from "../diff.js";
import { excerpt, field, fill, h, linkRow, select, table, timeElement } from "../dom.js";

export const PAGE_SIZE = 50; // the first paint waits for this one page, nothing else
export const MEMORY_TYPES = [
  "general", "fact", "preference", "decision", "finding", "hypothesis", "blocker", "action-item", "history",
  "handoff", "team-summary", "pack-file",
];
export const STATUSES = ["active", "archived", "expired", "superseded"];
const CHAIN_STEPS = 10; // memories followed each way along a supersession chain

/** The text that names a memory in a list: its summary, else its content's first line. */
export function title(memory) {
  return excerpt(memory.summary || memory.content, 120);
}

export function memoryLink(id, text) {
  return h("a", { href: `#/memory/${encodeURIComponent(id)}` }, text || id);
}

function memoryRow(memory) {
  const href = `#/memory/${encodeURIComponent(memory.id)}`;
  return linkRow(href, { dataset: { testid: "memory-row", id: memory.id } }, [
    h("td", {}, timeElement(memory.created_at)),
    h("td", {}, memory.owner_agent),
    h("td", {}, memory.memory_type),
    h("td", { class: "wide" }, h("a", { href }, title(memory) || "(empty)")),
    h("td", {}, (memory.tags || []).join(", ")),
    h("td", {}, h("span", { class: `status status-${memory.status}` }, statusText(memory))),
  ]);
}

/** A memory's status; a supersession by another agent than its owner names that agent (newest wins). */
export function statusText(memory) {
  const by = memory.updated_by;
  return memory.status === "superseded" && by && by !== memory.owner_agent ? `superseded by ${by}` : memory.status;
}

/** The caller's memories other agents superseded lately (the list's first page says), each linked. */
function supersededNotice(notes) {
  if (!notes || !notes.length) return "";
  return h(
    "div",
    { class: "notice", id: "superseded-by-others", role: "status" },
    h("p", {}, "Other agents superseded these memories of yours in the last 7 days (their owner may undo it):"),
    h("ul", {}, ...notes.map((note) => h("li", { dataset: { testid: "superseded-note" } },
      memoryLink(note.id, note.title), ` superseded by ${note.by} with `, memoryLink(note.superseded_by)))),
  );
}

function filtersForm(onSubmit) {
  const input = (name, props = {}) => h("input", { name, type: "text", autocomplete: "off", ...props });
  const form = h(
    "form",
    { id: "filters", class: "filters", "aria-label": "Filter memories" },
    field("Agent", input("agent", { list: "agent-names", placeholder: "any" })),
    field("Type", select("type", MEMORY_TYPES, { any: "any" })),
    field("Tag", input("tag", { placeholder: "any" })),
    field("Team", input("team", { placeholder: "any" })),
    field("Status", select("status", STATUSES, { any: "active" })),
    field("Created after", input("created_after", { placeholder: "2026-01-31", inputmode: "numeric" })),
    field("Created before", input("created_before", { placeholder: "2026-12-31", inputmode: "numeric" })),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Apply"), h("button", { type: "reset" }, "Clear")),
    h("datalist", { id: "agent-names" }),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    onSubmit();
  });
  form.addEventListener("reset", () => setTimeout(onSubmit));
  return form;
}

/** The API's query parameters for the filters form. */
function filterParams(form) {
  const value = (name) => form.elements[name].value.trim();
  return {
    owner_agent: value("agent"),
    memory_type: value("type"),
    tags: value("tag"),
    team: value("team"),
    status: value("status"),
    created_after: value("created_after"),
    created_before: value("created_before"),
  };
}

export async function browse(main, ctx) {
  const form = filtersForm(() => load([]));
  for (const [name, value] of ctx.query) {
    if (form.elements[name] instanceof HTMLElement) form.elements[name].value = value; // e.g. #/memories?agent=x
  }
  const count = h("p", { class: "muted", id: "memory-count", "aria-live": "polite" });
  const notice = h("div", { id: "superseded-notice" });
  const rows = h("div", { id: "memory-list" });
  const prev = h("button", { type: "button", id: "prev-page", disabled: true }, "Previous page");
  const next = h("button", { type: "button", id: "next-page", disabled: true }, "Next page");
  main.append(form, notice, count, rows, h("div", { class: "pager" }, prev, next));
  let tokens = []; // the page tokens of the pages before this one ("" for the first)
  let current = "";
  let nextToken = "";

  async function load(stack, token = "") {
    tokens = stack;
    current = token;
    main.setAttribute("aria-busy", "true");
    ctx.clearError();
    try {
      const params = { ...filterParams(form), limit: PAGE_SIZE, page_token: token };
      const result = await get("/v1/memories", params, { signal: ctx.signal });
      nextToken = result.next_page_token || "";
      if (!token) fill(notice, supersededNotice(result.superseded_by_others));
      const headers = ["Created", "Agent", "Type", "Memory", "Tags", "Status"];
      fill(rows, result.memories.length ? table("Memories", headers, result.memories.map(memoryRow)) : h("p", {}, "No memories match."));
      const page = tokens.length + 1;
      fill(count, `Page ${page}: ${result.memories.length} ${result.memories.length === 1 ? "memory" : "memories"}${nextToken ? ", more on the next page" : ""}.`);
      next.disabled = !nextToken;
      prev.disabled = tokens.length === 0;
    } catch (error) {
      if (error.name !== "AbortError") ctx.showError(error);
    } finally {
      main.setAttribute("aria-busy", "false");
    }
  }

  next.addEventListener("click", () => nextToken && load([...tokens, current], nextToken));
  prev.addEventListener("click", () => tokens.length && load(tokens.slice(0, -1), tokens.at(-1)));
  await load([]);
  lazyAgentNames(main, ctx);
}

/** Fills the agent box's suggestions after the first paint (never delays it). */
function lazyAgentNames(main, ctx) {
  get("/v1/agents", {}, { signal: ctx.signal })
    .then((result) => {
      const list = main.querySelector("#agent-names");
      if (list) fill(list, result.agents.map((agent) => h("option", { value: agent.agent_id })));
    })
    .catch(() => {}); // suggestions only
}

// -- one memory --------------------------------------------------------------------------------------------

function facts(memory) {
  const rows = [
    ["Id", h("code", {}, memory.id)],
    ["Owner", memory.owner_agent],
    ["Type", memory.memory_type],
    ["Status", h("span", { class: `status status-${memory.status}` }, memory.status)],
    ["Version", String(memory.version)],
    ["Created", timeElement(memory.created_at)],
    ["Updated", timeElement(memory.updated_at)],
    ["Updated by", memory.updated_by],
    ["Client", memory.source],
    ["Device", memory.origin?.device],
    ["Team", memory.team],
    ["Project", memory.project],
    ["Topics", (memory.topics || []).join(", ")],
    ["Tags", (memory.tags || []).join(", ")],
    ["Importance", memory.importance],
    ["Confidence", memory.confidence],
    ["Expires", memory.expires_at ? timeElement(memory.expires_at) : ""],
    ["Handoff", memory.handoff ? `${memory.handoff.status} → ${memory.handoff.target_agent}` : ""],
    ["Reads", String(memory.access_count || 0)],
  ].filter(([, value]) => value !== "" && value !== undefined && value !== null);
  return h("dl", { class: "facts" }, rows.map(([name, value]) => [h("dt", {}, name), h("dd", {}, value)]));
}

export function diffElement(before, after) {
  return h(
    "p",
    { class: "diff", dataset: { testid: "version-diff" } },
    diffWords(before, after).map((part) =>
      part.op === "ins" ? h("ins", {}, part.text) : part.op === "del" ? h("del", {}, part.text) : part.text,
    ),
  );
}

function timeline(versions) {
  const items = versions.map((version, i) => {
    const previous = versions[i - 1];
    const changed = previous && previous.content !== version.content;
    return h(
      "li",
      { dataset: { testid: "history-version", version: String(version.version) } },
      h(
        "div",
        { class: "version-head" },
        h("strong", {}, `v${version.version}`),
        " ",
        h("span", { class: "event" }, version.event || ""),
        " by ",
        h("span", { class: "who" }, version.agent_id || "unknown"),
        " via ",
        h("span", { class: "client" }, version.source || "unknown"),
        ", ",
        timeElement(version.updated_at),
        version.status ? h("span", { class: `status status-${version.status}` }, version.status) : "",
        version.conflict ? h("span", { class: "status status-conflict" }, "conflict") : "",
      ),
      previous
        ? changed
          ? diffElement(previous.content, version.content)
          : h("p", { class: "diff muted", dataset: { testid: "version-diff" } }, "Content unchanged.")
        : h("p", { class: "content" }, version.content),
    );
  });
  return h("ol", { class: "timeline", "aria-label": "History, oldest first" }, items);
}

function relations(memory) {
  if (!memory.relations?.length) return h("p", { class: "muted" }, "No relations.");
  return h(
    "ul",
    { class: "relations" },
    memory.relations.map((relation) =>
      h(
        "li",
        { dataset: { testid: "relation", kind: relation.kind } },
        h("span", { class: "kind" }, relation.kind),
        " ",
        memoryLink(relation.memory_id),
        relation.note ? ` — ${relation.note}` : "",
      ),
    ),
  );
}

async function fetchMemory(id, signal) {
  try {
    return await get(`/v1/memories/${encodeURIComponent(id)}`, {}, { signal });
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null; // purged, or out of reach: the chain ends
    throw error;
  }
}

/** The memories this one replaced (oldest first), itself, and the ones that replaced it. */
async function chainOf(memory, signal) {
  const before = [];
  let cursor = memory;
  for (let i = 0; i < CHAIN_STEPS; i++) {
    const older = cursor.relations?.find((r) => r.kind === "supersedes");
    if (!older || before.some((m) => m.id === older.memory_id)) break;
    cursor = await fetchMemory(older.memory_id, signal);
    if (!cursor) break;
    before.unshift(cursor);
  }
  const after = [];
  cursor = memory;
  for (let i = 0; i < CHAIN_STEPS && cursor.superseded_by; i++) {
    if (after.some((m) => m.id === cursor.superseded_by)) break;
    cursor = await fetchMemory(cursor.superseded_by, signal);
    if (!cursor) break;
    after.push(cursor);
  }
  return [...before, memory, ...after];
}

function chainElement(chain, current) {
  if (chain.length < 2) return h("p", { class: "muted" }, "It neither replaces nor was replaced by another memory.");
  return h(
    "ol",
    { class: "chain", "aria-label": "Supersession chain, oldest first" },
    chain.map((memory) =>
      h(
        "li",
        { dataset: { testid: "chain-link", id: memory.id }, "aria-current": memory.id === current ? "page" : undefined },
        memoryLink(memory.id, title(memory) || memory.id),
        " ",
        h("span", { class: `status status-${memory.status}` }, memory.status),
      ),
    ),
  );
}

export async function memoryPage(main, ctx) {
  const id = ctx.params[0] || "";
  const [memory, history] = await Promise.all([
    get(`/v1/memories/${encodeURIComponent(id)}`, {}, { signal: ctx.signal }),
    get(`/v1/memories/${encodeURIComponent(id)}/history`, {}, { signal: ctx.signal }),
  ]);
  main.querySelector("h1").textContent = title(memory) || "Memory";
  const chainBox = h("div", { id: "chain" }, h("p", { class: "muted" }, "Following the chain…"));
  main.append(
    h("section", { "aria-labelledby": "content-title" }, h("h2", { id: "content-title" }, "Content"),
      h("p", { class: "content", id: "memory-content" }, memory.content), facts(memory)),
    h("section", { "aria-labelledby": "history-title" }, h("h2", { id: "history-title" }, `History (${history.versions.length} versions)`),
      timeline(history.versions)),
    h("section", { "aria-labelledby": "relations-title" }, h("h2", { id: "relations-title" }, "Relations"), relations(memory)),
    h("section", { "aria-labelledby": "chain-title" }, h("h2", { id: "chain-title" }, "Supersession chain"), chainBox),
  );
  fill(chainBox, chainElement(await chainOf(memory, ctx.signal), memory.id));
}
