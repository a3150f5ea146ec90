// Search (#/search): hybrid search with explain, each hit showing its rank in every stage.

import { MAX_LIMIT, post } from "../api.js";
import { excerpt, field, fill, h, select, timeElement } from "../dom.js";
import { MEMORY_TYPES, memoryLink, title } from "./memories.js";

const STAGE_ORDER = ["dense", "bm25", "questions", "fused", "rerank"];

/** Stage names in pipeline order (any stage the server adds later goes last). */
export function stages(explain) {
  const names = Object.keys(explain || {});
  const rank = (name) => (STAGE_ORDER.includes(name) ? STAGE_ORDER.indexOf(name) : STAGE_ORDER.length);
  return names.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

function stageRanks(explain) {
  return h(
    "ul",
    { class: "stages", "aria-label": "Rank in each stage" },
    stages(explain).map((name) => {
      const { rank, score } = explain[name];
      const text = rank > 0 ? `${name} #${rank}` : `${name} –`;
      const tip = rank > 0 ? `score ${Number(score).toFixed(3)}` : "not found by this stage";
      return h("li", { dataset: { testid: "stage-rank", stage: name }, title: tip, class: rank > 0 ? "" : "muted" }, text);
    }),
  );
}

function hit(result, index) {
  const memory = result.memory;
  return h(
    "li",
    { class: "hit", dataset: { testid: "search-hit", id: memory.id } },
    h("div", { class: "hit-head" }, h("span", { class: "rank" }, `${index + 1}.`), " ", memoryLink(memory.id, title(memory) || memory.id)),
    h("p", { class: "muted small" }, `${memory.owner_agent} · ${memory.memory_type} · score ${result.score.toFixed(3)} · `, timeElement(memory.created_at)),
    memory.summary ? h("p", {}, excerpt(memory.content, 280)) : "",
    stageRanks(result.explain),
  );
}

export async function render(main, ctx) {
  const query = h("input", { name: "q", type: "search", required: true, maxlength: "2000", autocomplete: "off" });
  const limit = select("limit", ["10", "20", "50", "100"], { value: "20" });
  const form = h(
    "form",
    { id: "search", class: "filters", role: "search" },
    field("Query", query),
    field("Type", select("type", MEMORY_TYPES, { any: "any" })),
    field("Results", limit),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Search")),
  );
  const note = h("p", { class: "muted", "aria-live": "polite" });
  const results = h("ol", { class: "hits", id: "hits" });
  main.append(form, note, results);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    main.setAttribute("aria-busy", "true");
    ctx.clearError();
    try {
      const type = form.elements.type.value;
      const body = {
        query: query.value,
        limit: Math.min(MAX_LIMIT, Number(limit.value)),
        explain: true,
        filters: type ? { memory_type: type } : {},
      };
      const answer = await post("/v1/memories:search", body, { signal: ctx.signal });
      fill(results, answer.hits.map(hit));
      const rerank = answer.reranked ? "reranked" : answer.rerank_note || "not reranked";
      fill(note, `${answer.hits.length} hits (${rerank}).`);
    } catch (error) {
      if (error.name !== "AbortError") ctx.showError(error);
    } finally {
      main.setAttribute("aria-busy", "false");
    }
  });
  query.focus();
}
