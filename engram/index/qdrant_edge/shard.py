"""One loaded Qdrant Edge shard and the index port's operations on it, in plain data: run in the node's process or
in a process of its own (engram.index.qdrant_edge.process), the caller holding its lock."""

from __future__ import annotations

import logging
import pickle
import shutil
import time
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from engram.index import BOOKKEEPING_IDS, DENSE, FLOAT_FIELDS, INDEXED_FIELDS, KEY, KEYWORD_FIELDS, POINT, IndexDamaged
from engram.index.filters import Filter
from engram.index.qdrant_edge.disk import (
    CONFIG_FILE,
    EMPTY,
    EMPTY_KIND,
    FLUSH_ROOM,
    LOADED_ONLY,
    REWRITING,
    copy_tree,
    read_text,
    sibling,
)
from engram.index.qdrant_edge.payload import (
    Vectors,
    dense,
    key,
    packed,
    plain_vectors,
    query_vector,
    to_shard,
    to_shard_vectors,
    unpacked,
)
from engram.index.qdrant_edge.settings import ShardSettings
from engram.process.health import MIB
from engram.process.heap import page_out

log = logging.getLogger(__name__)

CHECK_PAGE = 256  # points per read while checking the files at start: a page of vectors is ~8 MiB as Python lists

# A point to write, as plain data: its stored id, its vectors (see payload.Vectors) and its payload.
Point = tuple[str, Vectors, dict[str, Any]]
# A point read back: its stored id, its payload as written, its vectors (plain; {} when not asked for).
Record = tuple[str, dict[str, Any], Vectors]
WRITES = frozenset({"upsert", "delete", "set_payload", "set_vectors", "write_raw"})  # what apply() replays


class ShardCore:
    """The shard at ``path``, loaded (or created empty). Not thread-safe: its owner serializes the calls."""

    def __init__(self, path: Path, settings: ShardSettings, *, beside: Path | None = None) -> None:
        """``beside``: the index whose EMPTY copy a new shard starts from (``path`` itself by default)."""
        self.path = path
        self._beside = beside or path
        self.settings = settings
        # A shard stored with other vector settings is loaded as it is (its config file unchanged, so a crash before
        # the rebuild finds it again) and check() asks for a rebuild from the log: storage settings apply to
        # segments when they are written.
        self.storage_problem: str | None = None
        self._shard = self._open()

    def _open(self) -> qe.EdgeShard:
        if (self.path / CONFIG_FILE).exists() or any(self.path.glob("segments*")):
            self.storage_problem = self.settings.stored_otherwise(self.path)
            try:
                shard = qe.EdgeShard.load(str(self.path), None if self.storage_problem else self.settings.config())
            except Exception as e:  # the Rust side reports any damage as a plain Exception
                raise IndexDamaged(str(self.path), f"it cannot be loaded ({e})") from e
            page_out(self.path, LOADED_ONLY)
            return shard
        return create(self.path, self.settings, beside=self._beside)

    # Writes

    def upsert(self, points: list[Point]) -> None:
        written = [qe.Point(pid, to_shard_vectors(vectors), packed(payload)) for pid, vectors, payload in points]
        self._shard.update(qe.UpdateOperation.upsert_points(written))

    def write_records(self, records: list[Record]) -> None:
        """Writes points as another shard stored them (scroll with ``raw``): payloads already packed."""
        written = [qe.Point(pid, to_shard_vectors(vectors), payload) for pid, payload, vectors in records]
        self._shard.update(qe.UpdateOperation.upsert_points(written))

    def write_raw(self, points: list[tuple[str, dict[str, Any]]]) -> None:
        """Upserts bookkeeping points as they are (no vectors, payloads not packed)."""
        self._shard.update(qe.UpdateOperation.upsert_points([qe.Point(pid, {}, payload) for pid, payload in points]))

    def delete(self, flt: Filter) -> None:
        self._shard.update(qe.UpdateOperation.delete_points_by_filter(to_shard(flt)))

    def set_payload(self, point_ids: list[str], values: dict[str, Any]) -> None:
        self._shard.update(qe.UpdateOperation.set_payload(list[Any](point_ids), values))

    def set_vectors(self, point_id: str, vectors: Vectors) -> None:
        self._shard.update(qe.UpdateOperation.update_vectors([qe.PointVectors(point_id, to_shard_vectors(vectors))]))

    def apply(self, writes: list[bytes]) -> None:
        """Applies writes recorded elsewhere (a build's replay), in order: one call for all of them, so that a
        replay in another process costs one round trip, not one per write, and catches up with a writer that goes on
        (one round trip per write kept pace with the writer's own and never caught up, seen in a test). Each write
        is the pickled method name and arguments (engram.index.qdrant_edge.swap), from the node that started this
        process: the socket pair it came over already carries pickles (multiprocessing.connection)."""
        for write in writes:
            method, args = pickle.loads(write)
            if method not in WRITES:
                raise ValueError(f"not a write of the shard: {method!r}")
            getattr(self, method)(*args)

    # Reads

    def retrieve(self, point_ids: list[str], *, vectors: bool | list[str] = False) -> list[Record]:
        records = self._shard.retrieve(list[Any](point_ids), with_payload=True, with_vector=vectors)
        return [(str(r.id), unpacked(r.payload), plain_vectors(r.vector)) for r in records if r.payload]

    def raw(self, point_id: str) -> dict[str, Any]:
        """A bookkeeping point's payload as written ({} when absent)."""
        records = self._shard.retrieve([point_id], with_payload=True, with_vector=False)
        return dict(records[0].payload) if records and records[0].payload else {}

    def scroll(
        self,
        flt: Filter | None,
        limit: int,
        offset: str | None = None,
        *,
        vectors: bool | list[str] = False,
        order_by: str | None = None,
        raw: bool = False,
    ) -> tuple[list[Record], str | None]:
        """A page of points (newest first by the float field ``order_by`` when given), and where the next starts.
        With ``raw``, every point (bookkeeping ones too) with its payload as stored (for a copy: write_records)."""
        order = qe.OrderBy(order_by, qe.Direction.Desc) if order_by else None
        request = qe.ScrollRequest(
            offset=offset, limit=limit, filter=to_shard(flt) if flt is not None else None, with_payload=True,
            with_vector=vectors, order_by=order,
        )  # fmt: skip
        records, next_offset = self._shard.scroll(request)
        if raw:
            page = [(str(r.id), r.payload or {}, plain_vectors(r.vector)) for r in records]
            return page, None if next_offset is None else str(next_offset)
        page = [(str(r.id), unpacked(r.payload), plain_vectors(r.vector)) for r in records if r.payload]
        return page, None if next_offset is None else str(next_offset)

    def listing(self, flt: Filter, limit: int, offset: str | None, order_by: str | None) -> list[dict[str, Any]]:
        """The payloads of a listing's page, each with its stored point id (POINT: a listing's tie order)."""
        page, _ = self.scroll(flt, limit, offset, order_by=order_by)
        return [{**payload, POINT: pid} for pid, payload, _ in page]

    def scan_page(
        self, flt: Filter, limit: int, offset: str | None, with_vectors: bool
    ) -> tuple[list[tuple[dict[str, Any], list[float]]], str | None]:
        page, next_offset = self.scroll(flt, limit, offset, vectors=[DENSE] if with_vectors else False)
        return [(payload, dense(vectors) if with_vectors else []) for _, payload, vectors in page], next_offset

    def search(
        self, flt: Filter, limit: int, queries: list[tuple[str, Any]], with_payload: bool | list[str]
    ) -> list[list[tuple[str, float, dict[str, Any]]]]:
        """Per query (vector name, vector; a sparse one as (indices, values)): its hits as (key, score, payload).
        ``with_payload``: True, the whole payload; otherwise the key and the (top-level) fields it lists."""
        selector = True if with_payload is True else qe.PayloadSelector.Include([KEY, *(with_payload or ())])
        condition = to_shard(flt)
        batch = qe.QueryBatchRequest(
            [
                qe.QueryRequest(
                    limit=limit,
                    query=qe.Query.Nearest(query_vector(name, vector), using=name),
                    filter=condition,
                    with_payload=selector,
                )
                for name, vector in queries
            ]
        )
        results = self._shard.query_batch(batch) if queries else []
        return [[(key(p.payload, p.id), float(p.score), unpacked(p.payload or {})) for p in hits] for hits in results]

    def count(self, flt: Filter) -> int:
        return int(self._shard.count(qe.CountRequest(exact=True, filter=to_shard(flt))))

    def facet(self, field: str, flt: Filter, limit: int) -> dict[str, int]:
        response = self._shard.facet(qe.FacetRequest(field, limit=limit, exact=True, filter=to_shard(flt)))
        return {str(hit.value): int(hit.count) for hit in response.hits if hit.value not in (None, "")}

    def point_count(self) -> int:
        total = int(self._shard.info().points_count)
        bookkeeping = len(self._shard.retrieve(list[Any](BOOKKEEPING_IDS), with_payload=False, with_vector=False))
        return total - bookkeeping

    def check(self) -> str | None:
        if self.storage_problem is not None:
            return self.storage_problem
        schema = set(self._shard.info().payload_schema)
        missing = [name for name in INDEXED_FIELDS if name not in schema]
        if missing:
            return f"payload indexes missing: {', '.join(missing)}"
        return self._unreadable()

    def _unreadable(self) -> str | None:
        """Reads every point's payload and vectors once and queries each vector index: a file truncated or
        overwritten while the node was stopped loads without complaint, and then fails every search that touches
        it (measured); found here, the indexer rebuilds the index instead. The payloads' pages are handed back
        after (see LOADED_ONLY)."""
        offset, probe = None, dict[str, Any]()
        try:
            while True:
                request = qe.ScrollRequest(offset=offset, limit=CHECK_PAGE, with_payload=True, with_vector=True)
                records, offset = self._shard.scroll(request)
                probe = probe or next((r.vector for r in records if isinstance(r.vector, dict) and r.vector), {})
                if offset is None:
                    break
            for name, vector in probe.items():
                self._shard.query(qe.QueryRequest(limit=1, query=qe.Query.Nearest(vector, using=name)))
        except Exception as e:  # the Rust side reports any damage as a plain Exception
            return f"its files cannot be read ({e})"
        finally:
            page_out(self.path, ("/payload_storage/",))
        return None

    # Housekeeping

    def flush(self) -> None:
        free = shutil.disk_usage(self.path).free
        if free < FLUSH_ROOM:
            log.warning("index not flushed: only %d MiB free in %s; its WAL replays what it holds at the next start",
                        free // MIB, self.path)  # fmt: skip
            return
        self._shard.flush()

    def optimize(self) -> bool:
        """Builds the vector index of the segments that need one (holding the GIL of the process it runs in)."""
        started = time.monotonic()
        optimized = bool(self._shard.optimize())
        if optimized:
            # The segments it merged stay mapped, in memory and on disk, until the next flush (measured: 300
            # MiB at 50k memories, until the node stopped); a flush costs about 70 ms.
            self._shard.flush()
        log.info("built the vector index of %s in %.1fs", self.path, time.monotonic() - started)
        return optimized

    def page_out(self, root: Path | None = None) -> None:
        """Hands back the pages a load read and later searches hardly touch (see LOADED_ONLY), mapped under ``root``
        (the shard's path by default; after a swap's renames, the name its files have now)."""
        page_out(root or self.path, LOADED_ONLY)

    def close(self) -> None:
        self._shard.close()


def create(path: Path, settings: ShardSettings, *, beside: Path) -> qe.EdgeShard:
    """A new, empty shard at ``path``: a copy of the EMPTY one kept beside the index at ``beside`` when there is one
    made with the same settings, otherwise created (and then kept as EMPTY for the next time)."""
    empty, kind = sibling(beside, EMPTY), settings.empty_kind()
    if path.is_dir() and not any(path.iterdir()):
        path.rmdir()
    if not path.exists() and read_text(empty / EMPTY_KIND) == kind:
        try:
            copy_tree(empty, path)
            (path / EMPTY_KIND).unlink()
            return qe.EdgeShard.load(str(path), settings.config())
        except Exception:  # a damaged copy: created anew below (the Rust side raises plain Exceptions)
            log.warning("the empty index kept at %s cannot be used; creating one", empty, exc_info=True)
            shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True, exist_ok=True)
    shard = qe.EdgeShard.create(str(path), settings.config())
    shard.update(qe.UpdateOperation.create_field_index("namespace", qe.KeywordIndexParams(is_tenant=True)))
    for name in KEYWORD_FIELDS:
        shard.update(qe.UpdateOperation.create_field_index(name, qe.PayloadSchemaType.Keyword))
    for name in FLOAT_FIELDS:
        shard.update(qe.UpdateOperation.create_field_index(name, qe.PayloadSchemaType.Float))
    _keep_empty(shard, path, empty, kind)
    return shard


def _keep_empty(shard: qe.EdgeShard, path: Path, empty: Path, kind: str) -> None:
    """Keeps a copy of a shard just created (nothing in it yet) as ``empty``; without room, none is kept."""
    making = empty.with_name(empty.name + REWRITING)
    try:
        shard.flush()
        shutil.rmtree(making, ignore_errors=True)
        copy_tree(path, making)
        (making / EMPTY_KIND).write_text(kind)
        shutil.rmtree(empty, ignore_errors=True)
        making.rename(empty)
    except OSError as e:
        log.info("no empty index kept beside %s (%s); a rebuild creates one anew", path, e)
        shutil.rmtree(making, ignore_errors=True)
