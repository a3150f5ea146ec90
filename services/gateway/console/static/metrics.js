// Reads the gateway's Prometheus text: the sum and count of the search latency histogram, to plot the average
// search latency of each poll interval.

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** [{name, labels, value}] of every sample line. */
export function parseMetrics(text) {
  const samples = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const match = SAMPLE.exec(line);
    if (!match) continue;
    const labels = {};
    for (const [, name, value] of (match[2] || "").matchAll(LABEL)) labels[name] = value.replace(/\\(.)/g, "$1");
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

// Where searches are timed: the search service's RPC (in the embedded node it shares the gateway's process),
// else the gateway's own REST route and MCP tool.
const SEARCH_SERIES = [
  { base: "engram_grpc_request_duration_seconds", labels: { service: "engram.v1.Search", method: "SearchMemories" } },
  { base: "engram_http_request_duration_seconds", labels: { route: "/v1/memories:search" } },
  { base: "engram_mcp_tool_duration_seconds", labels: { tool: "search_memory" } },
];

/** {sum, count, source} of search latency so far (seconds, calls), from the first series the text has. */
export function searchTotals(text) {
  const samples = parseMetrics(text);
  for (const series of SEARCH_SERIES) {
    const matching = (suffix) =>
      samples.filter(
        (s) =>
          s.name === series.base + suffix &&
          Object.entries(series.labels).every(([name, value]) => s.labels[name] === value),
      );
    const counts = matching("_count");
    if (counts.length) {
      const sum = matching("_sum").reduce((total, s) => total + s.value, 0);
      const count = counts.reduce((total, s) => total + s.value, 0);
      return { sum, count, source: series.base };
    }
  }
  return { sum: 0, count: 0, source: "" };
}

/** The average latency (ms) of the searches between two totals, or null when none ran. */
export function intervalAverage(previous, current) {
  const calls = current.count - previous.count;
  if (calls <= 0) return null;
  return ((current.sum - previous.sum) / calls) * 1000;
}
