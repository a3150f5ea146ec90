// Small DOM helpers: elements are built with properties and children, never from HTML strings (so no
// server text is ever parsed as markup, and the CSP needs no inline anything).

/** h("a", {href: "#/x", class: "c", dataset: {testid: "row"}}, "text", child) -> element */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") element.className = value;
    else if (name === "dataset") Object.assign(element.dataset, value);
    else if (name.startsWith("on") && typeof value === "function") element.addEventListener(name.slice(2), value);
    else if (name in element && typeof value !== "string") element[name] = value;
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

/** An SVG element with attributes. */
export function svg(tag, attrs = {}, ...children) {
  const element = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value !== undefined && value !== null) element.setAttribute(name, String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
}

/** Replaces every child of element. */
export function fill(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

/** "2026-11-24T03:07:31.475Z" -> local "2026-11-24 04:07" (the full time in the title). */
export function when(text) {
  if (!text) return "";
  const date = new Date(text);
  if (Number.isNaN(date.getTime())) return String(text);
  const pad = (n) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/** A <time> element for an RFC 3339 text. */
export function timeElement(text) {
  return text ? h("time", { datetime: text, title: text }, when(text)) : h("span", { class: "muted" }, "—");
}

/** The first line of a text, cut to max characters. */
export function excerpt(text, max = 140) {
  const line = String(text || "").trim().replace(/\s+/g, " ");
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** A table inside its own scrolling box (the page itself never scrolls sideways at 360 px). */
export function table(caption, headers, rows) {
  for (const row of rows) {
    // On a narrow screen each row becomes a card; every cell names its column there.
    [...row.children].forEach((cell, i) => { if (headers[i]) cell.dataset.label = headers[i]; });
  }
  return h(
    "div",
    { class: "table-box", tabindex: "0", role: "region", "aria-label": caption },
    h(
      "table",
      {},
      h("caption", { class: "visually-hidden" }, caption),
      h("thead", {}, h("tr", {}, headers.map((name) => h("th", { scope: "col" }, name)))),
      h("tbody", {}, rows),
    ),
  );
}

/** A row that opens href with Enter or a click, like a link (the link inside stays the Tab stop). */
export function linkRow(href, props, cells) {
  const row = h("tr", { ...props, class: "link-row" }, cells);
  row.addEventListener("click", (event) => {
    if (!(event.target instanceof HTMLAnchorElement)) location.hash = href;
  });
  row.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && event.target === row) location.hash = href;
  });
  row.tabIndex = 0;
  return row;
}

/** A labelled form control: <label>Text <control></label>. */
export function field(label, control) {
  return h("label", { class: "field" }, h("span", { class: "label" }, label), control);
}

/** A <select> of values (the first option may be an "any" choice with the empty value). */
export function select(name, values, { any = null, value = "", id = undefined } = {}) {
  const options = any === null ? [] : [h("option", { value: "" }, any)];
  for (const item of values) {
    const [optionValue, text] = Array.isArray(item) ? item : [item, item];
    options.push(h("option", { value: optionValue, selected: optionValue === value }, text));
  }
  return h("select", { name, id }, options);
}
