"""A recorded run's content, read from the history, for ``fathom export``."""

from __future__ import annotations

from app.core.models import Report
from app.export.content import ReportContent, content_of
from app.export.formats import ExportError
from app.research.follow_up import thread_markdown, thread_steps
from app.store.research_runs import RunStore


def stored_content(store: RunStore, run_id: str) -> ReportContent:
    """What run ``run_id`` (or a unique prefix of it) left to export; a run with
    follow-ups exports its whole thread (each answer a section, one Sources list),
    as the window shows it.

    Raises ExportError, with a sentence to show, for an unknown run, one still in
    progress, one that failed or was cut short, and one with no report."""
    summary = store.get_run(run_id)
    if summary is None:
        raise ExportError(f"No research run '{run_id}'. List runs with `fathom history`.")
    if summary.status == "running":
        raise ExportError(
            f"Run {summary.run_id} is still in progress: export it when it has finished."
        )
    if summary.status in ("failed", "interrupted"):
        why = f" ({summary.message})" if summary.message else ""
        raise ExportError(
            f"Run {summary.run_id} {summary.status}{why}: it has no report to export."
        )
    report = store.load_report(summary.run_id)
    if report is None:
        report = Report(
            markdown=summary.report_markdown, evidence=tuple(store.load_evidence(summary.run_id))
        )
    if not report.markdown.strip() and report.table is None:
        raise ExportError(f"Run {summary.run_id} has no report to export.")
    steps = thread_steps(store, summary.run_id)
    if len(steps) > 1:
        latest = steps[-1][1]  # its evidence holds the thread's, numbered as every answer cites it
        return ReportContent(
            question=steps[0][0], markdown=thread_markdown(steps), evidence=latest.evidence
        )
    return content_of(summary.question, report)
