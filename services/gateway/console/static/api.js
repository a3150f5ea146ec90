// The API client: every call sends the key kept in session storage as a Bearer token (never in a URL), and
// turns an RFC 9457 problem into an ApiError carrying the server's own message.

export const KEY_STORAGE = "engram.key";
export const MAX_LIMIT = 100; // the API's list and search limit

export class ApiError extends Error {
  constructor(status, detail, code = "") {
    super(detail);
    this.status = status;
    this.code = code;
  }
}

export function storedKey() {
  return sessionStorage.getItem(KEY_STORAGE) || "";
}

export function storeKey(key) {
  if (key) sessionStorage.setItem(KEY_STORAGE, key);
  else sessionStorage.removeItem(KEY_STORAGE);
}

/** Headers for an API call: the key, and JSON when there is a body. */
export function headers(extra = {}) {
  const out = { Accept: "application/json", ...extra };
  const key = storedKey();
  if (key) out.Authorization = `Bearer ${key}`;
  return out;
}

/** "/v1/memories" + {limit: 50, tags: ["a"]} -> "/v1/memories?limit=50&tags=a" (empty values left out). */
export function url(path, params = {}) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (item !== undefined && item !== null && item !== "") query.append(name, String(item));
    }
  }
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

/** The server's message of a failed response (its problem's detail), or the status line. */
export async function problemOf(response) {
  let detail = `${response.status} ${response.statusText}`.trim();
  let code = "";
  try {
    const body = await response.json();
    detail = body.detail || detail;
    code = body.code || "";
  } catch {
    // not JSON: the status line says it
  }
  return new ApiError(response.status, detail, code);
}

/** One JSON call; `body` (an object) is sent as JSON. Raises ApiError. */
export async function call(method, path, { params = {}, body = undefined, signal = undefined } = {}) {
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }), signal };
  if (body !== undefined) init.body = JSON.stringify(body);
  let response;
  try {
    response = await fetch(url(path, params), init);
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, "The Engram node cannot be reached. Is `engram serve` still running?", "unreachable");
  }
  if (!response.ok) {
    const error = await problemOf(response);
    if (error.status === 401) window.dispatchEvent(new CustomEvent("engram:unauthenticated", { detail: error }));
    throw error;
  }
  return response.status === 204 ? null : response.json();
}

export const get = (path, params = {}, options = {}) => call("GET", path, { ...options, params });
export const post = (path, body = {}, options = {}) => call("POST", path, { ...options, body });

/** The gateway's Prometheus text (loopback callers and admin keys). */
export async function metricsText(signal) {
  const response = await fetch("/metrics", { headers: headers({ Accept: "text/plain" }), signal });
  if (!response.ok) throw await problemOf(response);
  return response.text();
}
