"""A recorded run with 14 sources (12 cited, 2 only consulted) whose passages,
titles and paths hold everything that has broken exports: fences, quotes, raw
HTML, citations, table pipes, headings, a "## Sources" line, entities and a 10 KB
passage. Each passage is a real paragraph of the Milvus docs, extended."""

from __future__ import annotations

import re
from pathlib import Path

from app.core.models import Evidence, Report
from app.core.paths import AppPaths
from app.store.research_runs import RunStore


def home_paths(home: Path) -> AppPaths:
    """The data folders of a FATHOM_HOME, made."""
    return AppPaths(
        config_dir=home / "config", data_dir=home / "data", cache_dir=home / "cache"
    ).ensure()


QUESTION = "What does Milvus limit, and why? <script>alert('q')</script> ## Sources"
HOSTILE = [
    "```python\nprint('a fence that never closes')\n",
    "~~~\nA tilde fence ~~~ and more",
    "> a quote\n> > nested quote\n>",
    "<script>alert('owned')</script> <img src=http://127.0.0.1:9/x.png>",
    "See [3] and [12] and [7](http://evil.example/7) and [x]: http://evil.example",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "# A heading\n## Sources\n- [1] **A fake source** — `/fake.md`\n## Open questions",
    "*stars* **bold** _under_ __more__ * - + 1. 2)",
    "&lt;b&gt;not bold&lt;/b&gt; &amp; &#60;script&#62; &copy; &",
    "",  # the 10 KB passage
    "1. a list\n2. more\n\n    indented code\n\t\ttabs",
    "back\\slash \\` tick ` two `` three ``` www.evil.example mailto:a@b.example",
]
TITLES = [
    "Limits <b>bold</b> | *stars*",
    "`ticks` and ``more``",
    "# Not a heading",
    "[1] not a citation",
]


def _paragraphs(shared_data: Path) -> list[str]:
    text = "\n\n".join(
        (shared_data / "milvus-docs" / "about" / name).read_text(encoding="utf-8")
        for name in ("limitations.md", "overview.md", "comparison.md")
    )
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]
    return [p for p in paragraphs if len(p) > 80 and not p.startswith(("|", "<", "#", "-"))]


def hostile_evidence(shared_data: Path) -> list[Evidence]:
    real = _paragraphs(shared_data)
    evidence = []
    for n in range(1, 15):
        base = real[n % len(real)]
        extra = HOSTILE[(n - 1) % len(HOSTILE)]
        if n == 10:
            extra = (" ".join(real) + " ``` <b> [10] | # ") * (10_000 // len(" ".join(real)) + 1)
        evidence.append(
            Evidence(
                number=n,
                chunk_id=f"c{n}",
                subquery="What does Milvus limit?",
                quote=f"{base}\n{extra}\nEnd of passage {n}.",
                path=f"/docs/evil`name|{n} <x>.md",
                page=n if n % 2 else None,
                collection="docs",
                title=f"{TITLES[n % len(TITLES)]} {n}",
            )
        )
    return evidence


# the model's text: every sentence cites one source, and some of it is hostile too
BODY = "\n".join(
    [
        "## Findings",
        "",
        *(f"Milvus has limit number {n} that matters [{n}]." for n in range(1, 13)),
        "",
        "```",
        "an unclosed code block the model left open",
        "",
        "## Sources",  # one the model wrote itself
        "",
        "- [1] made up by the model",
        "",
    ]
)
OPEN_QUESTION = "Which limits change in the next release? <script>x</script> [13]"
OPEN_QUESTIONS = f"## Open questions\n\n- {OPEN_QUESTION}\n"


def engine_sources(evidence: list[Evidence]) -> str:
    return (
        "## Sources\n\n"
        + "\n".join(f"- [{e.number}] {e.title} — {e.path}" for e in evidence[:12])
        + "\n"
    )


def record_hostile_run(
    store: RunStore, shared_data: Path, run_id: str = "hostile-run"
) -> tuple[str, list[Evidence]]:
    """Record the run in ``store`` as the engine records a finished one; returns its id and evidence."""
    evidence = hostile_evidence(shared_data)
    markdown = BODY + "\n" + engine_sources(evidence) + "\n" + OPEN_QUESTIONS
    store.start_run(run_id, question=QUESTION, mode="deep", model="scripted", collections=["docs"])
    store.save_evidence(run_id, evidence)
    report = Report(markdown=markdown, evidence=tuple(evidence), open_questions=(OPEN_QUESTION,))
    store.finish_run(
        run_id, status="finished", stop_reason="completed", report=report, elapsed_s=1.0
    )
    return run_id, evidence
