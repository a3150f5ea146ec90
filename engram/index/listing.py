"""Recent-first listing in a total order (a time field descending, then id ascending) from two index queries.

A listing orders by creation time (CREATED_TS) or by the time of the last change (VALID_FROM): see ORDERS.
Qdrant orders a scroll by one payload field only, and a memory id cannot be that field (order_by takes numbers
and datetimes). So a page is assembled from two queries both adapters have: `by_time` (newest first, ties in
any order) and `at_time` (one timestamp's points in point id order, Qdrant's default scroll order, resumable from
a point id). Any number of memories may share a timestamp, a whole namespace included: a tie group is walked by
point id, `limit` at a time, like any other stretch of the listing. The adapters add each payload's stored point
id as POINT (derived from the namespace and the memory id: engram.index.point_id).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engram.index import CREATED_TS, POINT, Position

Payload = dict[str, Any]
# by_time(older_than, limit): newest first, time < older_than (None: no bound); ties in any order.
ByTime = Callable[[float | None, int], list[Payload]]
# at_time(ts, from_point, limit): exactly that time, point ids >= from_point ("": all) in ascending order.
AtTime = Callable[[float, str, int], list[Payload]]


def recent_page(
    by_time: ByTime, at_time: AtTime, limit: int, after: Position | None, *, by: str = CREATED_TS
) -> list[Payload]:
    """The `limit` payloads that follow `after` in (payload[by] desc, point id asc) order; fewer only at the end.

    A page costs two queries (the rest of the previous page's last tie group, then the next newest points),
    and a third when it ends inside a tie group, which is then re-read in id order: the time query returns a
    group's points in no particular order, so it may cut the group anywhere.
    """

    def key(payload: Payload) -> tuple[float, str]:
        return order_key(payload, by)

    page: list[Payload] = []
    position = after
    while len(page) < limit:
        want = limit - len(page)
        if position is not None:
            group = _rest_of_group(at_time, position, want)
            page.extend(group)
            if len(group) == want:
                break
            want -= len(group)
        # One more than needed tells whether the page ends on a whole timestamp group or cuts one.
        older = by_time(position.ts if position is not None else None, want + 1)
        if len(older) <= want:  # the end of the listing: every group in it is complete
            page.extend(sorted(older, key=key))
            break
        cut = older[want - 1][by]
        if older[want][by] != cut:
            page.extend(sorted(older[:want], key=key))
            break
        # The group at `cut` goes on past this page and came back in no particular order: keep the complete
        # groups before it, and read it from its start, by id, on the next turn.
        page.extend(sorted((p for p in older if p[by] != cut), key=key))
        position = Position(cut)
    return page


def _rest_of_group(at_time: AtTime, position: Position, want: int) -> list[Payload]:
    if not position.id:
        return at_time(position.ts, "", want)
    # Qdrant's scroll offset is inclusive: ask for one more and drop the position's own memory if it is there.
    group = at_time(position.ts, position.id, want + 1)
    return [p for p in group if p[POINT] != position.id][:want]


def order_key(payload: Payload, by: str = CREATED_TS) -> tuple[float, str]:
    """The listing order as a sort key: newest first by the field `by`, then by point id."""
    return -float(payload[by]), str(payload[POINT])
