"""A follow-up question for real: the starter model (SmolLM2-135M through
llama-cpp-python) over a real Milvus Lite library of real MuSiQue paragraphs
(tests/musique_thread.py): first "Who performed the live EP Maiden Japan?", then
"Where was that band formed?", which names the band only through the first answer.

The tiny model's wording is not asserted; what the follow-up is given and does is:
its prompts carry the earlier question and answer fenced as data, the earlier
evidence keeps its numbers and is offered for citing, its searches are new ones
(among them the rule-written ones that name the earlier answer's band), it finds
the passage that answers it, and the thread reopens whole from the history.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from musique_thread import ANSWER_FILE, FIRST, FOLLOW_UP, FOLLOW_UP_FILE, ingest_paragraphs
from prompt_audit import RecordingModel, fence_spans

from app.core.events import Finished, IngestFinished, RunStarted, SearchFinished, SubQueryPlanned
from app.core.models import Budget
from app.core.paths import AppPaths
from app.core.settings import Settings
from app.ingest.library import Library
from app.llm.llamacpp import LlamaCppModel
from app.research.citations import cited_numbers, split_report
from app.research.engine import ResearchEngine
from app.research.follow_up import follow_up_queries, load_prior, thread_markdown
from app.research.query_hygiene import normalise_query
from app.research.tree import build_tree
from app.store.research_runs import RunStore

pytestmark = pytest.mark.slow

_HEAD = re.compile(r'<document id="([^"]*)"(?: title="([^"]*)")?>\n(.*)</document>', re.DOTALL)


def fences(messages: list[dict[str, str]]) -> list[tuple[str, str, str]]:
    """(id, title, body) of every fence in ``messages`` (strictly parsed: prompt_audit)."""
    out = []
    for message in messages:
        text = message["content"]
        for start, end in fence_spans(text):
            match = _HEAD.match(text[start:end])
            assert match is not None
            out.append((match.group(1), match.group(2) or "", match.group(3)))
    return out


BUDGET = Budget(max_rounds=1, max_subqueries=4, top_k=3, max_seconds=300, max_concurrent_calls=1)
OPTIONS = {"report_max_tokens": 160, "prompt_chars": 3000}


@pytest.fixture(scope="module")
def corpus(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> AppPaths:
    paths, files, finished = ingest_paragraphs(
        shared_data, tmp_path_factory.mktemp("follow-up-real")
    )
    assert (
        isinstance(finished, IngestFinished)
        and finished.failed == 0
        and finished.indexed == len(files)
    )
    return paths


async def test_a_follow_up_that_needs_the_first_answer(
    corpus: AppPaths, starter_llm: LlamaCppModel
) -> None:
    library = Library.open(Settings(), corpus)
    runs = RunStore.open(corpus)
    try:
        engine = ResearchEngine(starter_llm, library, runs)
        first = [e async for e in engine.run(FIRST, budget=BUDGET, options=OPTIONS)]
        done = first[-1]
        assert isinstance(done, Finished), done
        assert any(e.path.endswith(ANSWER_FILE) for e in done.report.evidence), done.report.evidence

        prior = load_prior(runs, done.run_id)
        recording = RecordingModel(starter_llm)
        engine = ResearchEngine(recording, library, runs)  # type: ignore[arg-type]
        second = [
            e async for e in engine.run(FOLLOW_UP, budget=BUDGET, options=OPTIONS, follow_up=prior)
        ]
        final = second[-1]
        assert isinstance(final, Finished), final
        assert isinstance(second[0], RunStarted) and second[0].follows == done.run_id

        # the first planning prompt (decompose) carries the earlier question and answer, fenced
        decompose = recording.prompts[0]
        earlier = [f for f in fences(decompose) if f[0] == "earlier answer 1"]
        assert earlier and earlier[0][1] == FIRST
        body, _ = split_report(done.report.markdown)
        assert " ".join(body.split())[:40] in " ".join(earlier[0][2].split())
        assert "follow-up question" in decompose[0]["content"]

        # the earlier evidence keeps its numbers, and the report writer is offered it to cite
        before = {e.number: e.chunk_id for e in done.report.evidence}
        after = {e.number: e.chunk_id for e in final.report.evidence}
        assert {n: after[n] for n in before} == before
        # the report's findings step reads the documents (the writer then reads its quotes)
        writer = next(
            p for p in reversed(recording.prompts) if "You read documents" in p[0]["content"]
        )
        offered = {f[0] for f in fences(writer)}
        assert {str(n) for n in before} & offered, offered
        assert "earlier answer 1" in offered
        assert set(cited_numbers(final.report.markdown)) <= set(after)

        # its searches are new: none repeats the first run's, and the rule-written ones
        # (the band's name from the first answer) are among them
        searched = [e.text for e in second if isinstance(e, SubQueryPlanned)]
        earlier_searches = {
            normalise_query(e.text) for e in first if isinstance(e, SubQueryPlanned)
        }
        assert not {normalise_query(t) for t in searched} & earlier_searches, searched
        named = follow_up_queries(FOLLOW_UP, prior)
        assert named and set(named[:2]) <= set(searched), (named, searched)
        found = {h.chunk.path for e in second if isinstance(e, SearchFinished) for h in e.hits}
        assert any(p.endswith(FOLLOW_UP_FILE) for p in found), found
        assert any(e.path.endswith(FOLLOW_UP_FILE) for e in final.report.evidence)

        # the thread reopens whole: one entry, both runs' events, one tree, one report
        (thread,) = [t for t in runs.list_threads() if t.thread_id == done.run_id]
        assert thread.run_id == final.run_id and thread.follow_ups == 1
        stored = [
            runs.read_events(r.run_id).replay_events() for r in runs.thread_runs(final.run_id)
        ]
        assert [s[0].run_id for s in stored] == [done.run_id, final.run_id]
        tree = build_tree([e for events in stored for e in events])
        assert tree.label == FIRST and tree.children[-1].label == f"Follow-up: {FOLLOW_UP}"
        assert any(n.kind == "subquery" for n in tree.children[-1].walk())
        markdown = thread_markdown([(FIRST, done.report), (FOLLOW_UP, final.report)])
        assert markdown.count("## Sources") == 1 and f"## Follow-up: {FOLLOW_UP}" in markdown
        print(f"\nfollow-up searches: {searched}\nfollow-up report:\n{final.report.markdown}")
    finally:
        runs.close()
        await library.aclose()
