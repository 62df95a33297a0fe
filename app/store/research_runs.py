"""Where a research run is saved: RunStore, in the catalog's file (SQLite via sqlite-utils).

Tables (distinct from the library's): ``research_runs`` (one row per run:
question, mode, settings, status, report, usage, and ``thread_id``: the first
run of the follow-up thread it belongs to, added by a migration to older files),
``research_events`` (every
event of a run, in order, as ``event_to_dict`` JSON) and
``research_evidence`` (the evidence table). Replaying a run's events rebuilds
its research tree exactly.

Reading never fails on one bad row: an unreadable event is skipped and
counted (:meth:`RunStore.read_events`), a summary row with a damaged field
gets a neutral value, a damaged report or evidence row is left out.

One job, not split: keeping research runs — written as they happen, read back
for History; the forgiving row readers at the bottom are the reading half of
the same three tables.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import sqlite_utils

from app.core.codec import from_jsonable, to_jsonable
from app.core.events import Event, Failed, Finished, RunStarted, event_to_dict
from app.core.models import Budget, Evidence, EvidenceStatus, Report, Usage
from app.core.paths import AppPaths
from app.store.event_log import EventLog, decode_rows
from app.store.sqlite_errors import open_error

log = logging.getLogger(__name__)

RUNS = "research_runs"
LAST_RUN = "last"  # the run id that names the latest run (`fathom show last`)
HISTORY_DAMAGED_HINT = (
    "Move it away to start an empty library; the documents will need to be added again "
    "and past runs are lost."
)
EVENTS = "research_events"
EVIDENCE = "research_evidence"


RunStatus = Literal["running", "finished", "failed", "cancelled"]  # a research run's state


@dataclass(frozen=True)
class RunSummary:
    """One past run, as listed in history."""

    run_id: str
    question: str
    mode: str
    status: RunStatus
    stop_reason: str = ""
    model: str = ""
    collections: tuple[str, ...] = ()
    started_at: float = 0.0
    finished_at: float | None = None
    elapsed_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    report_markdown: str = ""
    message: str = ""
    thread_id: str = ""  # the first run of its follow-up thread (its own id when it starts one)
    follow_ups: int = 0  # as listed by ``list_threads``: the runs that followed the first
    thread_question: str = ""  # as listed by ``list_threads``: the first run's question

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class RunStore:
    """Research runs in one SQLite file (the catalog)."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        try:
            if read_only:  # no lock, no writes: works while a window holds the data dir
                conn = sqlite3.connect(
                    path.absolute().as_uri() + "?mode=ro", uri=True, timeout=30.0
                )
                self.db = sqlite_utils.Database(conn)
                self.db.execute("SELECT 1 FROM sqlite_master LIMIT 1")  # a damaged file says so now
                # a history written before follow-ups has no thread_id (read as one run per thread)
                self.threads = "thread_id" in self.db.table(RUNS).columns_dict
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(path), timeout=30.0)
            self.db = sqlite_utils.Database(conn)
            self.db.execute("PRAGMA journal_mode=WAL")
            self._ensure_tables()
        except sqlite3.Error as exc:
            raise open_error("The research history in", path, exc, HISTORY_DAMAGED_HINT) from exc

    @classmethod
    def open(cls, paths: AppPaths) -> RunStore:
        return cls(paths.ensure().catalog_file)

    @classmethod
    def open_read_only(cls, paths: AppPaths) -> RunStore | None:
        """The history opened read-only (no lock taken, nothing written); None when there is
        none yet. StoreError when it exists but cannot be read."""
        if not paths.catalog_file.exists():
            return None
        store = cls(paths.catalog_file, read_only=True)
        if not store.db.table(RUNS).exists():
            store.close()
            return None
        return store

    def close(self) -> None:
        self.db.conn.close()

    def mark_interrupted_runs(self) -> int:
        """Runs still 'running' when this process took the data dir were cut short (a crash,
        a kill): they are marked 'interrupted', so History does not show them as running."""
        with self.db.conn:
            cursor = self.db.conn.execute(
                f"update {RUNS} set status = 'interrupted' where status = 'running'"
            )
        return int(cursor.rowcount)

    def _ensure_tables(self) -> None:
        self.db.table(RUNS).create(
            {
                "run_id": str,
                "question": str,
                "mode": str,
                "status": str,
                "stop_reason": str,
                "model": str,
                "collections": str,
                "budget": str,
                "started_at": float,
                "finished_at": float,
                "elapsed_s": float,
                "prompt_tokens": int,
                "completion_tokens": int,
                "calls": int,
                "report_markdown": str,
                "report": str,
                "message": str,
            },
            pk="run_id",
            if_not_exists=True,
        )
        self._ensure_thread_column()
        self.db.table(EVENTS).create(
            {"run_id": str, "seq": int, "type": str, "ts": float, "data": str},
            pk=("run_id", "seq"),
            if_not_exists=True,
        )
        self.db.table(EVIDENCE).create(
            {
                "run_id": str,
                "number": int,
                "chunk_id": str,
                "subquery": str,
                "quote": str,
                "path": str,
                "page": int,
                "collection": str,
                "title": str,
                "status": str,
            },
            pk=("run_id", "number"),
            if_not_exists=True,
        )
        self.db.table(RUNS).create_index(["started_at"], if_not_exists=True)

    def _ensure_thread_column(self) -> None:
        """History files written before follow-ups have no ``thread_id``: it is added
        (empty: each old run is a thread of its own). A file that cannot be changed
        (read-only) is still read, each run on its own."""
        self.threads = "thread_id" in self.db.table(RUNS).columns_dict
        if self.threads:
            return
        try:
            with self.db.conn:
                self.db.execute(f"ALTER TABLE {RUNS} ADD COLUMN thread_id TEXT")
            self.threads = True
        except sqlite3.OperationalError as exc:
            # another connection may have added it meanwhile ("duplicate column name")
            self.threads = "thread_id" in self.db.table(RUNS).columns_dict
            if not self.threads:
                log.info(
                    "history %s: no thread column (%s); follow-ups are not grouped", self.path, exc
                )

    # -- writing ------------------------------------------------------------

    def start_run(
        self,
        run_id: str,
        *,
        question: str,
        mode: str,
        model: str = "",
        collections: Sequence[str] = (),
        budget: Any = None,
        started_at: float | None = None,
        thread_id: str = "",
    ) -> None:
        thread = {"thread_id": thread_id or run_id} if self.threads else {}
        with self.db.conn:
            self.db.table(RUNS).upsert(
                {
                    **thread,
                    "run_id": run_id,
                    "question": question,
                    "mode": mode,
                    "status": "running",
                    "stop_reason": "",
                    "model": model,
                    "collections": json.dumps(list(collections)),
                    "budget": json.dumps(to_jsonable(budget)),
                    "started_at": started_at if started_at is not None else time.time(),
                    "report_markdown": "",
                    "message": "",
                },
                pk="run_id",
            )

    def append_events(self, run_id: str, events: Sequence[Event]) -> None:
        if not events:
            return
        row = self.db.execute(
            f"SELECT COALESCE(MAX(seq), 0) FROM {EVENTS} WHERE run_id = ?", [run_id]
        ).fetchone()
        seq = int(row[0]) if row else 0
        rows = []
        for event in events:
            seq += 1
            rows.append(
                {
                    "run_id": run_id,
                    "seq": seq,
                    "type": event.kind,
                    "ts": event.ts,
                    "data": json.dumps(event_to_dict(event), ensure_ascii=False),
                }
            )
        with self.db.conn:
            self.db.table(EVENTS).insert_all(rows)

    def save_evidence(self, run_id: str, evidence: Sequence[Evidence]) -> None:
        if not evidence:
            return
        rows = [{"run_id": run_id, **to_jsonable(e)} for e in evidence]
        with self.db.conn:
            self.db.table(EVIDENCE).upsert_all(rows, pk=("run_id", "number"))

    def finish_run(
        self,
        run_id: str,
        *,
        status: str,
        stop_reason: str = "",
        report: Report | None = None,
        usage: Usage | None = None,
        message: str = "",
        elapsed_s: float = 0.0,
    ) -> None:
        usage = usage or Usage(calls=0)
        with self.db.conn:
            self.db.table(RUNS).update(
                run_id,
                {
                    "status": status,
                    "stop_reason": stop_reason,
                    "finished_at": time.time(),
                    "elapsed_s": elapsed_s,
                    "prompt_tokens": usage.prompt_tokens,
                    "completion_tokens": usage.completion_tokens,
                    "calls": usage.calls,
                    "report_markdown": report.markdown if report else "",
                    "report": json.dumps(to_jsonable(report), ensure_ascii=False) if report else "",
                    "message": message,
                },
            )

    def delete_thread(self, run_id: str) -> int:
        """Delete every run of the thread ``run_id`` belongs to; how many were deleted."""
        runs = [r.run_id for r in self.thread_runs(run_id)]
        for one in runs:
            self.delete_run(one)
        return len(runs)

    def delete_run(self, run_id: str) -> bool:
        with self.db.conn:
            found = (
                self.db.execute(f"SELECT 1 FROM {RUNS} WHERE run_id = ?", [run_id]).fetchone()
                is not None
            )
            for table in (EVENTS, EVIDENCE, RUNS):
                self.db.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
        return found

    # -- reading ------------------------------------------------------------

    def list_runs(self, limit: int = 50) -> list[RunSummary]:
        rows = self.db.query(f"SELECT * FROM {RUNS} ORDER BY started_at DESC LIMIT ?", [limit])
        return [_summary(row) for row in rows]

    def list_threads(self, limit: int = 50) -> list[RunSummary]:
        """One row per thread (a run and its follow-ups), newest first: its latest run,
        with ``follow_ups`` and ``thread_question`` (the first run's question) filled in."""
        if not self.threads:
            return self.list_runs(limit)
        rows = self.db.query(
            f"""
            SELECT r.*, t.n - 1 AS follow_ups, t.first_question AS thread_question
            FROM {RUNS} r JOIN (
                SELECT COALESCE(NULLIF(thread_id, ''), run_id) AS tid, MAX(started_at) AS last, COUNT(*) AS n,
                       (SELECT f.question FROM {RUNS} f WHERE f.run_id = COALESCE(NULLIF(g.thread_id, ''), g.run_id))
                           AS first_question
                FROM {RUNS} g GROUP BY tid
            ) t ON COALESCE(NULLIF(r.thread_id, ''), r.run_id) = t.tid AND r.started_at = t.last
            ORDER BY r.started_at DESC LIMIT ?
            """,
            [limit],
        )
        return [_summary(row) for row in rows]

    def thread_runs(self, run_id: str) -> list[RunSummary]:
        """Every run of the thread ``run_id`` (an id or a unique prefix) belongs to, oldest
        first; [] when there is no such run."""
        summary = self.get_run(run_id)
        if summary is None:
            return []
        if not self.threads:
            return [summary]
        thread = summary.thread_id or summary.run_id
        rows = self.db.query(
            f"SELECT * FROM {RUNS} WHERE COALESCE(NULLIF(thread_id, ''), run_id) = ? ORDER BY started_at, run_id",
            [thread],
        )
        return [_summary(row) for row in rows]

    def get_run(self, run_id: str) -> RunSummary | None:
        """A run by id, by a unique prefix of its id, or the latest run (``last``)."""
        if run_id == LAST_RUN:
            latest = self.list_runs(limit=1)
            return latest[0] if latest else None
        rows = list(self.db.query(f"SELECT * FROM {RUNS} WHERE run_id = ?", [run_id]))
        if not rows:
            rows = list(
                self.db.query(f"SELECT * FROM {RUNS} WHERE run_id LIKE ? LIMIT 2", [run_id + "%"])
            )
            if len(rows) != 1:
                return None
        return _summary(rows[0])

    def load_events(self, run_id: str) -> list[Event]:
        """The run's events that can be read, in order (see :meth:`read_events`)."""
        return list(self.read_events(run_id).events)

    def read_events(self, run_id: str) -> EventLog:
        """The run's events, with the ones that could not be read counted and skipped.

        When the run's start or its end cannot be read although the run's row
        says it started (or ended), a stand-in is rebuilt from that row, so a
        reopened run still shows its question and its report.
        """
        rows = self.db.execute(
            f"SELECT seq, type, data FROM {EVENTS} WHERE run_id = ? ORDER BY seq", [run_id]
        )
        decoded = decode_rows(run_id, rows.fetchall())
        if not decoded.skipped:
            return decoded
        summary = self.get_run(run_id)
        if summary is None or summary.run_id != run_id:
            return decoded
        events = list(decoded.events)
        rebuilt: list[str] = []
        if not any(isinstance(e, RunStarted) for e in events):
            events.insert(0, _started_from(summary))
            rebuilt.append("its start")
        if (
            not any(isinstance(e, (Finished, Failed)) for e in events)
            and summary.status != "running"
        ):
            end = self._end_from(summary)
            if end is not None:
                events.append(end)
                rebuilt.append("its end and report")
        return EventLog(run_id, tuple(events), decoded.skipped, tuple(rebuilt))

    def _end_from(self, summary: RunSummary) -> Event | None:
        usage = Usage(
            summary.prompt_tokens,
            summary.completion_tokens,
            model=summary.model,
            calls=summary.calls,
        )
        if summary.status == "failed":
            return Failed(
                run_id=summary.run_id,
                message=summary.message,
                usage=usage,
                elapsed_s=summary.elapsed_s,
            )
        if summary.status not in ("finished", "cancelled"):
            return None
        report = self.load_report(summary.run_id) or Report(
            markdown=summary.report_markdown, evidence=tuple(self.load_evidence(summary.run_id))
        )
        stop_reason = summary.stop_reason or (
            "cancelled" if summary.status == "cancelled" else "completed"
        )
        return Finished(
            run_id=summary.run_id,
            report=report,
            usage=usage,
            stop_reason=stop_reason,
            elapsed_s=summary.elapsed_s,
            ts=summary.finished_at or summary.started_at,
        )

    def load_report(self, run_id: str) -> Report | None:
        """The finished (or partial, when stopped) report of a run, if it has one that can be read."""
        row = self.db.execute(f"SELECT report FROM {RUNS} WHERE run_id = ?", [run_id]).fetchone()
        if not row or not row[0]:
            return None
        try:
            report: Report = from_jsonable(Report, json.loads(row[0]))
        except (TypeError, ValueError, KeyError, RecursionError) as exc:
            log.warning("run %s: its stored report cannot be read (%s)", run_id, exc)
            return None
        return report

    def load_evidence(self, run_id: str) -> list[Evidence]:
        """The run's evidence table; a row that cannot be read is left out (and logged)."""
        rows = self.db.query(f"SELECT * FROM {EVIDENCE} WHERE run_id = ? ORDER BY number", [run_id])
        found: list[Evidence] = []
        for row in rows:
            evidence = _evidence(row)
            if evidence is None:
                log.warning("run %s: evidence row %r cannot be read", run_id, row.get("number"))
            else:
                found.append(evidence)
        return found


def _evidence(row: dict[str, Any]) -> Evidence | None:
    number, chunk_id = row.get("number"), row.get("chunk_id")
    if not isinstance(number, int) or not isinstance(chunk_id, str):
        return None
    try:
        status = EvidenceStatus(row.get("status") or "unverified")
    except ValueError:
        status = EvidenceStatus.UNVERIFIED
    page = row.get("page")
    return Evidence(
        number=number,
        chunk_id=chunk_id,
        subquery=_text(row.get("subquery")),
        quote=_text(row.get("quote")),
        path=_text(row.get("path")),
        page=page if isinstance(page, int) else None,
        collection=_text(row.get("collection")),
        title=_text(row.get("title")),
        status=status,
    )


def _started_from(summary: RunSummary) -> RunStarted:
    return RunStarted(
        run_id=summary.run_id,
        question=summary.question,
        mode=summary.mode,
        collections=summary.collections,
        budget=Budget(),
        model=summary.model,
        ts=summary.started_at,
    )


def _summary(row: dict[str, Any]) -> RunSummary:
    """A run's row as listed; a damaged field reads as empty rather than failing the list."""
    finished_at = row.get("finished_at")
    return RunSummary(
        run_id=_text(row.get("run_id")),
        question=_text(row.get("question")),
        mode=_text(row.get("mode")),
        status=cast(RunStatus, _text(row.get("status"))),  # as stored (a damaged row: another word)
        stop_reason=_text(row.get("stop_reason")),
        model=_text(row.get("model")),
        collections=_names(row.get("collections")),
        started_at=_number(row.get("started_at")),
        finished_at=_number(finished_at) if finished_at is not None else None,
        elapsed_s=_number(row.get("elapsed_s")),
        prompt_tokens=int(_number(row.get("prompt_tokens"))),
        completion_tokens=int(_number(row.get("completion_tokens"))),
        calls=int(_number(row.get("calls"))),
        report_markdown=_text(row.get("report_markdown")),
        message=_text(row.get("message")),
        thread_id=_text(row.get("thread_id")) or _text(row.get("run_id")),
        follow_ups=int(_number(row.get("follow_ups"))),
        thread_question=_text(row.get("thread_question")) or _text(row.get("question")),
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _names(value: Any) -> tuple[str, ...]:
    try:
        names = json.loads(value) if isinstance(value, str) and value else []
    except ValueError:
        return ()
    return tuple(n for n in names if isinstance(n, str)) if isinstance(names, list) else ()
