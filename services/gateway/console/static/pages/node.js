// The node's health (#/health) and the pictures (#/activity): memories per day per agent, search latency.

import { get, metricsText } from "../api.js";
import { latencyLine, stackedBars } from "../charts.js";
import { field, fill, h, select, table } from "../dom.js";
import { intervalAverage, searchTotals } from "../metrics.js";

async function readiness(signal) {
  // /readyz answers 503 with a body when not ready: that is an answer here, not an error.
  const response = await fetch("/readyz", { headers: { Accept: "application/json" }, signal });
  return response.json();
}

function bytes(count) {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = count;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(unit ? 1 : 0)} ${units[unit]}`;
}

function quarantineText(index) {
  // Log entries the index could not apply: it serves everything else; an admin lists, retries or purges them.
  if (!index) return "—";
  if (!index.quarantined) return "none";
  const newest = index.quarantine_newest;
  const error = newest && newest.error.length > 160 ? `${newest.error.slice(0, 160)}…` : newest?.error;
  const detail = newest ? ` · newest: seq ${newest.seq} in ${newest.namespace} (${newest.event}): ${error}` : "";
  const count = index.quarantined === 1 ? "1 log entry" : `${index.quarantined} log entries`;
  return `${count}${detail} — engram index quarantine list (admin key)`;
}

export async function health(main, ctx) {
  const [ready, status] = await Promise.all([readiness(ctx.signal), get("/v1/status", {}, { signal: ctx.signal })]);
  // "degraded": ready, with problems that stop nothing (log entries the index set aside).
  const state = ready.status === "ready" ? "ready" : ready.status === "degraded" ? "degraded" : "not ready";
  const stateClass = { ready: "active", degraded: "pending", "not ready": "failed" }[state];
  const index = status.index;
  const facts = [
    ["Ready", h("span", { dataset: { testid: "health-ready" }, class: `status status-${stateClass}` }, state)],
    ["Index lag", h("span", { dataset: { testid: "index-lag" } }, index ? `${index.lag} log entries` : "unknown (search is down)")],
    ["Applied / last sequence", index ? `${index.applied_seq} / ${index.log_last_seq}` : "—"],
    ["Set aside", h("span", { dataset: { testid: "index-quarantine" } }, quarantineText(index))],
    ["Active memories", index ? String(index.memories) : "—"],
    ["Embedding model", index?.embedding_model || "—"],
    ["Reranker", index?.reranker_model || ready.rerank_model || "off"],
    ["Sync", h("span", { dataset: { testid: "sync-status" } }, status.sync?.state || "unknown")],
    ["Disk free", status.disk ? `${bytes(status.disk.free_bytes)} (writes stop below ${bytes(status.disk.reserve_bytes)})` : "admin keys only"],
    ["Version", status.node.version],
    ["Uptime", status.node.uptime_seconds === null ? "—" : `${Math.round(status.node.uptime_seconds / 60)} min`],
  ];
  const services = Object.entries(status.services).map(([name, state]) =>
    h("tr", {}, h("th", { scope: "row" }, name), h("td", {}, h("span", { class: `status status-${state === "serving" ? "active" : "failed"}` }, state))),
  );
  const problems = status.problems.map((p) => h("li", {}, h("strong", {}, p.condition), `: ${p.detail}`));
  main.append(
    h("dl", { class: "facts" }, facts.map(([name, value]) => [h("dt", {}, name), h("dd", {}, value)])),
    h("h2", {}, "Services"),
    table("Services", ["Service", "State"], services),
    h("h2", {}, "Problems"),
    problems.length ? h("ul", { class: "problems" }, problems) : h("p", { class: "muted" }, "None."),
  );
}

// -- activity ------------------------------------------------------------------------------------------------

const METRICS_POLL_MS = 5000;
const MAX_POINTS = 60; // five minutes of polls

export async function activity(main, ctx) {
  const days = select("days", ["7", "14", "30", "90"], { value: "14" });
  const perDay = h("div", { id: "memories-per-day" });
  const latency = h("div", { id: "search-latency" });
  const latencyNote = h("p", { class: "muted small", "aria-live": "polite" });
  main.append(
    h("section", { "aria-labelledby": "per-day-title" },
      h("h2", { id: "per-day-title" }, "Memories per day, by agent"),
      h("form", { class: "filters", "aria-label": "Days shown" }, field("Days", days)),
      perDay),
    h("section", { "aria-labelledby": "latency-title" },
      h("h2", { id: "latency-title" }, "Search latency"),
      latency, latencyNote),
  );

  async function loadDays() {
    const offset = -new Date().getTimezoneOffset(); // the browser's local days
    const result = await get("/v1/activity", { days: days.value, utc_offset_minutes: offset }, { signal: ctx.signal });
    const total = result.days.reduce((sum, day) => sum + Object.values(day.by_agent).reduce((a, b) => a + b, 0), 0);
    fill(
      perDay,
      stackedBars(result.days, result.agents, { testid: "chart-memories-per-day", title: `Memories created per day, last ${days.value} days: ${total}` }),
    );
  }
  days.addEventListener("change", () => loadDays().catch((error) => ctx.showError(error)));

  const points = [];
  let previous = null;
  let timer = null;
  ctx.onLeave(() => clearTimeout(timer));

  function draw() {
    fill(latency, latencyLine(points, { testid: "chart-search-latency", title: "Average search latency per 5 s interval" }));
  }

  async function poll() {
    try {
      const totals = searchTotals(await metricsText(ctx.signal));
      if (previous) points.push({ t: new Date(), ms: intervalAverage(previous, totals) });
      if (points.length > MAX_POINTS) points.shift();
      previous = totals;
      const since = `${totals.count} searches since the node started; the average of each ${METRICS_POLL_MS / 1000} s`;
      fill(latencyNote, points.length ? `${since}.` : `${since} appears from the next poll on.`);
      draw();
    } catch (error) {
      if (error.name === "AbortError") return;
      fill(latencyNote, `Metrics unavailable: ${error.message}`);
    }
    timer = setTimeout(poll, METRICS_POLL_MS);
  }

  draw();
  poll();
  await loadDays();
}
