"""What an answer leaves out or ranks lower (services/search/reader.py): session summaries below the observations
they summarize unless the query is about sessions, and after an identifier's exact match the tail that is not one."""

from __future__ import annotations

import uuid

from engram.model import Memory
from engram.results import Hit
from engram.services.search.queries import about_sessions
from engram.services.search.reader import PipelineConfig, _summaries_below, _without_tail

CONFIG = PipelineConfig()


def hit(score: float, memory_type: str = "observation") -> Hit:
    memory = Memory(id=str(uuid.uuid4()), namespace="ns", content=f"{memory_type} {score}", owner_agent="claude-code",
                    memory_type=memory_type)  # fmt: skip
    return Hit(memory, score)


def test_a_summary_ranks_below_the_observation_it_summarizes_unless_the_query_is_about_sessions() -> None:
    summary, observation = hit(0.8, "session-summary"), hit(0.5)
    ranked = _summaries_below([summary, observation], CONFIG.summary_weight, about_sessions("why does login fail?"))
    assert ranked == [observation, summary] and summary.score == 0.4
    asked = [hit(0.8, "session-summary"), hit(0.5)]
    kept = _summaries_below(list(asked), CONFIG.summary_weight, about_sessions("what did yesterday's session do?"))
    assert kept == asked and kept[0].score == 0.8


def test_after_an_exact_match_of_an_identifier_the_tail_that_is_not_one_is_left_out() -> None:
    exact, also_exact, close, noise = hit(1.0), hit(0.1), hit(0.4), hit(0.17)
    found = {exact.memory.id, also_exact.memory.id}
    assert _without_tail([exact, close, noise, also_exact], found, CONFIG.tail_ratio) == [exact, close, also_exact]
    no_exact_top = [close, noise, exact]  # the best hit is no exact match: nothing stands out
    assert _without_tail(no_exact_top, found, CONFIG.tail_ratio) == no_exact_top
