// Server-Sent Events read with fetch and a ReadableStream, so the API key travels in a header (EventSource cannot
// set one). Reconnects by itself with Last-Event-ID, so no event is missed across a dropped connection.

import { headers, problemOf, url } from "./api.js";

const RETRY_MS = [1000, 2000, 5000, 10000];

/** Parses the stream's text into events ({event, data, id}); comment lines (heartbeats) are skipped. */
export class EventParser {
  constructor() {
    this.pending = "";
    this.fields = {};
  }

  feed(text) {
    this.pending += text;
    const lines = this.pending.split("\n");
    this.pending = lines.pop();
    const events = [];
    for (const raw of lines) {
      const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
      if (line === "") {
        if (Object.keys(this.fields).length) events.push(this.dispatch());
      } else if (!line.startsWith(":")) {
        const colon = line.indexOf(":");
        const name = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        (this.fields[name] ||= []).push(value);
      }
    }
    return events;
  }

  dispatch() {
    const fields = this.fields;
    this.fields = {};
    return {
      event: (fields.event || ["message"]).at(-1),
      data: (fields.data || []).join("\n"),
      id: fields.id ? fields.id.at(-1) : null,
    };
  }
}

/**
 * Follows /events/stream with the given query parameters until stop() is called.
 * onEvent(event, body, id) gets each event; onStatus(state, detail) gets "connecting", "connected",
 * "reconnecting" (with the reason) and "stopped" (with the reason when the server refused).
 */
export function follow(params, { onEvent, onStatus }) {
  const controller = new AbortController();
  let lastId = null;
  let attempt = 0;
  let stopped = false;

  async function connect() {
    onStatus(attempt ? "reconnecting" : "connecting");
    const extra = { Accept: "text/event-stream" };
    if (lastId !== null) extra["Last-Event-ID"] = lastId;
    const response = await fetch(url("/events/stream", params), { headers: headers(extra), signal: controller.signal });
    if (!response.ok) {
      const error = await problemOf(response);
      if (response.status >= 400 && response.status < 500) {
        stopped = true; // a refusal (bad filter, no key): retrying would be refused again
        if (error.status === 401) window.dispatchEvent(new CustomEvent("engram:unauthenticated", { detail: error }));
      }
      throw error;
    }
    attempt = 0;
    onStatus("connected");
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    const parser = new EventParser();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      for (const event of parser.feed(value)) {
        if (event.event === "gap") {
          lastId = String(JSON.parse(event.data).resume_from); // reconnect to get the dropped events back
          controller.signal.throwIfAborted();
          await reader.cancel();
          return;
        }
        if (event.id !== null) lastId = event.id;
        let body = {};
        try {
          body = JSON.parse(event.data);
        } catch {
          body = { data: event.data };
        }
        onEvent(event.event, body, event.id);
      }
    }
  }

  (async () => {
    while (!stopped && !controller.signal.aborted) {
      let reason = "the stream ended";
      try {
        await connect();
      } catch (error) {
        if (controller.signal.aborted) break;
        reason = error.message || String(error);
        if (stopped) {
          onStatus("stopped", reason);
          return;
        }
      }
      if (controller.signal.aborted) break;
      const wait = RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)];
      attempt++;
      onStatus("reconnecting", `${reason}; reconnecting in ${wait / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
    onStatus("stopped");
  })();

  return {
    stop() {
      stopped = true;
      controller.abort();
    },
  };
}
