"""Follow-up questions, control flow (scripted model, in-memory library, real
history file): a follow-up run starts from its thread's evidence under the same
numbers, its first prompt carries the earlier answer fenced, it does not repeat
the thread's searches, its tree hangs under a branch, and the history keeps the
thread as one entry (old history files included)."""

from __future__ import annotations

from typing import Any

import pytest
from history_fixture import DEEP_RUN, restore
from scripted import MemoryLibrary, ScriptedModel, collect, make_chunk, verdicts

from app.core.events import EvidenceAdded, Finished, RunStarted, SubQueryPlanned
from app.core.models import Budget, Evidence, Report
from app.core.paths import app_paths
from app.research.citations import cited_numbers
from app.research.engine import ResearchEngine
from app.research.follow_up import (
    FollowUpError,
    Prior,
    Step,
    follow_up_queries,
    load_prior,
    thread_markdown,
)
from app.research.query_hygiene import normalise_query
from app.research.tree import build_tree
from app.store.research_runs import RunStore

FIRST = "Who performed the live EP Maiden Japan?"
SECOND = "Where was that band formed?"
CHUNKS = [
    make_chunk("japan", "Maiden Japan is a live EP by the British heavy metal band Iron Maiden."),
    make_chunk(
        "leyton",
        "Iron Maiden are an English heavy metal band formed in Leyton, East London, in 1975.",
    ),
    make_chunk("lane", "Maiden Lane is a pedestrian mall located in San Francisco."),
]
BUDGET = Budget(max_rounds=1, max_subqueries=4, top_k=2)


def script() -> dict[str, Any]:
    return {
        "decompose": {"sub_queries": ["Maiden Japan performer"]},
        "judge": {"relevant": [1]},
        "reflect": {"done": True, "summary": "", "gap_queries": []},
        "citation_check": verdicts(),
    }


async def ask(
    store: RunStore, question: str, text: str, prior: Prior | None = None
) -> tuple[list[Any], ScriptedModel]:
    model = ScriptedModel(script(), text=text)
    engine = ResearchEngine(model, MemoryLibrary(list(CHUNKS)), store)
    events = await collect(
        engine.run(question, budget=BUDGET, follow_up=prior, options={"bridge_queries": False})
    )
    return events, model


@pytest.fixture
def store() -> Any:
    runs = RunStore.open(app_paths())
    yield runs
    runs.close()


async def test_a_follow_up_continues_the_thread_with_its_evidence_numbers(store: RunStore) -> None:
    first, _ = await ask(store, FIRST, "Maiden Japan is a live EP by Iron Maiden [1].")
    done = first[-1]
    assert isinstance(done, Finished)
    earlier = {e.number: e.chunk_id for e in done.report.evidence}
    assert earlier[1] == "japan"

    prior = load_prior(store, done.run_id)
    assert prior.run_id == done.run_id and prior.thread_id == done.run_id
    assert [s.question for s in prior.steps] == [FIRST]
    new_number = len(earlier) + 1
    second, model = await ask(
        store, SECOND, f"The band Iron Maiden [1] was formed in Leyton [{new_number}].", prior=prior
    )
    final = second[-1]
    assert isinstance(final, Finished), final
    started = second[0]
    assert isinstance(started, RunStarted) and started.follows == done.run_id

    # the first planning prompt carries the earlier question and answer, fenced as data
    (decompose,) = model.calls_for("decompose")
    assert f'<document id="earlier answer 1" title="{FIRST}">' in decompose.prompt
    assert "Iron Maiden [1]" in decompose.prompt
    assert "follow-up question" in decompose.messages[0]["content"]
    # the report writer sees the earlier answer too, and the earlier passage under its number
    (writer,) = model.calls_for("text")
    assert (
        '<document id="earlier answer 1"' in writer.prompt and '<document id="1"' in writer.prompt
    )

    # its searches are new ones, including one written from the earlier answer's names
    searched = [e.text for e in second if isinstance(e, SubQueryPlanned)]
    before = {normalise_query(t) for t in prior.searched}
    assert searched and not {normalise_query(t) for t in searched} & before
    assert any("Iron Maiden" in t and "formed" in t for t in searched), searched

    # earlier evidence keeps its numbers (and is not added again); new evidence comes after
    evidence = {e.number: e.chunk_id for e in final.report.evidence}
    assert {n: evidence[n] for n in earlier} == earlier
    assert evidence[new_number] == "leyton"
    added = [e.evidence.number for e in second if isinstance(e, EvidenceAdded)]
    assert added and min(added) > len(earlier)
    assert set(cited_numbers(final.report.markdown.split("## Sources")[0])) == {1, new_number}
    assert (
        "- [1] Title japan" in final.report.markdown
        and f"- [{new_number}] Title leyton" in final.report.markdown
    )

    # the history keeps one thread: listed once, both runs in order
    threads = store.list_threads()
    assert [(t.run_id, t.follow_ups, t.thread_question) for t in threads] == [
        (final.run_id, 1, FIRST)
    ]
    assert [r.run_id for r in store.thread_runs(final.run_id)] == [done.run_id, final.run_id]
    assert [r.run_id for r in store.thread_runs(done.run_id)] == [done.run_id, final.run_id]
    assert len(store.list_runs()) == 2

    # a follow-up of the follow-up sees both earlier answers
    again = load_prior(store, done.run_id)  # any run of the thread: it continues from the latest
    assert [s.question for s in again.steps] == [FIRST, SECOND] and again.run_id == final.run_id

    # the thread's tree: the first run at the root, the follow-up under its own branch
    tree = build_tree([*first, *second])
    assert tree.label == FIRST and tree.status == "finished"
    branch = tree.children[-1]
    assert (
        branch.kind == "followup"
        and branch.label == f"Follow-up: {SECOND}"
        and branch.status == "finished"
    )
    first_nodes = {n.node_id for n in tree.walk() if n is not tree} - {
        n.node_id for n in branch.walk()
    }
    assert all(not n.startswith(final.run_id) for n in first_nodes)
    inside = [n for n in branch.walk() if n is not branch]
    assert {n.kind for n in inside} >= {"round", "subquery", "chunk", "report"}
    assert all(n.node_id.startswith(final.run_id + "/") for n in inside)

    # the thread as one report: both answers, the follow-up under its heading, one Sources list
    markdown = thread_markdown([(FIRST, done.report), (SECOND, final.report)])
    assert markdown.count("## Sources") == 1 and f"## Follow-up: {SECOND}" in markdown
    assert (
        markdown.index("Maiden Japan is a live EP")
        < markdown.index("## Follow-up")
        < markdown.index("Leyton")
    )


async def test_only_a_finished_run_can_be_followed_up(store: RunStore) -> None:
    with pytest.raises(FollowUpError, match="No research run 'nope' to follow up"):
        load_prior(store, "nope")
    store.start_run("20260101-000000-aaaaaa", question=FIRST, mode="deep")
    with pytest.raises(
        FollowUpError, match="is still running: only a finished run can be followed up"
    ):
        load_prior(store, "20260101-000000-aaaaaa")
    store.finish_run("20260101-000000-aaaaaa", status="failed", message="no model")
    with pytest.raises(FollowUpError, match="failed"):
        load_prior(store, "20260101-000000")


def test_follow_up_queries_take_the_names_of_the_earlier_answer() -> None:
    evidence = Evidence(1, "japan", FIRST, CHUNKS[0].text, "/data/japan.md", title="Maiden Japan")
    report = Report(
        markdown="The EP is by Iron Maiden [1].\n\n## Sources\n\n- [1] x\n", evidence=(evidence,)
    )
    prior = Prior(thread_id="t", steps=(Step("t", FIRST, report),))
    queries = follow_up_queries(SECOND, prior)
    assert (
        queries[0] == "band formed Iron Maiden"
    )  # the question's words the answer lacks, and its name
    assert all("formed" in q for q in queries)


def test_an_old_history_file_gains_threads_and_its_runs_stay_alone() -> None:
    path = restore(app_paths().ensure().catalog_file)
    store = RunStore(path)  # the migration adds the thread column
    try:
        assert store.threads
        runs = store.list_runs()
        threads = store.list_threads()
        assert [t.run_id for t in threads] == [
            r.run_id for r in runs
        ]  # each old run its own thread
        assert all(t.follow_ups == 0 and t.thread_id == t.run_id for t in threads)
        assert [r.run_id for r in store.thread_runs(DEEP_RUN)] == [DEEP_RUN]
        prior = load_prior(store, DEEP_RUN)
        assert prior.thread_id == DEEP_RUN and prior.evidence == tuple(
            store.load_evidence(DEEP_RUN)
        )
    finally:
        store.close()
    reopened = RunStore(path)  # a second opening finds the column and changes nothing
    try:
        assert reopened.threads and len(reopened.list_threads()) == len(threads)
    finally:
        reopened.close()


def test_a_follow_up_report_keeps_the_earlier_numbers_and_numbers_its_own_after_them() -> None:
    from app.research.report import finish_report

    evidence = [Evidence(n, f"c{n}", "q", f"quote {n}", f"/data/{n}.md") for n in (1, 2, 3, 4)]
    text = "The new fact [4]. The earlier fact [1]."
    markdown, renumbered, _, _ = finish_report(text, evidence, [], [], carried_over=2)
    assert [(e.number, e.chunk_id) for e in renumbered] == [
        (1, "c1"),
        (2, "c2"),
        (3, "c4"),
        (4, "c3"),
    ]
    assert markdown.startswith("The new fact [3]. The earlier fact [1].")
    sources = markdown.split("## Sources")[1].split("## Open questions")[0]
    assert [line for line in sources.splitlines() if line.startswith("- ")] == [
        "- [1] /data/1.md",
        "- [3] /data/4.md",
    ]


@pytest.mark.parametrize("mode", ["hds", "table"])
async def test_hds_and_table_follow_ups_plan_with_the_earlier_answer(
    store: RunStore, mode: str
) -> None:
    first, _ = await ask(store, FIRST, "Maiden Japan is a live EP by Iron Maiden [1].")
    done = first[-1]
    assert isinstance(done, Finished)
    prior = load_prior(store, done.run_id)
    replies: dict[str, Any] = {
        "citation_check": verdicts(),
        "table_plan": {
            "entity_type": "band",
            "columns": ["formed in"],
            "queries": ["Maiden Japan performer"],
        },
        "extract_entities": {"entities": []},
    }
    # hds: one turn asks for a search made earlier in the thread and a new one, then answers
    report = "Iron Maiden formed in Leyton [1]."
    turn = (
        "<|begin search queries|>Maiden Japan performer\nIron Maiden formed<|end search queries|>"
    )
    model = ScriptedModel(
        replies, text=[turn, "\\boxed{Leyton}", report] if mode == "hds" else report
    )
    engine = ResearchEngine(model, MemoryLibrary(list(CHUNKS)), store)
    events = await collect(engine.run(SECOND, mode=mode, budget=BUDGET, follow_up=prior))
    assert isinstance(events[-1], Finished), events[-1]

    planning = model.calls_for("text")[0] if mode == "hds" else model.calls_for("table_plan")[0]
    assert f'<document id="earlier answer 1" title="{FIRST}">' in planning.prompt
    assert "Iron Maiden [1]" in planning.prompt
    assert "follow-up question" in planning.messages[0]["content"]
    if mode == "hds":  # the thread's earlier search is not made again
        searched = {normalise_query(e.text) for e in events if isinstance(e, SubQueryPlanned)}
        assert normalise_query("Iron Maiden formed") in searched
        assert not searched & {normalise_query(t) for t in prior.searched}
