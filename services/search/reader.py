"""Every read: the hybrid search pipeline (dense, BM25, questions → weighted RRF → rerank), get, list, stats,
and the agents and teams of a namespace."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from engram.config import DEFAULT_MIN_RELEVANCE, DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT
from engram.embed import Embedder
from engram.embed.sparse import Bm25Encoder
from engram.errors import InvalidArgument, NotFound, NoVersionAt, PermissionDenied
from engram.ids import memory_id as parse_memory_id
from engram.index import (
    CREATED_TS,
    DENSE,
    EXPIRES_TS,
    ORDERS,
    POINT,
    QUESTIONS,
    SPARSE,
    VALID_FROM,
    VALID_TO,
    IndexQuery,
    MemoryIndex,
    Position,
    Scored,
    version_point_id,
)
from engram.model import (
    DEFAULT_LIST_LIMIT,
    DEFAULT_LIST_ORDER,
    STATUSES,
    Caller,
    ListQuery,
    Memory,
    MemoryVersion,
    SearchFilter,
    SearchQuery,
    servable_problem,
)
from engram.results import AgentInfo, Expiring, History, Hit, MemoryStats, SearchResult, TeamInfo
from engram.services.search import page_token as page_token_codec
from engram.services.search.access import AccessRecorder
from engram.services.search.agents import AgentRecord, time_or_never
from engram.services.search.fusion import DEFAULT_RRF_K, Adaptive, Fused, adaptive, reach, relative, rrf
from engram.services.search.indexer import ENRICHED_SEQS, Indexer
from engram.services.search.latest import newest_of_subject
from engram.services.search.queries import about_sessions, query_kind
from engram.updates import is_fact_sized, states_a_change

if TYPE_CHECKING:
    from engram.models.rerank import Reranker

log = logging.getLogger(__name__)

DAY_SECONDS = 86400.0
MAX_ACTIVITY_DAYS = 366  # a year of days: the console's chart shows at most 90

MAX_QUERY_CHARS = 4000
DEFAULT_CANDIDATES = 100  # per retriever, before fusion
DEFAULT_WEIGHTS = {DENSE: 1.0, SPARSE: 1.5, QUESTIONS: 1.0}
DEFAULT_RERANK_TOP_N = 20
COLD_WEIGHT = 0.5  # what the score of a memory in the cold tier counts (decay)
TEAM_SUMMARY = "team-summary"  # the memory type of a team's summary (consolidate_team)
SESSION_SUMMARY = "session-summary"  # the memory type of a captured session's summary (engram.hooks)
SOURCES = (DENSE, SPARSE, QUESTIONS)
FUSED = "fused"
RERANK = "rerank"
SUPERSEDED = "superseded"  # a memory's status once another replaced it; explain: what an outdated version lent it
LEND_DEPTH = 20  # a superseded memory among the first this many of a retriever's list lends its match (_lend)
CHAIN_DEPTH = 4  # supersessions a search follows from a superseded hit to the memory that replaced it last
NEWER = "newer"  # explain: (the rank it held before it passed an older version of itself, their similarity)
FLOOR = "floor"  # explain: (1 passed by meaning, 2 passed by exact match; the memory's cosine to the query)
EXACT_MATCH = 0.5  # a hit whose BM25 score is this share of the query's reach passes the floor whatever its meaning
POINTS_TTL = 10.0  # seconds the index's size (BM25's reach) is cached


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """The search knobs (see docs/search.md)."""

    fusion: str = "adaptive"
    adaptive: Adaptive = field(default_factory=Adaptive)
    rrf_k: float = DEFAULT_RRF_K
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    candidates: int = DEFAULT_CANDIDATES
    rerank_top_n: int = DEFAULT_RERANK_TOP_N
    rerank_by_default: bool = True
    min_relevance: float = DEFAULT_MIN_RELEVANCE
    # Newest first, among the first `newer_depth` hits: a fact-sized memory created later that is this close in
    # meaning (dense cosine) to one ranked above it, and within `newer_margin` of its fused score, is its newer
    # version and takes its place; one that states a change ("now", "moved to", ...) needs less of both.
    newer_similarity: float = 0.6
    newer_margin: float = 0.1
    change_similarity: float = 0.5
    change_margin: float = 0.3
    newer_depth: int = 10
    # The newest statement of a subject first, among this many hits (services/search/latest.py); 0: off.
    subject_depth: int = 10
    # A session's summary repeats the observations it summarizes: it counts this share of its score, unless the query
    # asks about sessions (services/search/queries.py about_sessions), so the observations answer first.
    summary_weight: float = 0.5
    # The tail of an answer below a clear drop is left out: when an identifier's best hit matches it exactly (a BM25
    # score of EXACT_MATCH of the reach), the hits that do not, scoring under `tail_ratio` of the best, are noise.
    # Only there: fused scores are min-max normalised, so elsewhere a low one may still be close in meaning.
    tail_ratio: float = 0.25
    # A superseded memory matches a query for the memory that replaced it: retrieved with the active ones, it lends
    # its retrievers' scores to its successor when that one was found too, then leaves (ENGRAM_SUPERSEDED_MATCH).
    superseded_match: bool = True


@dataclass(slots=True)
class _Candidate:
    """A fused hit on its way to the answer: its memory, dense vector (when read) and explain stages."""

    hit: Hit
    vector: np.ndarray | None
    sparse_score: float

    @property
    def created(self) -> float:
        return self.hit.memory.created_at or 0.0

    @property
    def fact_sized(self) -> bool:
        return self.vector is not None and is_fact_sized(self.hit.memory.content)


class MemoryReader:
    def __init__(
        self,
        index: MemoryIndex,
        indexer: Indexer,
        embedder: Embedder,
        sparse: Bm25Encoder,
        *,
        read_wait: float,
        config: PipelineConfig | None = None,
        reranker: Reranker | None = None,
        versions: MemoryIndex | None = None,
        access: AccessRecorder | None = None,
    ) -> None:
        self._index = index
        self._versions = versions
        self._access = access
        self._indexer = indexer
        self._embedder = embedder
        self._sparse = sparse
        self._read_wait = read_wait
        self._config = config or PipelineConfig()
        self._reranker = reranker
        self._points: tuple[float, int] = (-POINTS_TTL, 0)  # (when counted, the index's memories)

    @property
    def applied_seq(self) -> int:
        return self._indexer.applied_seq

    @property
    def embedding_model(self) -> str:
        return self._embedder.model_id

    @property
    def reranker_model(self) -> str:
        return self._reranker.model_id if self._reranker is not None else ""

    async def search(self, caller: Caller, request: SearchQuery) -> SearchResult:
        """The hybrid pipeline: retrievers, fusion by the query's kind, newest first, the relevance floor, rerank.

        ``request.min_relevance``: the floor a hit's meaning (dense cosine to the query) must reach unless it matched
        the query's words strongly; None: the server's (ENGRAM_MIN_RELEVANCE), 0: none."""
        query, flt, min_relevance, explain = request.query, request.flt, request.min_relevance, request.explain
        query = query.strip()
        if not query:
            raise InvalidArgument("query", "is required. To browse without a query, use list_memories.")
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidArgument("query", f"is longer than {MAX_QUERY_CHARS} characters; shorten it.")
        if min_relevance is not None and not 0.0 <= min_relevance <= 1.0:
            raise InvalidArgument("min_relevance", f"must be between 0 and 1 (0: no floor), got {min_relevance}.")
        floor = self._config.min_relevance if min_relevance is None else min_relevance
        limit = _limit(request.limit, DEFAULT_SEARCH_LIMIT)
        chosen = _sources(request.sources)
        use_rerank, note = self._rerank_decision(request.rerank)
        await self._ready_for(request.min_seq)

        kind = query_kind(query)
        dense, reachable, candidates = await asyncio.to_thread(
            self._retrieve, caller.namespace, query, kind, flt, chosen, limit, use_rerank
        )  # one hop to a worker thread for the embedding, the retrievers and the hits' memories (each hop waits)
        query_vector = np.asarray(dense, dtype=np.float32) if dense is not None else None
        candidates = self._above_floor(candidates, query_vector, floor, reachable)
        exact = {c.hit.memory.id for c in candidates if reachable > 0 and c.sparse_score / reachable >= EXACT_MATCH}
        candidates = self._newest_first(candidates)
        hits = [c.hit for c in candidates]
        if use_rerank and hits:
            hits = await asyncio.to_thread(self._rerank, query, hits)
        hits = newest_of_subject(hits, kind, self._config.subject_depth)
        hits = _summaries_below(_cold_last(hits), self._config.summary_weight, about_sessions(query))
        if floor > 0 and kind == "identifier" and not (use_rerank and hits):  # min_relevance 0 keeps everything
            hits = _without_tail(hits, exact, self._config.tail_ratio)
        hits = hits[:limit]
        if not explain:
            for hit in hits:
                hit.explain = {}
        if flt.as_of is None:
            self._note(caller, [hit.memory.id for hit in hits])
        how = self._how(kind, floor if query_vector is not None else 0.0) if explain else ""
        reranked = use_rerank and bool(hits)
        return SearchResult(hits, self._indexer.applied_seq, reranked=reranked, rerank_note=note, explain_note=how)

    def _retrieve(
        self,
        namespace: str,
        query: str,
        kind: str,
        flt: SearchFilter,
        chosen: Sequence[str],
        limit: int,
        use_rerank: bool,
    ) -> tuple[list[float] | None, float, list[_Candidate]]:
        """The query's dense vector (None without a dense retriever), BM25's reach, and the fused hits with their
        memories, before the floor."""
        dense = None
        # Superseded memories are retrieved too, to lend their match to what replaced them (see _lend), unless the
        # caller asks for them itself or for a point in time (which searches what was current then), or pasted an
        # identifier (who pastes an old port or version wants the memory that says it, as the subject step has it).
        statuses = flt.statuses or ["active"]
        lend = (
            self._config.superseded_match and flt.as_of is None and SUPERSEDED not in statuses and kind != "identifier"
        )
        if DENSE in chosen or QUESTIONS in chosen:
            dense = self._embedder.embed([query])[0].tolist()
        terms = self._sparse.query(query)
        depth = max(self._config.candidates, limit, self._config.rerank_top_n if use_rerank else 0)
        request = IndexQuery(
            namespace=namespace,
            filter=replace(flt, statuses=[*statuses, SUPERSEDED]) if lend else flt,
            limit=depth + LEND_DEPTH if lend else depth,  # as many active ones as without them, unless many more
            dense=dense if DENSE in chosen else None,
            sparse=terms if SPARSE in chosen else None,
            # None when no memory has questions (an LLM adds them): the retriever would scan for nothing
            questions=dense
            if QUESTIONS in chosen and (flt.as_of is not None or self._index.holds_questions())
            else None,
            with_payload=False,  # converting 2 x 100 payloads costs more than fetching the few we keep
            fields=("status",) if lend else (),
        )
        lists = self._index.search(request) if flt.as_of is None else self._search_as_of(request)
        lists, lent = self._lend(namespace, lists, depth) if lend else (lists, {})
        ranked_lists = {name: [(s.id, s.score) for s in ranked] for name, ranked in lists.items()}
        reachable = reach(len(terms.indices), self._point_count())
        fused = self._fuse(ranked_lists, kind, reachable)
        # The memories read: what the answer, newest-first and the reranker (when it runs) look at, and as many again,
        # since the floor may drop some. Each costs a payload read and conversion (docs/benchmarks.md).
        keep = max(limit, self._config.rerank_top_n if use_rerank else 0, self._config.newer_depth) + limit
        return dense, reachable, self._candidates(namespace, fused[:keep], flt.as_of, lent)

    def _lend(
        self, namespace: str, lists: dict[str, list[Scored]], depth: int
    ) -> tuple[dict[str, list[Scored]], dict[str, tuple[int, float]]]:
        """The retrievers' lists without superseded memories, each of which first lends its match to the memory that
        replaced it (the last of its chain of supersessions) when the same search found that one too (so it passed
        the same filters): in each list the replacement takes the better of its own score and the outdated
        version's. So a question worded like an outdated fact finds the fact that replaced it, however that one is
        worded ("which executor does Airflow use?": "Airflow runs the CeleryExecutor", superseded by "Airflow
        switched to the KubernetesExecutor"). Only those among the first LEND_DEPTH of a list lend: below, what
        they lend would not reach the answer. Also what was lent to whom: (the lender's best rank in a list, its
        cosine to the query).

        Each list keeps its first ``depth``: with nothing to lend (and fewer than LEND_DEPTH superseded memories
        among the first ``depth`` + LEND_DEPTH of each list) they are those the active memories alone gave, so fusion
        is as without this step (its normalisation reads each list's last score)."""
        superseded = {s.id for ranked in lists.values() for s in ranked if s.payload.get("status") == SUPERSEDED}
        if not superseded:
            return {name: ranked[:depth] for name, ranked in lists.items()}, {}
        lenders: dict[str, int] = {}  # id -> its best rank in a list
        for ranked in lists.values():
            for rank, scored in enumerate(ranked[:LEND_DEPTH], start=1):
                if scored.id in superseded:
                    lenders[scored.id] = min(rank, lenders.get(scored.id, rank))
        found = {scored.id for ranked in lists.values() for scored in ranked} - superseded
        ends = self._chain_ends(namespace, list(lenders), max_links=CHAIN_DEPTH)
        heads = {lender: head for lender, end in ends.items() if (head := str(end.get("id"))) in found}
        lent: dict[str, tuple[int, float]] = {}
        out: dict[str, list[Scored]] = {}
        for name, ranked in lists.items():
            best: dict[str, Scored] = {}
            for scored in ranked:
                target = heads.get(scored.id, "") if scored.id in superseded else scored.id
                if target and (target not in best or scored.score > best[target].score):
                    best[target] = Scored(target, scored.score, {})
            out[name] = sorted(best.values(), key=lambda scored: scored.score, reverse=True)[:depth]
        dense = {scored.id: scored.score for scored in lists.get(DENSE, ())}
        for lender, head in heads.items():
            rank, meaning = lenders[lender], dense.get(lender, 0.0)
            if head not in lent or (rank, -meaning) < (lent[head][0], -lent[head][1]):
                lent[head] = (rank, meaning)
        return out, lent

    def _fuse(self, lists: dict[str, list[tuple[str, float]]], kind: str, reachable: float) -> list[Fused]:
        if self._config.fusion == "rrf":
            return rrf(lists, k=self._config.rrf_k, weights=self._config.weights)
        if self._config.fusion == "relative":
            return relative(lists, weights=self._config.weights)
        return adaptive(lists, kind, reachable, sparse=SPARSE, dense=(DENSE, QUESTIONS), knobs=self._config.adaptive)

    def _how(self, kind: str, floor: float) -> str:
        """What explain says about the whole search: how its lists were fused, ordered and cut."""
        fusion = self._config.fusion
        if fusion == "adaptive":
            fusion = {
                "identifier": "an identifier: exact matching (BM25) leads",
                "question": "a question that names nothing: meaning (dense) leads, BM25 adds only a strong match",
                "named": "names or a statement: relative fusion of meaning and exact matching",
            }[kind]
        config = self._config
        cut = (
            f"hits below {floor:g} in meaning pass only by a strong exact match; after an identifier's exact match, "
            f"hits that are not one and score under {config.tail_ratio:g} of it are left out"
            if floor
            else "no relevance floor"
        )
        return (
            f"{fusion}; a memory saved later that says nearly the same (cosine >= {config.newer_similarity:g}) "
            f"ranks above the older one; session summaries count {config.summary_weight:g} of their score unless the "
            f"query is about sessions; {cut}."
        )

    def _point_count(self) -> int:
        """The index's size (BM25's IDF counts every memory of the index), counted at most every POINTS_TTL s."""
        counted_at, points = self._points
        now = time.monotonic()
        if now - counted_at >= POINTS_TTL:
            points = self._index.point_count()
            self._points = (now, points)
        return points

    def _candidates(
        self, namespace: str, top: list[Fused], as_of: float | None, lent: dict[str, tuple[int, float]]
    ) -> list[_Candidate]:
        """The fused hits with their memories and dense vectors; a memory archived meanwhile, or one that cannot be
        served, is left out. A point-in-time search's earlier versions come without vectors."""
        ids = [item.id for item in top]
        found = {p.payload["id"]: p for p in self._index.retrieve_points(namespace, ids, dense_only=True)}
        payloads = {key: point.payload for key, point in found.items()}
        if as_of is not None and self._versions is not None:
            payloads |= self._payloads(namespace, [i for i in ids if i not in found], as_of)
        out = []
        for rank, item in enumerate(top, start=1):
            if item.id not in payloads or (memory := _memory(payloads[item.id])) is None:
                continue
            point = found.get(item.id)
            vector = np.asarray(point.dense, dtype=np.float32) if point is not None and point.dense else None
            hit = Hit(memory, item.score, _stages(item.ranks, item.scores, rank, item.score))
            if item.id in lent:
                hit.explain[SUPERSEDED] = lent[item.id]
            out.append(_Candidate(hit, vector, item.scores.get(SPARSE, 0.0)))
        return out

    def _above_floor(
        self, candidates: list[_Candidate], query: np.ndarray | None, floor: float, reachable: float
    ) -> list[_Candidate]:
        """Drops hits that are neither close in meaning to the query (dense cosine >= floor) nor a strong exact
        match of its words; without a dense query (sources without dense) there is no floor."""
        if query is None or floor <= 0:
            return candidates
        kept = []
        for candidate in candidates:
            stages = candidate.hit.explain
            # Its meaning: the content's cosine to the query, or what its question vectors matched (an earlier
            # version, as_of, has no vector read: its dense score when the dense list had it).
            ranked = [score for source in (DENSE, QUESTIONS) if (stage := stages.get(source)) and (score := stage[1])]
            if candidate.vector is not None:
                ranked.append(float(candidate.vector @ query))
            meaning = max(ranked, default=0.0)
            exact = reachable > 0 and candidate.sparse_score / reachable >= EXACT_MATCH
            if meaning >= floor or exact:
                stages[FLOOR] = (1 if meaning >= floor else 2, meaning)
                kept.append(candidate)
        return kept

    def _newest_first(self, candidates: list[_Candidate]) -> list[_Candidate]:
        """Among the first ``newer_depth`` hits, a fact-sized memory created later that says nearly the same as one
        ranked above it (its newer version, superseded or not) and scores close to it moves up to its place."""
        depth = self._config.newer_depth
        head, tail = candidates[:depth], candidates[depth:]
        for _ in range(len(head) * len(head)):  # each move puts a newer memory first; this bounds the passes
            moved = self._first_newer(head)
            if moved is None:
                break
            above, newer, similarity = moved
            head[newer].hit.explain.setdefault(NEWER, (newer + 1, similarity))
            head[newer].hit.score = max(head[newer].hit.score, head[above].hit.score)  # scores stay in rank order
            head.insert(above, head.pop(newer))
        return head + tail

    def _first_newer(self, head: list[_Candidate]) -> tuple[int, int, float] | None:
        """The first (above, newer, similarity) where ``newer`` ranks below ``above``, was created later and is its
        newer version: close in meaning and score, or a statement of a change somewhat close in both."""
        config = self._config
        for a, upper in enumerate(head):
            if not upper.fact_sized:
                continue
            for b in range(a + 1, len(head)):
                lower = head[b]
                if not lower.fact_sized or lower.created <= upper.created:
                    continue
                similarity = float(_vector(upper) @ _vector(lower))
                behind = upper.hit.score - lower.hit.score
                if (similarity >= config.newer_similarity and behind <= config.newer_margin) or (
                    similarity >= config.change_similarity
                    and behind <= config.change_margin
                    and states_a_change(lower.hit.memory.content)
                ):
                    return a, b, similarity
        return None

    def _search_as_of(self, request: IndexQuery) -> dict[str, list[Scored]]:
        """Searches the current versions and the earlier ones, each filtered to what was current at ``as_of``.

        A memory has one version current at any time, so the two lists never hold the same memory twice: each
        retriever's lists are merged by score (point ids: a memory's id, or one of its versions' ids).
        """
        lists = self._index.search(request)
        if self._versions is not None:
            for name, ranked in self._versions.search(request).items():
                merged = sorted([*lists.get(name, []), *ranked], key=lambda s: s.score, reverse=True)
                lists[name] = merged[: request.limit]
        return lists

    def _payloads(self, namespace: str, ids: list[str], as_of: float | None) -> dict[str, dict[str, Any]]:
        """The payloads of search hits by point id; a point-in-time search's hits may be earlier versions."""
        payloads = {payload["id"]: payload for payload in self._index.retrieve(namespace, ids)}
        if as_of is not None and self._versions is not None:
            for payload in self._versions.retrieve(namespace, [i for i in ids if i not in payloads]):
                payloads[version_point_id(payload["id"], int(payload.get("version", 0)))] = payload
        return payloads

    def _rerank_decision(self, requested: bool | None) -> tuple[bool, str]:
        if self._reranker is None:
            if requested:
                return False, "rerank is off: no reranker installed (engram models pull <hub-id>)"
            return False, "rerank is off: no reranker installed"
        if requested is False or (requested is None and not self._config.rerank_by_default):
            return False, "rerank is off for this request"
        return True, f"reranked the top {self._config.rerank_top_n} with {self._reranker.model_id}"

    def _rerank(self, query: str, hits: list[Hit]) -> list[Hit]:
        assert self._reranker is not None
        head, tail = hits[: self._config.rerank_top_n], hits[self._config.rerank_top_n :]
        scores = self._reranker.score(query, [hit.memory.search_text() for hit in head])
        order = sorted(range(len(head)), key=lambda i: float(scores[i]), reverse=True)
        reranked = []
        for rank, i in enumerate(order, start=1):
            hit = head[i]
            hit.score = float(scores[i])
            hit.explain[RERANK] = (rank, hit.score)
            reranked.append(hit)
        for hit in tail:
            hit.explain[RERANK] = (0, 0.0)
        return reranked + tail

    async def get(
        self,
        caller: Caller,
        memory_id: str,
        *,
        min_seq: int = 0,
        with_history: bool = False,
        for_update: bool = False,
        for_create: bool = False,
        head: bool = False,
    ) -> Memory:
        """The current version of a memory, whatever its status; with_history adds its earlier versions.

        ``for_create``: the caller creates the memory under this id when it is not here (a device chose the id),
        so an id another namespace holds is refused rather than answered NotFound. ``head``: the memory at the end of
        its supersession chain instead."""
        memory_id = parse_memory_id(memory_id)
        await self._ready_for(min_seq)
        try:
            if head:
                payload = await asyncio.to_thread(self._head, caller.namespace, memory_id)
                memory_id = str(payload.get("id", memory_id))
            else:
                payload = await asyncio.to_thread(self._current, caller.namespace, memory_id)
        except NotFound:
            if for_create and await asyncio.to_thread(self._index.held_elsewhere, caller.namespace, memory_id):
                raise PermissionDenied(
                    f"Memory id '{memory_id}' is taken outside this namespace; a new memory needs an id of its own "
                    "(a fresh UUIDv7, as engram makes)."
                ) from None
            raise
        memory = _memory(payload)
        if memory is None:
            raise NotFound(memory_id)
        if with_history:
            memory.history = [
                _version_of(p) for p in await asyncio.to_thread(self._earlier, caller.namespace, memory_id)
            ]
        if not for_update:
            self._note(caller, [memory_id])
        return memory

    async def history(self, caller: Caller, memory_id: str, *, min_seq: int = 0) -> History:
        """Every version of a memory, oldest first, and every log entry about it (what a purge erases)."""
        memory_id = parse_memory_id(memory_id)
        await self._ready_for(min_seq)
        # Entries about it the index set aside count too (a purge erases them): with only those, no version.
        aside = {item.seq for item in self._indexer.quarantine.about(caller.namespace, memory_id)}
        try:
            current = await asyncio.to_thread(self._current, caller.namespace, memory_id)
        except NotFound:
            if not aside:
                raise
            return History(memory_id, [], sorted(aside))
        # The versions read after the current one may already hold it (an update indexed between the two reads):
        # keep those before it, so the history is the memory as of that read, with no version twice.
        below = int(current.get("version", 0))
        earlier = await asyncio.to_thread(self._earlier, caller.namespace, memory_id)
        payloads = [*(p for p in earlier if int(p.get("version", 0)) < below), current]
        seqs = {int(p.get("seq", 0)) for p in payloads} | {int(s) for s in current.get(ENRICHED_SEQS, [])} | aside
        return History(memory_id, [_version_of(p) for p in payloads], sorted(s for s in seqs if s))

    async def memory_at(self, caller: Caller, memory_id: str, at: float, *, min_seq: int = 0) -> Memory:
        """The version of a memory that was current at ``at``."""
        memory_id = parse_memory_id(memory_id)
        await self._ready_for(min_seq)
        current = await asyncio.to_thread(self._current, caller.namespace, memory_id)
        if float(current.get(VALID_FROM, 0.0)) <= at:
            found: dict[str, Any] | None = current
        else:
            earlier = await asyncio.to_thread(self._earlier, caller.namespace, memory_id)
            found = next((p for p in earlier if float(p[VALID_FROM]) <= at < float(p[VALID_TO])), None)
        memory = _memory(found) if found is not None else None
        if memory is None:
            raise NoVersionAt(memory_id, at, float(current.get(CREATED_TS, 0.0)))
        return memory

    def _current(self, namespace: str, memory_id: str) -> dict[str, Any]:
        found = self._index.retrieve(namespace, [memory_id])
        if not found:
            raise NotFound(memory_id)  # also for other namespaces' ids: never confirm they exist
        return found[0]

    def _head(self, namespace: str, memory_id: str) -> dict[str, Any]:
        """The payload at the end of ``memory_id``'s supersession chain (see _chain_ends)."""
        end = self._chain_ends(namespace, [memory_id]).get(memory_id)
        if end is None:
            raise NotFound(memory_id)  # also for other namespaces' ids: never confirm they exist
        return end

    def _chain_ends(
        self, namespace: str, memory_ids: list[str], *, max_links: int | None = None
    ) -> dict[str, dict[str, Any]]:
        """The payload at the end of each one's supersession chain (a memory not superseded is its own end), for those
        of ``memory_ids`` that exist: one index read per link, in this thread, the chains' links of one step read
        together. A chain that loops (which no write path makes) ends where it would repeat itself, one whose
        replacement was purged where it breaks, and one longer than ``max_links`` (a search's bound: a fact
        superseded every day makes long chains) at a superseded memory."""
        if not memory_ids:
            return {}
        ends = {str(payload.get("id")): payload for payload in self._index.retrieve(namespace, memory_ids)}
        seen = {memory_id: {memory_id} for memory_id in ends}
        following = set(ends)
        links = 0
        while max_links is None or links < max_links:
            step: dict[str, str] = {}
            for memory_id in sorted(following):
                end = ends[memory_id]
                after = str(end.get("superseded_by") or "")
                if end.get("status") != SUPERSEDED or not after or after in seen[memory_id]:
                    following.discard(memory_id)
                    continue
                seen[memory_id].add(after)
                step[memory_id] = after
            if not step:
                break
            links += 1
            read = {str(p.get("id")): p for p in self._index.retrieve(namespace, sorted(set(step.values())))}
            for memory_id, after in step.items():
                if after in read:
                    ends[memory_id] = read[after]
                else:
                    following.discard(memory_id)  # its replacement was purged: the chain ends here
        return ends

    def _earlier(self, namespace: str, memory_id: str) -> list[dict[str, Any]]:
        if self._versions is None:
            return []
        return sorted(self._versions.versions_of(namespace, memory_id), key=lambda p: int(p.get("version", 0)))

    async def stats(self, caller: Caller) -> MemoryStats:
        """Counts of the caller's namespace by owning agent, type, status and team (every status)."""
        await self._ready_for(0)

        every = SearchFilter(statuses=list(STATUSES))

        def count(key: str) -> dict[str, int]:
            return self._index.facet(caller.namespace, key, every)

        by_status, by_agent, by_type, by_team = await asyncio.to_thread(
            lambda: [count(key) for key in ("status", "owner_agent", "memory_type", "team")]
        )
        return MemoryStats(
            memories=by_status.get("active", 0),
            total=sum(by_status.values()),
            by_agent=by_agent,
            by_type=by_type,
            by_status=by_status,
            by_team=by_team,
            applied_seq=self._indexer.applied_seq,
            log_last_seq=await self.log_last_seq(),
        )

    async def activity(self, caller: Caller, *, start: float, days: int, min_seq: int = 0) -> list[dict[str, int]]:
        """Memories created in each of ``days`` 24-hour days from ``start``, by owning agent, every status: one facet
        of the index per day (no memory is read), so it costs the same at 50k memories as at 50."""
        if not 1 <= days <= MAX_ACTIVITY_DAYS:
            raise InvalidArgument("days", f"give 1 to {MAX_ACTIVITY_DAYS}; {days} is out of range.")
        await self._ready_for(min_seq)

        def day(first: float) -> dict[str, int]:
            within = SearchFilter(statuses=list(STATUSES), created_after=first, created_before=first + DAY_SECONDS)
            return self._index.facet(caller.namespace, "owner_agent", within)

        return await asyncio.to_thread(lambda: [day(start + i * DAY_SECONDS) for i in range(days)])

    async def namespaces(self) -> dict[str, int]:
        """Every namespace with active memories, and how many (for consolidation's schedule)."""
        self._indexer.require_ready()
        return await asyncio.to_thread(self._index.namespaces)

    async def expiring(self, *, at: float, limit: int) -> list[Expiring]:
        """Active memories of every namespace whose expires_at is due by ``at``."""
        self._indexer.require_ready()
        payloads = await asyncio.to_thread(self._index.due, at, max(1, min(limit, 1000)))
        # The time it became due: its expires_at, or a pending handoff's earlier deadline.
        return [Expiring(p["namespace"], p["id"], int(p.get("version", 1)), float(p[EXPIRES_TS])) for p in payloads]

    async def list_recent(self, caller: Caller, request: ListQuery) -> tuple[list[Memory], str, int]:
        """A page of memories newest first by creation (order "created") or by their last change ("updated"),
        ties by id; the token continues the listing after the page's last memory; and the log sequence the index
        had applied when the page was read (the page reflects every entry up to it)."""
        flt, limit, order, min_seq = request.flt, request.limit, request.order, request.min_seq
        if flt.as_of is not None:
            raise InvalidArgument("as_of", "is for search_memory and memory_at; a listing shows current versions.")
        order = order or DEFAULT_LIST_ORDER
        if order not in ORDERS:
            raise InvalidArgument("order", f"{order[:40]!r} is not an order; use one of {', '.join(ORDERS)}.")
        by = ORDERS[order]
        limit = _limit(limit, DEFAULT_LIST_LIMIT)
        after = page_token_codec.decode(request.page_token, order)
        await self._ready_for(min_seq)
        applied = self._indexer.applied_seq  # before the read: the entries are applied in order
        payloads = await asyncio.to_thread(lambda: self._index.recent(caller.namespace, flt, limit, after, by=by))
        if not flt.content_keys:  # a listing by content key is ingest's duplicate check before a save, not a read
            self._note(caller)
        memories = [memory for p in payloads if (memory := _memory(p)) is not None]
        if len(payloads) < limit:
            return memories, "", applied
        # From the payload, not the memory: an unservable last memory still marks where the page ended.
        last = Position(float(payloads[-1][by]), str(payloads[-1][POINT]))
        return memories, page_token_codec.encode(last, order), applied

    async def agents(self, caller: Caller, *, min_seq: int = 0) -> list[AgentInfo]:
        """The agents of the caller's namespace as the log knows them, most recently seen first.

        The registry (first and last seen, writes, devices, clients, teams) is the indexer's, as of the applied
        sequence; ``memories`` counts the active memories each owns now. An owner the registry has not seen
        (its entries purged) is listed with its memories alone.
        """
        await self._ready_for(min_seq)
        records = self._indexer.registry.agents(caller.namespace)
        owned = await asyncio.to_thread(self._index.facet, caller.namespace, "owner_agent", SearchFilter())
        agents = [_agent_info(agent, record, owned.get(agent, 0)) for agent, record in records.items()]
        agents += [AgentInfo(agent, None, None, count) for agent, count in owned.items() if agent not in records]
        return sorted(agents, key=lambda a: (-time_or_never(a.last_seen), a.agent_id))

    async def teams(self, caller: Caller, *, min_seq: int = 0) -> list[TeamInfo]:
        """The teams of the caller's namespace that have active memories, most recently active first."""
        await self._ready_for(min_seq)
        return await asyncio.to_thread(self._teams, caller.namespace)

    def _teams(self, namespace: str) -> list[TeamInfo]:
        every = list(STATUSES)
        teams = []
        for team, count in self._index.facet(namespace, "team", SearchFilter()).items():
            owners = self._index.facet(namespace, "owner_agent", SearchFilter(team=team))
            summary = self._index.recent(namespace, SearchFilter(team=team, memory_types=[TEAM_SUMMARY]), 1)
            changed = self._index.recent(namespace, SearchFilter(team=team, statuses=every), 1, by=VALID_FROM)
            last_activity = float(changed[0][VALID_FROM]) if changed else None
            summary_id = str(summary[0]["id"]) if summary else ""
            teams.append(TeamInfo(team, count, sorted(owners), summary_id, last_activity))
        return sorted(teams, key=lambda t: (-time_or_never(t.last_activity), t.team))

    async def count(self, caller: Caller) -> int:
        return await asyncio.to_thread(self._index.count, caller.namespace, None)

    async def log_last_seq(self) -> int:
        """The newest entry of the log, or 0 when the log cannot be asked right now."""
        return await self._indexer.log_last_seq()

    def _note(self, caller: Caller, memory_ids: Sequence[str] = ()) -> None:
        """Counts the reads of these memories, and the caller as a reader (the agent registry's last seen)."""
        if self._access is not None:
            self._access.note(caller, memory_ids)

    async def scan(
        self, caller: Caller, flt: SearchFilter, *, with_vectors: bool = False, min_seq: int = 0
    ) -> AsyncIterator[tuple[list[Memory], list[bytes]]]:
        """Every memory of the caller's namespace matching flt, a page at a time, with its dense vector as
        little-endian float32 bytes when asked (b"" when it has none)."""
        await self._ready_for(min_seq)
        pages = self._index.scan(caller.namespace, flt, with_vectors=with_vectors)
        while (page := await asyncio.to_thread(next, pages, None)) is not None:
            memories, vectors = [], []
            for payload, dense in page:
                memory = _memory(payload)
                if memory is not None:
                    memories.append(memory)
                    vectors.append(np.asarray(dense, dtype="<f4").tobytes() if with_vectors else b"")
            yield memories, vectors

    async def _ready_for(self, min_seq: int) -> None:
        self._indexer.require_ready()
        await self._indexer.check_min_seq(min_seq)
        await self._indexer.wait_for(min_seq, timeout=self._read_wait)


def _version_of(payload: dict[str, Any]) -> MemoryVersion:
    memory = Memory.from_dict(payload)
    return MemoryVersion(
        version=memory.version,
        content=memory.content,
        summary=memory.summary,
        agent_id=memory.updated_by or memory.owner_agent,
        source=memory.source,
        updated_at=memory.updated_at,
        seq=int(payload.get("seq", 0)),
        status=memory.status,
        event=str(payload.get("_event", "")),
        conflict=bool(payload.get("_conflict")),
    )


def _memory(payload: dict[str, Any]) -> Memory | None:
    """The memory of an index payload, or None (logged) for one that cannot be served back."""
    problem = servable_problem(payload)
    if problem is None:
        try:
            return Memory.from_dict(payload)
        except (KeyError, ValueError, TypeError, RecursionError) as e:
            problem = f"it cannot be read ({e})"
    log.warning("memory %s skipped: %s", payload.get("id", "?"), problem)
    return None


def _cold_last(hits: list[Hit]) -> list[Hit]:
    """Scores of memories in the cold tier (idle and of low importance, moved there by consolidation's decay) and
    not read since count COLD_WEIGHT of their value: they rank below warm memories that match as well."""
    demoted = False
    for hit in hits:
        if hit.memory.is_cold:
            hit.score *= COLD_WEIGHT
            demoted = True
    return sorted(hits, key=lambda h: h.score, reverse=True) if demoted else hits


def _summaries_below(hits: list[Hit], weight: float, about_sessions: bool) -> list[Hit]:
    """Session summaries count ``weight`` of their score, unless the query is ``about_sessions``: they rank below the
    observations they summarize, which say the same in fewer words."""
    if about_sessions or weight >= 1.0 or not any(h.memory.memory_type == SESSION_SUMMARY for h in hits):
        return hits
    for hit in hits:
        if hit.memory.memory_type == SESSION_SUMMARY:  # a reranker's logit may be negative: lowered all the same
            hit.score = hit.score * weight if hit.score > 0 else hit.score / weight
    return sorted(hits, key=lambda h: h.score, reverse=True)


def _without_tail(hits: list[Hit], exact: set[str], ratio: float) -> list[Hit]:
    """The hits down to a clear drop: when the best hit is an ``exact`` match, the hits that are not, scoring under
    ``ratio`` of the best, are left out (an identifier found exactly scores 1.0; what follows it at 0.15 is noise)."""
    if not hits or hits[0].memory.id not in exact:
        return hits
    cut = hits[0].score * ratio
    return [hit for hit in hits if hit.memory.id in exact or hit.score >= cut]


def _vector(candidate: _Candidate) -> np.ndarray:
    assert candidate.vector is not None
    return candidate.vector


def _stages(ranks: dict[str, int], scores: dict[str, float], rank: int, score: float) -> dict[str, tuple[int, float]]:
    stages = {source: (ranks.get(source, 0), scores.get(source, 0.0)) for source in SOURCES}
    stages[FUSED] = (rank, score)
    return stages


def _sources(sources: Sequence[str]) -> tuple[str, ...]:
    if not sources:
        return SOURCES
    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        raise InvalidArgument("sources", f"unknown {unknown}; use any of {', '.join(SOURCES)}.")
    return tuple(dict.fromkeys(sources))


def _agent_info(agent: str, record: AgentRecord, memories: int) -> AgentInfo:
    """The registry's record as the API shows it: lists most recently seen first."""
    return AgentInfo(
        agent_id=agent,
        first_seen=record.first_seen,
        last_seen=record.last_seen,
        memories=memories,
        devices=list(reversed(record.devices)),
        clients=list(reversed(record.clients)),
        teams=list(reversed(record.teams)),
        writes=record.writes,
    )


def _limit(limit: int, default: int) -> int:
    if limit == 0:
        return default
    if not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise InvalidArgument("limit", f"must be between 1 and {MAX_SEARCH_LIMIT}, got {limit}.")
    return limit
