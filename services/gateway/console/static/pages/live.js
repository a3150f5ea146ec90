// The live feed (#/live): the namespace's events as they happen, newest first, over a fetch-streamed SSE.

import { excerpt, field, fill, h, select } from "../dom.js";
import { follow } from "../sse.js";
import { memoryLink } from "./memories.js";

export const EVENTS = [
  "memory_saved", "memory_updated", "memory_deleted", "memory_superseded", "memory_expired", "consolidation_complete",
  "contradiction_detected", "handoff_created", "handoff_accepted", "handoff_completed", "handoff_expired",
  "memory_enriched", "memory_purged", "memory_accessed", "memory_merged", "memory_decayed", "memory_conflict",
];
const MAX_ROWS = 200; // older rows are dropped: the page never grows without bound

function eventRow(event, body, id) {
  const memory = body.memory || {};
  const memoryId = body.memory_id || memory.id;
  const text = memory.summary || memory.content || body.summary || "";
  return h(
    "li",
    { class: "event-row", dataset: { testid: "event-row", event, id: id || "" } },
    h("span", { class: "event" }, event),
    " ",
    h("span", { class: "who" }, body.agent || ""),
    body.source ? h("span", { class: "muted" }, ` via ${body.source}`) : "",
    " ",
    body.time ? h("time", { datetime: body.time }, new Date(body.time).toLocaleTimeString()) : "",
    h("div", { class: "event-text" }, memoryId ? memoryLink(memoryId, excerpt(text, 200) || memoryId) : excerpt(text, 200)),
  );
}

export async function render(main, ctx) {
  const status = h("span", { id: "live-status", class: "badge", role: "status" }, "connecting");
  const form = h(
    "form",
    { id: "live-filters", class: "filters", "aria-label": "Filter events" },
    field("Event", select("events", EVENTS, { any: "all events" })),
    field("Agent", h("input", { name: "agent", type: "text", autocomplete: "off", placeholder: "any" })),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Apply")),
  );
  const detail = h("span", { class: "muted", id: "live-detail" });
  const list = h("ol", { class: "events", id: "events", "aria-live": "polite", "aria-relevant": "additions" });
  main.append(h("p", {}, "Stream: ", status, " ", detail), form, list);
  let stream = null;
  let generation = 0; // a replaced stream's last words (its "stopped") must not overwrite the new one's state

  function connect() {
    stream?.stop();
    const mine = ++generation;
    fill(list);
    ctx.clearError();
    const params = { events: form.elements.events.value, agent: form.elements.agent.value.trim() };
    stream = follow(params, {
      onEvent(event, body, id) {
        if (mine !== generation) return;
        list.prepend(eventRow(event, body, id));
        while (list.children.length > MAX_ROWS) list.lastElementChild.remove();
      },
      onStatus(state, reason) {
        if (mine !== generation) return;
        status.textContent = state;
        status.dataset.state = state;
        fill(detail, reason || "");
        if (state === "stopped" && reason) ctx.showError({ message: reason });
      },
    });
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    connect();
  });
  ctx.onLeave(() => stream?.stop());
  connect();
}
