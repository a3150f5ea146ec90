// Contradictions and proposed updates with their resolutions (#/contradictions) and consolidation jobs (#/jobs).

import { MAX_LIMIT, get, post } from "../api.js";
import { field, fill, h, select, table, timeElement } from "../dom.js";
import { memoryLink, title } from "./memories.js";

const RESOLUTIONS = [
  ["keep_both", "Keep both"],
  ["keep_newer", "Keep newer"],
  ["merge", "Merge"],
  ["override", "Override"],
  ["supersede", "Accept update"],
];
const ONE_CLICK = new Set(["keep_newer", "supersede"]);

function side(label, memory) {
  return h(
    "div",
    { class: "side" },
    h("h3", {}, label),
    h("p", { class: "content" }, memory.content),
    h("p", { class: "muted small" }, memory.owner_agent, " · ", timeElement(memory.created_at), " · ", memoryLink(memory.id, "open")),
  );
}

/** The inline form of a resolution that needs more than a click (merge, keep_both, override). */
function resolveForm(kind, pair, onSubmit) {
  const { memory, other } = pair;
  const parts = {
    merge: () => [
      field("Merged content", h("textarea", { name: "content", required: true, rows: "4" }, `${memory.content}\n${other.content}`)),
    ],
    keep_both: () => [
      field("When the newer holds", h("input", { name: "context", type: "text", required: true })),
      field("When the older holds", h("input", { name: "other_context", type: "text", required: true })),
    ],
    override: () => [
      field("Winner", select("winner_id", [[memory.id, `Newer: ${title(memory)}`], [other.id, `Older: ${title(other)}`]])),
    ],
  }[kind]();
  const form = h(
    "form",
    { class: "resolve-form", dataset: { testid: "resolve-form", resolution: kind } },
    parts,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Resolve"), h("button", { type: "button", class: "secondary", dataset: { cancel: "" } }, "Cancel")),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const values = Object.fromEntries(new FormData(form).entries());
    onSubmit(values);
  });
  form.querySelector("[data-cancel]").addEventListener("click", () => form.remove());
  return form;
}

function contradictionItem(pair, ctx) {
  const item = h("li", { class: "card", dataset: { testid: "contradiction", id: pair.memory.id, other: pair.other.id } });
  const formBox = h("div", {});

  async function resolve(resolution, values = {}) {
    ctx.clearError();
    item.setAttribute("aria-busy", "true");
    try {
      await post("/v1/contradictions/resolve", { id: pair.memory.id, other_id: pair.other.id, resolution, ...values }, { signal: ctx.signal });
      item.remove();
    } catch (error) {
      if (error.name !== "AbortError") ctx.showError(error);
      item.setAttribute("aria-busy", "false");
    }
  }

  const buttons = RESOLUTIONS.map(([kind, label]) => {
    const button = h("button", { type: "button", dataset: { resolve: kind } }, label);
    button.addEventListener("click", () => {
      if (ONE_CLICK.has(kind)) {
        resolve(kind);
        return;
      }
      const form = resolveForm(kind, pair, (values) => resolve(kind, values));
      fill(formBox, form);
      form.querySelector("input, textarea, select")?.focus();
    });
    return button;
  });
  const kind = pair.kind || "contradiction";
  item.dataset.kind = kind;
  // An update is settled by accepting it: its button comes first.
  if (kind === "update") buttons.unshift(buttons.pop());
  item.append(
    h(
      "p",
      { class: "muted small" },
      h("span", { class: `status status-${kind}`, dataset: { testid: "kind" } }, kind === "update" ? "Proposed update" : "Contradiction"),
      " · ",
      h("span", { dataset: { testid: "rule" } }, `rule ${pair.rule || "-"}`),
      ` · score ${pair.score.toFixed(2)}`,
      pair.why ? ` — ${pair.why}` : "",
    ),
    h("div", { class: "pair" }, side("Newer", pair.memory), side("Older", pair.other)),
    h("div", { class: "actions", role: "group", "aria-label": "Resolve" }, buttons),
    formBox,
  );
  return item;
}

export async function contradictions(main, ctx) {
  const result = await get("/v1/contradictions", { limit: 50 }, { signal: ctx.signal });
  main.append(
    h(
      "p",
      { class: "muted" },
      "Pairs of active memories that seem to disagree, and proposed updates (the newer replaces the older; accepting one supersedes the older). Each names the rule that raised it. Resolving needs an admin key.",
    ),
    result.contradictions.length
      ? h("ol", { class: "cards", id: "contradictions" }, result.contradictions.map((pair) => contradictionItem(pair, ctx)))
      : h("p", {}, "No open contradictions or proposed updates."),
  );
}

// -- jobs ----------------------------------------------------------------------------------------------------

const JOB_KINDS = ["all", "expire", "dedupe", "contradictions", "decay", "enrich_backfill", "team_summary"];
const POLL_MS = 2000;

function jobRow(job) {
  const running = job.state === "running";
  const progress = h("progress", { max: String(job.total || 1), value: String(running ? job.done : job.total || 1) });
  if (running && !job.total) progress.removeAttribute("value"); // indeterminate until the total is known
  progress.setAttribute("aria-label", `${job.kind} progress`);
  return h("tr", { dataset: { testid: "job-row", id: job.id, state: job.state } }, [
    h("td", {}, job.kind),
    h("td", {}, h("span", { class: `status status-${job.state}` }, job.state)),
    h("td", {}, progress, " ", h("span", { class: "small muted" }, job.total ? `${job.done}/${job.total}` : "", job.phase ? ` ${job.phase}` : "")),
    h("td", {}, timeElement(job.started_at)),
    h("td", {}, timeElement(job.finished_at)),
    h("td", { class: "wide" }, job.summary || ""),
  ]);
}

export async function jobs(main, ctx) {
  const kind = select("kind", JOB_KINDS, { value: "all" });
  const team = h("input", { name: "team", type: "text", placeholder: "for team_summary", autocomplete: "off" });
  const form = h(
    "form",
    { id: "run-job", class: "filters", "aria-label": "Run a job" },
    field("Kind", kind),
    field("Team", team),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Run job")),
  );
  const list = h("div", { id: "job-list" });
  main.append(form, list);
  let timer = null;
  ctx.onLeave(() => clearTimeout(timer));

  async function load() {
    clearTimeout(timer);
    const result = await get("/v1/consolidation/jobs", { limit: MAX_LIMIT }, { signal: ctx.signal });
    fill(
      list,
      result.jobs.length
        ? table("Jobs", ["Kind", "State", "Progress", "Started", "Finished", "Summary"], result.jobs.map(jobRow))
        : h("p", { class: "muted" }, "No jobs this week."),
    );
    if (result.jobs.some((job) => job.state === "running")) timer = setTimeout(() => load().catch(() => {}), POLL_MS);
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    ctx.clearError();
    const options = kind.value === "team_summary" && team.value.trim() ? { team: team.value.trim() } : {};
    const running = post("/v1/consolidation/jobs", { kind: kind.value, options }, { signal: ctx.signal });
    setTimeout(() => load().catch(() => {}), 300); // the job is listed while it runs
    try {
      await running;
    } catch (error) {
      if (error.name !== "AbortError") ctx.showError(error);
    }
    await load().catch((error) => ctx.showError(error));
  });
  await load();
}
