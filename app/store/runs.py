"""RunStore: research runs persisted in the catalog (SQLite via sqlite-utils).

Tables (distinct from the library's): ``research_runs`` (one row per run:
question, mode, settings, status, report, usage), ``research_events`` (every
event of a run, in order, as ``event_to_dict`` JSON) and
``research_evidence`` (the evidence table). Replaying a run's events rebuilds
its research tree exactly.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlite_utils

from app.core.codec import from_jsonable, to_jsonable
from app.core.errors import StoreError
from app.core.events import Event, event_from_dict, event_to_dict
from app.core.models import Evidence, EvidenceStatus, Report, Usage
from app.core.paths import AppPaths

RUNS = "research_runs"
EVENTS = "research_events"
EVIDENCE = "research_evidence"


@dataclass(frozen=True)
class RunSummary:
    """One past run, as listed in history."""

    run_id: str
    question: str
    mode: str
    status: str  # running | finished | failed | cancelled
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

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class RunStore:
    """Research runs in one SQLite file (the catalog)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(str(path), timeout=30.0)
            self.db = sqlite_utils.Database(conn)
            self.db.execute("PRAGMA journal_mode=WAL")
            self._ensure_tables()
        except sqlite3.Error as exc:
            raise StoreError(f"The research history in {path} could not be opened ({exc}).") from exc

    @classmethod
    def open(cls, paths: AppPaths) -> RunStore:
        return cls(paths.ensure().catalog_file)

    def close(self) -> None:
        self.db.conn.close()

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
    ) -> None:
        with self.db.conn:
            self.db.table(RUNS).upsert(
                {
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
        row = self.db.execute(f"SELECT COALESCE(MAX(seq), 0) FROM {EVENTS} WHERE run_id = ?", [run_id]).fetchone()
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

    def delete_run(self, run_id: str) -> bool:
        with self.db.conn:
            found = self.db.execute(f"SELECT 1 FROM {RUNS} WHERE run_id = ?", [run_id]).fetchone() is not None
            for table in (EVENTS, EVIDENCE, RUNS):
                self.db.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
        return found

    # -- reading ------------------------------------------------------------

    def list_runs(self, limit: int = 50) -> list[RunSummary]:
        rows = self.db.query(f"SELECT * FROM {RUNS} ORDER BY started_at DESC LIMIT ?", [limit])
        return [_summary(row) for row in rows]

    def get_run(self, run_id: str) -> RunSummary | None:
        """A run by id, or by a unique prefix of its id."""
        rows = list(self.db.query(f"SELECT * FROM {RUNS} WHERE run_id = ?", [run_id]))
        if not rows:
            rows = list(self.db.query(f"SELECT * FROM {RUNS} WHERE run_id LIKE ? LIMIT 2", [run_id + "%"]))
            if len(rows) != 1:
                return None
        return _summary(rows[0])

    def load_events(self, run_id: str) -> list[Event]:
        rows = self.db.query(f"SELECT data FROM {EVENTS} WHERE run_id = ? ORDER BY seq", [run_id])
        return [event_from_dict(json.loads(row["data"])) for row in rows]

    def load_report(self, run_id: str) -> Report | None:
        """The finished (or partial, when stopped) report of a run, if it has one."""
        row = self.db.execute(f"SELECT report FROM {RUNS} WHERE run_id = ?", [run_id]).fetchone()
        if not row or not row[0]:
            return None
        report: Report = from_jsonable(Report, json.loads(row[0]))
        return report

    def load_evidence(self, run_id: str) -> list[Evidence]:
        rows = self.db.query(f"SELECT * FROM {EVIDENCE} WHERE run_id = ? ORDER BY number", [run_id])
        return [
            Evidence(
                number=row["number"],
                chunk_id=row["chunk_id"],
                subquery=row["subquery"] or "",
                quote=row["quote"] or "",
                path=row["path"] or "",
                page=row["page"],
                collection=row["collection"] or "",
                title=row["title"] or "",
                status=EvidenceStatus(row["status"] or "unverified"),
            )
            for row in rows
        ]


def _summary(row: dict[str, Any]) -> RunSummary:
    return RunSummary(
        run_id=row["run_id"],
        question=row["question"] or "",
        mode=row["mode"] or "",
        status=row["status"] or "",
        stop_reason=row["stop_reason"] or "",
        model=row["model"] or "",
        collections=tuple(json.loads(row["collections"] or "[]")),
        started_at=row["started_at"] or 0.0,
        finished_at=row["finished_at"],
        elapsed_s=row["elapsed_s"] or 0.0,
        prompt_tokens=row["prompt_tokens"] or 0,
        completion_tokens=row["completion_tokens"] or 0,
        calls=row["calls"] or 0,
        report_markdown=row["report_markdown"] or "",
        message=row["message"] or "",
    )
