// The console's shell: hash routing, the login form, and the page lifecycle (busy state, errors, leaving).

import { get, storeKey, storedKey } from "./api.js";
import { fill, h } from "./dom.js";
import * as coordination from "./pages/coordination.js";
import * as consolidation from "./pages/consolidation.js";
import * as live from "./pages/live.js";
import * as memories from "./pages/memories.js";
import * as node from "./pages/node.js";
import * as search from "./pages/search.js";

const ROUTES = {
  memories: { title: "Memories", render: memories.browse },
  memory: { title: "Memory", render: memories.memoryPage },
  search: { title: "Search", render: search.render },
  live: { title: "Live events", render: live.render },
  agents: { title: "Agents and teams", render: coordination.agents },
  handoffs: { title: "Handoffs", render: coordination.handoffs },
  contradictions: { title: "Contradictions", render: consolidation.contradictions },
  jobs: { title: "Consolidation jobs", render: consolidation.jobs },
  health: { title: "Node health", render: node.health },
  activity: { title: "Activity", render: node.activity },
};
const DEFAULT_ROUTE = "memories";

let leaving = []; // what the current page stops when another one opens (streams, timers, requests)
let whoamiKey = null; // the key the header's "signed in as" line was read with (asked again when it changes)
let loginMessage = "";

/** "#/memory/abc?x=1" -> {route: "memory", params: ["abc"], query: URLSearchParams("x=1")} */
function parseHash() {
  const [path, search = ""] = location.hash.replace(/^#\/?/, "").split("?");
  const [route, ...params] = path.split("/").map(decodeURIComponent);
  const query = new URLSearchParams(search);
  return ROUTES[route] ? { route, params, query } : { route: DEFAULT_ROUTE, params: [], query };
}

function leave() {
  for (const stop of leaving) {
    try {
      stop();
    } catch {
      // a page's clean-up never blocks the next page
    }
  }
  leaving = [];
}

/** Shows an error in the page's alert box ([role=alert]), with the server's message. */
export function showError(main, error) {
  let box = main.querySelector(":scope > [role=alert]");
  if (!box) {
    box = h("div", { role: "alert", class: "alert" });
    const heading = main.querySelector(":scope > h1");
    if (heading) heading.after(box);
    else main.prepend(box);
  }
  box.hidden = false;
  fill(box, error?.message || String(error));
}

export function clearError(main) {
  const box = main.querySelector(":scope > [role=alert]");
  if (box) {
    box.hidden = true;
    box.replaceChildren();
  }
}

/** The header's "signed in as": identity and namespace (/v1/status), and in dev mode where else memories are. */
async function showWhoami() {
  const key = storedKey() || "";
  if (whoamiKey === key) return;
  const line = document.getElementById("whoami");
  try {
    const caller = (await get("/v1/status")).caller;
    if (!caller) return;
    whoamiKey = key;
    const others = Object.entries(caller.other_namespaces || {});
    const parts = [
      `${caller.dev ? "Dev mode, no key: " : "Signed in as "}${caller.identity} · namespace ${caller.namespace}`,
      ...(others.length
        ? [`Also here, not shown: ${others.map(([ns, n]) => `${ns} (${n})`).join(", ")}; sign in with a key of that namespace to see them`]
        : []),
    ];
    fill(line, parts.join(". "));
    line.hidden = false;
  } catch {
    line.hidden = true; // a sign-in prompt or an error page says why
  }
}

function newMain(page, title) {
  const main = h("main", { id: "main", tabindex: "-1", dataset: { page }, "aria-busy": "true" }, h("h1", {}, title));
  fill(document.getElementById("view"), main);
  document.title = `${title} · Engram`;
  return main;
}

async function render() {
  leave();
  const { route, params, query } = parseHash();
  for (const link of document.querySelectorAll("a[data-nav]")) {
    if (link.dataset.nav === route) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  document.getElementById("logout").hidden = !storedKey();
  showWhoami();
  const page = ROUTES[route];
  const main = newMain(route, page.title);
  const controller = new AbortController();
  leaving.push(() => controller.abort());
  const context = {
    params,
    query,
    signal: controller.signal,
    onLeave: (stop) => leaving.push(stop),
    showError: (error) => showError(main, error),
    clearError: () => clearError(main),
  };
  try {
    await page.render(main, context);
  } catch (error) {
    if (error.name !== "AbortError" && error.status !== 401) showError(main, error);
  } finally {
    main.setAttribute("aria-busy", "false");
  }
}

function showLogin(message) {
  leave();
  const main = newMain("login", "Sign in");
  main.setAttribute("aria-busy", "false");
  for (const link of document.querySelectorAll("a[data-nav][aria-current]")) link.removeAttribute("aria-current");
  document.getElementById("logout").hidden = true;
  document.getElementById("whoami").hidden = true;
  whoamiKey = null;
  const input = h("input", { name: "key", type: "password", id: "key", autocomplete: "current-password", required: true });
  const form = h(
    "form",
    { id: "login", class: "card" },
    h("p", {}, "Paste an Engram API key (create one with ", h("code", {}, "engram keys create"), "). It is kept in this tab's session storage only."),
    h("label", { for: "key", class: "field" }, h("span", { class: "label" }, "API key"), input),
    h("button", { type: "submit" }, "Sign in"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    storeKey(input.value.trim());
    loginMessage = "";
    render();
  });
  main.append(form);
  if (message) showError(main, { message });
  input.focus();
}

window.addEventListener("engram:unauthenticated", (event) => {
  if (document.querySelector("main[data-page=login]")) return;
  loginMessage = event.detail?.message || "Sign in with an API key.";
  showLogin(loginMessage);
});

window.addEventListener("hashchange", () => render());

document.getElementById("logout").addEventListener("click", () => {
  storeKey("");
  showLogin("Signed out. Paste a key to sign in again.");
});

// The skip link moves focus into the page (its href would otherwise be read as a route).
document.getElementById("skip-link").addEventListener("click", (event) => {
  event.preventDefault();
  document.getElementById("main")?.focus();
});

render();
