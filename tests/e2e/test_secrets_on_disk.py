"""No secret reaches disk: every fake secret of the corpus is saved through a real `engram serve` (in content,
summary, context, tags, topics, project, team, conversation_id and metadata), and afterwards no byte sequence of
any secret, nor any distinctive 12-character slice of one, is in any file under the node's home (JetStream
store, index, keys, logs). Innocent technical texts come back from get exactly as they were saved."""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path

import httpx
import pytest

from engram.scrub import scrub_text
from tests.conftest import start_node
from tests.helpers.rest import list_all_ids
from tests.helpers.secret_corpus import SecretCase, distinctive_slices, load_innocent, load_secrets

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

MAX_LABEL = 64  # engram/validation.py: tags and topics
MAX_FIELD = 256  # team, project, conversation_id
WIDTH = 12  # a slice this long of a random secret is specific to it


def _payload(case: SecretCase, canary: str) -> dict[str, object]:
    text = case.text
    # Labels are short: they get the whole line when it fits, and each secret that identifies itself without
    # the words around it (a prefixed token; not "hunter2" or a URL's password).
    labels = [text] if len(text) <= MAX_LABEL and "\n" not in text else []
    labels += [s for s in case.secrets if len(s) <= MAX_LABEL and "\n" not in s and scrub_text(s).count]
    field = text if len(text) <= MAX_FIELD else "corpus"
    return {
        "content": f"{canary} {text}",
        "summary": text[:2000],
        "context": text,
        "tags": ["corpus", *labels],
        "topics": labels,
        "project": field,
        "team": field,
        "conversation_id": field,
        "metadata": {"note": text, "nested": {"items": [text, {"deep": text}]}, "line": case.line},
    }


def _windows(blobs: list[bytes], width: int) -> tuple[set[str], str]:
    """Every width-character window of the printable runs in the blobs, and the runs joined for longer
    needles. Scanning that way costs one pass over the bytes instead of one per needle."""
    runs = [run.decode() for blob in blobs for run in re.findall(rb"[\x20-\x7e]{%d,}" % width, blob)]
    windows = {run[i : i + width] for run in runs for i in range(len(run) - width + 1)}
    return windows, "\n".join(runs)


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def test_no_corpus_secret_reaches_disk_and_innocent_text_is_kept(tmp_path: Path, model_cache: Path) -> None:
    secrets = load_secrets()
    innocent = load_innocent()
    home = tmp_path / "home"
    node = start_node(home, model_cache)
    canary = f"canary-{uuid.uuid4().hex}"
    client = httpx.Client(base_url=node.http_url, timeout=60)
    last_seq = 0
    stored: set[str] = set()  # the memories made (a repeat answers with the one it repeats)
    innocent_ids: list[tuple[str, str]] = []
    started = time.monotonic()
    try:
        for case in secrets:
            response = client.post("/v1/memories", json=_payload(case, canary))
            # Two secrets of one kind can scrub to the same text: the second is then the first memory again.
            assert response.status_code == 201 or response.json().get("duplicate_of"), (case.id, response.text)
            body = response.json()
            last_seq = max(last_seq, body["seq"])
            stored.add(body["id"])
            assert {r["kind"] for r in body["redactions"]} >= case.kinds, (case.id, body["redactions"])
        for text in innocent:
            response = client.post(
                "/v1/memories", json={"content": text, "summary": text[:2000], "metadata": {"text": text}}
            )
            assert response.status_code == 201, response.text
            body = response.json()
            assert body["redactions"] == [], (text, body["redactions"])
            innocent_ids.append((body["id"], text))
            last_seq = max(last_seq, body["seq"])
        saved_at = time.monotonic()
        assert len(list_all_ids(client, last_seq)) >= len(stored) + len(innocent)  # waits for the index
        print(f"\nsaved in {saved_at - started:.1f}s, indexed {time.monotonic() - saved_at:.1f}s later")

        false_positives = 0
        for memory_id, text in innocent_ids:
            got = client.get(f"/v1/memories/{memory_id}")
            assert got.status_code == 200, got.text
            memory = got.json()
            if memory["content"] != text or memory["metadata"] != {"text": text}:
                false_positives += 1
        assert false_positives == 0
    finally:
        client.close()
        assert node.stop() == 0  # a clean stop flushes the log and the index to disk

    files = _files(home)
    blobs = [path.read_bytes() for path in files]
    windows, joined = _windows(blobs, WIDTH)
    assert canary in joined, "the saved memories are not on disk in clear: this check would prove nothing"
    found: list[tuple[str, str]] = []
    needles = 0
    for case in secrets:
        for secret in case.secrets:
            for line in secret.splitlines():  # multi-line secrets (PEM) are stored with escaped line breaks
                if len(line.strip()) >= WIDTH:
                    needles += 1
                    if line.strip() in joined:
                        found.append((case.id, line.strip()))
            for piece in distinctive_slices(secret, WIDTH):
                needles += 1
                if piece in windows:
                    found.append((case.id, piece))
    print(
        f"\nsecret corpus: {len(secrets)} lines, {sum(len(c.secrets) for c in secrets)} secrets, "
        f"{needles} needles in {len(files)} files ({sum(map(len, blobs))} bytes); "
        f"found on disk: {len(found)}; innocent texts: {len(innocent)}, false positives: 0"
    )
    assert found == [], found[:10]
