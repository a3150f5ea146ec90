// Agents and teams (#/agents) and handoffs by status (#/handoffs).

import { MAX_LIMIT, get } from "../api.js";
import { field, fill, h, linkRow, select, table, timeElement } from "../dom.js";
import { title } from "./memories.js";

export async function agents(main, ctx) {
  const [agentList, teamList] = await Promise.all([
    get("/v1/agents", {}, { signal: ctx.signal }),
    get("/v1/teams", {}, { signal: ctx.signal }),
  ]);
  const agentRows = agentList.agents.map((agent) =>
    linkRow(`#/memories?agent=${encodeURIComponent(agent.agent_id)}`, { dataset: { testid: "agent-row", agent: agent.agent_id } }, [
      h("th", { scope: "row" }, agent.agent_id),
      h("td", { class: "num", dataset: { count: "memories" } }, String(agent.memories)),
      h("td", { class: "num" }, String(agent.writes)),
      h("td", {}, (agent.teams || []).join(", ")),
      h("td", {}, (agent.devices || []).join(", ")),
      h("td", {}, (agent.clients || []).join(", ")),
      h("td", {}, timeElement(agent.last_seen)),
    ]),
  );
  const teamRows = teamList.teams.map((team) =>
    h("tr", { dataset: { testid: "team-row", team: team.team } }, [
      h("th", { scope: "row" }, team.team),
      h("td", { class: "num", dataset: { count: "memories" } }, String(team.memories)),
      h("td", {}, (team.agents || []).join(", ")),
      h("td", {}, team.summary_id ? h("a", { href: `#/memory/${encodeURIComponent(team.summary_id)}` }, "summary") : "—"),
      h("td", {}, timeElement(team.last_activity)),
    ]),
  );
  main.append(
    h("section", { "aria-labelledby": "agents-title" }, h("h2", { id: "agents-title" }, `Agents (${agentRows.length})`),
      agentRows.length
        ? table("Agents", ["Agent", "Memories", "Writes", "Teams", "Devices", "Clients", "Last seen"], agentRows)
        : h("p", { class: "muted" }, "No agent has written yet.")),
    h("section", { "aria-labelledby": "teams-title" }, h("h2", { id: "teams-title" }, `Teams (${teamRows.length})`),
      teamRows.length
        ? table("Teams", ["Team", "Memories", "Agents", "Summary", "Last activity"], teamRows)
        : h("p", { class: "muted" }, "No team has memories yet.")),
  );
}

const HANDOFF_STATUSES = ["pending", "accepted", "completed", "expired", "all"];

function handoffRow(memory) {
  const href = `#/memory/${encodeURIComponent(memory.id)}`;
  const handoff = memory.handoff || {};
  return linkRow(href, { dataset: { testid: "handoff-row", id: memory.id, status: handoff.status || "" } }, [
    h("td", {}, timeElement(memory.created_at)),
    h("td", {}, memory.owner_agent),
    h("td", {}, handoff.target_agent || ""),
    h("td", {}, h("span", { class: `status status-${handoff.status}` }, handoff.status || "")),
    h("td", { class: "wide" }, h("a", { href }, title(memory) || memory.id)),
    h("td", {}, timeElement(handoff.expires_at)),
  ]);
}

export async function handoffs(main, ctx) {
  const status = select("status", HANDOFF_STATUSES, { id: "handoff-status", value: "pending" });
  const list = h("div", { id: "handoff-list" });
  main.append(h("form", { class: "filters", "aria-label": "Handoff status" }, field("Status", status)), list);

  async function load() {
    main.setAttribute("aria-busy", "true");
    ctx.clearError();
    try {
      const result = await get("/v1/handoffs", { status: status.value, role: "all", limit: MAX_LIMIT }, { signal: ctx.signal });
      fill(
        list,
        result.memories.length
          ? table("Handoffs", ["Created", "From", "To", "Status", "Handoff", "Expires"], result.memories.map(handoffRow))
          : h("p", { class: "muted" }, `No ${status.value === "all" ? "" : `${status.value} `}handoffs.`),
      );
    } catch (error) {
      if (error.name !== "AbortError") ctx.showError(error);
    } finally {
      main.setAttribute("aria-busy", "false");
    }
  }

  status.addEventListener("change", load);
  await load();
}
