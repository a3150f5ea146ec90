// Small SVG charts drawn here (no library): stacked bars of memories per day per agent, and a latency line.

import { h, svg } from "./dom.js";

const PALETTE = ["#2f6db5", "#d9822b", "#3a9d5d", "#b8457a", "#7a5bc4", "#2a9ca6", "#a8872a", "#c2423a", "#5f7684"];
const WIDTH = 640;
const HEIGHT = 240;
const PAD = { left: 56, right: 10, top: 12, bottom: 34 };

export function colour(index) {
  return PALETTE[index % PALETTE.length];
}

/** A "nice" axis maximum at or above value. */
function niceMax(value) {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  return [1, 2, 2.5, 5, 10].map((step) => step * power).find((candidate) => candidate >= value);
}

function axis(max, format) {
  const innerHeight = HEIGHT - PAD.top - PAD.bottom;
  const ticks = [];
  for (let i = 0; i <= 4; i++) {
    const value = (max * i) / 4;
    const y = PAD.top + innerHeight - (innerHeight * i) / 4;
    ticks.push(svg("line", { x1: PAD.left, x2: WIDTH - PAD.right, y1: y, y2: y, class: "grid" }));
    ticks.push(svg("text", { x: PAD.left - 4, y: y + 4, "text-anchor": "end", class: "tick" }, format(value)));
  }
  return ticks;
}

/**
 * Stacked bars: days = [{date, by_agent: {agent: n}}], agents in legend order.
 * Returns a <figure> holding svg[data-testid=chart-memories-per-day] and its legend.
 */
export function stackedBars(days, agents, { testid, title }) {
  const innerWidth = WIDTH - PAD.left - PAD.right;
  const innerHeight = HEIGHT - PAD.top - PAD.bottom;
  const totals = days.map((day) => Object.values(day.by_agent).reduce((a, b) => a + b, 0));
  const max = niceMax(Math.max(0, ...totals));
  const slot = innerWidth / Math.max(1, days.length);
  const barWidth = Math.max(2, slot * 0.7);
  const bars = [];
  days.forEach((day, i) => {
    let y = PAD.top + innerHeight;
    const x = PAD.left + i * slot + (slot - barWidth) / 2;
    agents.forEach((agent, a) => {
      const count = day.by_agent[agent] || 0;
      if (!count) return;
      const height = (count / max) * innerHeight;
      y -= height;
      bars.push(
        svg(
          "rect",
          { x, y, width: barWidth, height, fill: colour(a), "data-agent": agent, "data-date": day.date },
          svg("title", {}, `${day.date} · ${agent}: ${count}`),
        ),
      );
    });
    const every = Math.ceil(days.length / 8);
    if (i % every === 0 || i === days.length - 1) {
      bars.push(
        svg("text", { x: x + barWidth / 2, y: HEIGHT - PAD.bottom + 16, "text-anchor": "middle", class: "tick" }, day.date.slice(5)),
      );
    }
  });
  const chart = svg(
    "svg",
    { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", "aria-label": title, "data-testid": testid, class: "chart" },
    svg("title", {}, title),
    axis(max, (v) => (Number.isInteger(v) ? String(v) : v.toFixed(1))),
    bars,
  );
  const legend = h(
    "ul",
    { class: "legend", "aria-label": "Agents" },
    agents.map((agent, a) =>
      h("li", { dataset: { agent } }, h("span", { class: `swatch swatch-${a % PALETTE.length}`, "aria-hidden": "true" }), agent),
    ),
  );
  return h("figure", { class: "chart-figure" }, chart, legend);
}

/** A line of points [{t: Date, ms: number|null}]; gaps where no search ran. */
export function latencyLine(points, { testid, title }) {
  const innerWidth = WIDTH - PAD.left - PAD.right;
  const innerHeight = HEIGHT - PAD.top - PAD.bottom;
  const values = points.map((p) => p.ms).filter((ms) => ms !== null);
  const max = niceMax(Math.max(1, ...values));
  const step = innerWidth / Math.max(1, points.length - 1);
  const segments = [];
  let current = [];
  const dots = [];
  points.forEach((point, i) => {
    if (point.ms === null) {
      if (current.length) segments.push(current);
      current = [];
      return;
    }
    const x = PAD.left + i * step;
    const y = PAD.top + innerHeight - (point.ms / max) * innerHeight;
    current.push(`${x.toFixed(1)},${y.toFixed(1)}`);
    dots.push(
      svg("circle", { cx: x, cy: y, r: 3, class: "dot" }, svg("title", {}, `${point.t.toLocaleTimeString()}: ${point.ms.toFixed(1)} ms`)),
    );
  });
  if (current.length) segments.push(current);
  const labels = [];
  if (points.length) {
    labels.push(svg("text", { x: PAD.left, y: HEIGHT - PAD.bottom + 16, class: "tick" }, points[0].t.toLocaleTimeString()));
    labels.push(
      svg(
        "text",
        { x: WIDTH - PAD.right, y: HEIGHT - PAD.bottom + 16, "text-anchor": "end", class: "tick" },
        points.at(-1).t.toLocaleTimeString(),
      ),
    );
  }
  return svg(
    "svg",
    { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", "aria-label": title, "data-testid": testid, class: "chart" },
    svg("title", {}, title),
    axis(max, (v) => `${v < 1 ? v.toFixed(2) : v < 10 ? v.toFixed(1) : Math.round(v)} ms`),
    segments.map((pts) => svg("polyline", { points: pts.join(" "), class: "line", fill: "none" })),
    dots,
    labels,
  );
}
