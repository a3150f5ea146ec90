// A word-level diff (longest common subsequence) between two versions of a memory's text.

const MAX_CELLS = 4_000_000; // beyond this the LCS table is too big for a browser: the texts are shown whole

/** Words and the whitespace between them, so the joined parts give the text back exactly. */
export function tokens(text) {
  return String(text || "").match(/\s+|[^\s]+/g) || [];
}

/**
 * [{op: "same"|"ins"|"del", text}] turning `before` into `after`, adjacent parts of one kind joined.
 */
export function diffWords(before, after) {
  const a = tokens(before);
  const b = tokens(after);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const middle = lcsParts(a.slice(start, endA), b.slice(start, endB));
  const parts = [
    { op: "same", text: a.slice(0, start).join("") },
    ...middle,
    { op: "same", text: a.slice(endA).join("") },
  ];
  return joined(parts.filter((part) => part.text !== ""));
}

function lcsParts(a, b) {
  if ((a.length + 1) * (b.length + 1) > MAX_CELLS) {
    return [
      { op: "del", text: a.join("") },
      { op: "ins", text: b.join("") },
    ];
  }
  const width = b.length + 1;
  const table = new Uint32Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      table[i * width + j] =
        a[i] === b[j] ? table[(i + 1) * width + j + 1] + 1 : Math.max(table[(i + 1) * width + j], table[i * width + j + 1]);
    }
  }
  const parts = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      parts.push({ op: "same", text: a[i++] });
      j++;
    } else if (table[(i + 1) * width + j] >= table[i * width + j + 1]) {
      parts.push({ op: "del", text: a[i++] });
    } else {
      parts.push({ op: "ins", text: b[j++] });
    }
  }
  while (i < a.length) parts.push({ op: "del", text: a[i++] });
  while (j < b.length) parts.push({ op: "ins", text: b[j++] });
  return parts;
}

function joined(parts) {
  const out = [];
  for (const part of parts) {
    const last = out[out.length - 1];
    if (last && last.op === part.op) last.text += part.text;
    else out.push({ ...part });
  }
  return out;
}
