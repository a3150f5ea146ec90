"""Benchmark data loaders: LoCoMo conversations, BEIR collections, and the speed corpus built from both."""

from __future__ import annotations

import csv
import itertools
import json
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LOCOMO_ADVERSARIAL = 5
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
# What LoCoMo memories get as context: the client passes the previous turn ("previous-turn"), or passes none and the
# server derives it from the conversation's previous memory ("server", ENGRAM_DERIVE_CONTEXT on) or does not ("none").
CONTEXT_MODES = ("previous-turn", "server", "none")
DEFAULT_CONTEXT_MODE = "previous-turn"
# The node settings of each mode: only "server" lets the node derive (a session's first turn, whose client context is
# empty, would otherwise get one too and blur what the client passed).
CONTEXT_SETTINGS = {
    "previous-turn": {"ENGRAM_DERIVE_CONTEXT": "false"},
    "server": {"ENGRAM_DERIVE_CONTEXT": "true"},
    "none": {"ENGRAM_DERIVE_CONTEXT": "false"},
}
MIN_SENTENCE_CHARS = 30
DEFAULT_SEED = 20240611

_SESSION = re.compile(r"session_(\d+)")
# Sentence ends: ". " before a capital/digit/bracket, or a glued ".A" (SciFact abstracts lose some spaces).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])|(?<=[a-z)\]]\.)(?=[A-Z][a-z])")


# --- LoCoMo -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Turn:
    """One dialog turn of a LoCoMo session."""

    dia_id: str
    speaker: str
    text: str
    session_date: str
    blip_caption: str = ""

    @property
    def said(self) -> str:
        """``<speaker>: <text>`` — how a turn reads as another turn's context."""
        return f"{self.speaker}: {self.text}"

    @property
    def content(self) -> str:
        """The memory text: ``[<session date>] <speaker>: <text>`` plus `` [shares <caption>]`` for images."""
        shared = f" [shares {self.blip_caption}]" if self.blip_caption else ""
        return f"[{self.session_date}] {self.said}{shared}"


@dataclass(frozen=True, slots=True)
class Question:
    """A LoCoMo question with the dia_ids of the turns that answer it."""

    question: str
    evidence: tuple[str, ...]
    category: int

    @property
    def category_name(self) -> str:
        return LOCOMO_CATEGORIES.get(self.category, f"category-{self.category}")


@dataclass(frozen=True, slots=True)
class Conversation:
    """A LoCoMo sample: its sessions (lists of turns, in order) and its questions."""

    sample_id: str
    sessions: tuple[tuple[Turn, ...], ...]
    questions: tuple[Question, ...]
    all_question_texts: tuple[str, ...] = ()  # including adversarial ones (speed queries only)
    observations: tuple[str, ...] = ()  # LoCoMo's per-session observation statements (speed corpus only)

    @property
    def turns(self) -> list[Turn]:
        return [turn for session in self.sessions for turn in session]

    @property
    def answerable(self) -> list[Question]:
        """Questions scored for recall: not adversarial, with evidence."""
        return [q for q in self.questions if q.category != LOCOMO_ADVERSARIAL and q.evidence]


def load_locomo(path: Path, *, limit: int | None = None) -> list[Conversation]:
    """Reads a LoCoMo JSON file (a list of samples); ``limit`` keeps the first n conversations."""
    samples = json.loads(path.read_text(encoding="utf-8"))
    return [_conversation(sample) for sample in samples[:limit]]


def _conversation(sample: dict[str, Any]) -> Conversation:
    conv = sample["conversation"]
    numbers = sorted(int(m.group(1)) for key in conv if (m := _SESSION.fullmatch(key)))
    sessions = tuple(
        tuple(
            Turn(
                dia_id=str(t["dia_id"]),
                speaker=str(t["speaker"]),
                text=str(t.get("text", "")),
                session_date=str(conv.get(f"session_{n}_date_time", "")),
                blip_caption=str(t.get("blip_caption") or ""),
            )
            for t in conv[f"session_{n}"]
        )
        for n in numbers
    )
    questions = tuple(
        Question(question=str(q["question"]), evidence=_evidence(q.get("evidence")), category=int(q["category"]))
        for q in sample.get("qa", [])
    )
    return Conversation(
        sample_id=str(sample["sample_id"]),
        sessions=sessions,
        questions=questions,
        all_question_texts=tuple(q.question for q in questions),
        observations=tuple(_observations(sample.get("observation"))),
    )


def _observations(raw: Any) -> Iterator[str]:
    """``{"session_N_observation": {speaker: [[statement, dia_id], ...]}}`` -> the statements."""
    for per_speaker in (raw or {}).values():
        for items in (per_speaker or {}).values() if isinstance(per_speaker, dict) else ():
            for item in items or []:
                text = item[0] if isinstance(item, list) and item else item
                if isinstance(text, str) and text.strip():
                    yield text.strip()


def _evidence(raw: Any) -> tuple[str, ...]:
    """Evidence dia_ids; a few entries pack two ids into one string ("D8:6; D9:17"), which are split."""
    ids: list[str] = []
    for item in raw or []:
        ids.extend(part.strip() for part in str(item).split(";") if part.strip())
    return tuple(dict.fromkeys(ids))


def locomo_records(conv: Conversation, *, context_mode: str = DEFAULT_CONTEXT_MODE) -> list[dict[str, Any]]:
    """The import lines for one conversation: one memory per turn, tagged and grouped by its sample_id."""
    if context_mode not in CONTEXT_MODES:
        raise ValueError(f"context mode must be one of {CONTEXT_MODES}, got {context_mode!r}")
    records = []
    for session in conv.sessions:
        previous: Turn | None = None
        for turn in session:
            record: dict[str, Any] = {
                "content": turn.content,
                "tags": [conv.sample_id],
                "conversation_id": conv.sample_id,
                "metadata": {"dia_id": turn.dia_id},
                "source_id": f"locomo:{conv.sample_id}:{turn.dia_id}",
            }
            if context_mode == "previous-turn":
                record["context"] = previous.said if previous else ""
            records.append(record)
            previous = turn
    return records


# --- BEIR ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Document:
    doc_id: str
    title: str
    text: str

    @property
    def content(self) -> str:
        """``<title>. <text>`` (or the text alone when there is no title)."""
        title = self.title.strip()
        if not title:
            return self.text
        return f"{title} {self.text}" if title.endswith((".", "?", "!")) else f"{title}. {self.text}"


@dataclass(slots=True)
class BeirSet:
    """A BEIR collection: corpus, test queries, and graded judgements query -> {doc: relevance}."""

    name: str
    corpus: list[Document]
    queries: dict[str, str]
    qrels: dict[str, dict[str, float]]
    note: str = ""
    judged: list[str] = field(default_factory=list)  # query ids with a positive judgement, in file order

    def records(self, tag: str) -> list[dict[str, Any]]:
        return [
            {
                "content": doc.content,
                "tags": [tag],
                "metadata": {"doc_id": doc.doc_id},
                "source_id": f"beir:{self.name}:{doc.doc_id}",
            }
            for doc in self.corpus
        ]


def load_beir(path: Path, *, limit: int | None = None, split: str = "test") -> BeirSet:
    """Reads corpus.jsonl, queries.<split>.jsonl (or queries.jsonl) and qrels/<split>.tsv.

    With ``limit``, the corpus is cut to that many documents, judged documents first (so the smoke run still
    has answers to find); judgements on dropped documents are dropped with them.
    """
    corpus = [
        Document(doc_id=str(d["_id"]), title=str(d.get("title") or ""), text=str(d.get("text") or ""))
        for d in _jsonl(path / "corpus.jsonl")
    ]
    queries_file = path / f"queries.{split}.jsonl"
    if not queries_file.exists():
        queries_file = path / "queries.jsonl"
    queries = {str(q["_id"]): str(q["text"]) for q in _jsonl(queries_file)}
    qrels: dict[str, dict[str, float]] = {}
    with (path / "qrels" / f"{split}.tsv").open(encoding="utf-8") as f:
        rows = csv.reader(f, delimiter="\t")
        for row in rows:
            if len(row) < 3 or not row[2].strip().lstrip("-").isdigit():
                continue  # header or blank line
            qrels.setdefault(row[0], {})[row[1]] = float(row[2])
    note = ""
    if limit is not None and limit < len(corpus):
        judged_docs = {doc for rels in qrels.values() for doc in rels}
        ordered = [d for d in corpus if d.doc_id in judged_docs] + [d for d in corpus if d.doc_id not in judged_docs]
        corpus = ordered[:limit]
        kept = {d.doc_id for d in corpus}
        qrels = {q: {d: r for d, r in rels.items() if d in kept} for q, rels in qrels.items()}
        note = f"corpus cut to {limit} documents (judged first): figures are not comparable to the full set"
    judged = [q for q in queries if any(r > 0 for r in qrels.get(q, {}).values())]
    return BeirSet(name=path.name, corpus=corpus, queries=queries, qrels=qrels, note=note, judged=judged)


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


# --- speed corpus -------------------------------------------------------------------------------------------


def sentences(text: str, *, min_chars: int = MIN_SENTENCE_CHARS) -> list[str]:
    """Splits an abstract into sentences of at least ``min_chars`` characters.

    >>> sentences("Short. This sentence is long enough to keep.It glued on.And this one is fine too, long.")
    ['This sentence is long enough to keep.', 'And this one is fine too, long.']
    """
    parts = (part.strip() for part in _SENTENCE_END.split(text))
    return [part for part in parts if len(part) >= min_chars]


@dataclass(frozen=True, slots=True)
class SpeedCorpus:
    """Memory-sized texts for the speed runs, and where they came from."""

    texts: list[str]
    sources: dict[str, int]


def speed_corpus(beir: BeirSet | None, conversations: Sequence[Conversation], *, needed: int,
                 seed: int = DEFAULT_SEED) -> SpeedCorpus:  # fmt: skip
    """At least ``needed`` distinct memory-sized texts, shuffled with a fixed seed.

    First choice: abstract sentences, titles, LoCoMo turns and LoCoMo observations (single statements).
    When those run out, pairs of adjacent abstract sentences (still memory-sized, still distinct) follow.
    """
    rng = random.Random(seed)
    primary: dict[str, list[str]] = {
        "scifact-sentences": [], "scifact-titles": [], "locomo-turns": [], "locomo-observations": [],
    }  # fmt: skip
    pairs: list[str] = []
    for doc in beir.corpus if beir else []:
        split = sentences(doc.text)
        primary["scifact-sentences"].extend(split)
        if len(doc.title) >= MIN_SENTENCE_CHARS:
            primary["scifact-titles"].append(doc.title)
        pairs.extend(f"{a} {b}" for a, b in itertools.pairwise(split))
    for conv in conversations:
        primary["locomo-turns"].extend(turn.content for turn in conv.turns)
        primary["locomo-observations"].extend(conv.observations)
    texts: list[str] = []
    sources: dict[str, int] = {}
    seen: set[str] = set()
    for name, items in primary.items():
        sources[name] = _take(items, texts, seen)
    rng.shuffle(texts)
    if len(texts) < needed:
        rng.shuffle(pairs)
        extra: list[str] = []
        sources["scifact-sentence-pairs"] = _take(pairs, extra, seen, limit=needed - len(texts))
        texts.extend(extra)
    base, n = list(texts), 0
    while base and len(texts) < needed:  # tiny data sets only: numbered variants of what exists
        texts.append(f"{base[n % len(base)]} (variant {n // len(base) + 1})")
        n += 1
    if n:
        sources["numbered-variants"] = n
    return SpeedCorpus(texts=texts, sources=sources)


# Captured sessions save many notes sharing most of their words (the same files, commands and outcomes in another
# order); issue 35 measures the import on such notes too: each is LOOKALIKE_WORDS words drawn from one vocabulary of
# LOOKALIKE_VOCABULARY, in a shuffled order, every note distinct.
LOOKALIKE_VOCABULARY = (
    "ran", "pytest", "on", "the", "ingest", "writer", "after", "changing", "batch", "size", "import", "failed",
    "passed", "retry", "log", "append", "index", "build", "timeout", "fixed", "session", "node", "test", "embedder",
)  # fmt: skip
LOOKALIKE_WORDS = 14
SPEED_CORPORA = ("mixed", "lookalike")


def lookalike_corpus(needed: int, *, seed: int = DEFAULT_SEED) -> SpeedCorpus:
    """``needed`` distinct notes of LOOKALIKE_WORDS words drawn from LOOKALIKE_VOCABULARY (seeded): a corpus of
    look-alike notes, as captured sessions write them."""
    rng = random.Random(seed)
    texts: list[str] = []
    seen: set[str] = set()
    while len(texts) < needed:
        words = rng.sample(LOOKALIKE_VOCABULARY, LOOKALIKE_WORDS)
        text = " ".join(words).capitalize() + "."
        if text not in seen:
            seen.add(text)
            texts.append(text)
    return SpeedCorpus(texts=texts, sources={"lookalike": len(texts)})


def _take(items: list[str], into: list[str], seen: set[str], *, limit: int | None = None) -> int:
    count = 0
    for item in items:
        if limit is not None and count >= limit:
            break
        if item not in seen:
            seen.add(item)
            into.append(item)
            count += 1
    return count


def speed_queries(
    beir: BeirSet | None, conversations: Sequence[Conversation], *, seed: int = DEFAULT_SEED
) -> list[str]:
    """Distinct search queries (SciFact claims and every LoCoMo question), shuffled with a fixed seed."""
    queries = list(beir.queries.values()) if beir else []
    for conv in conversations:
        queries.extend(conv.all_question_texts)
    unique = list(dict.fromkeys(q for q in queries if q.strip()))
    random.Random(seed + 1).shuffle(unique)
    return unique
