"""How an indexing (or re-index, re-scan, repair) is going: a progress bar with
Stop, the current line, the files seen (the last ``MAX_FILE_ROWS``) and the
files that failed. It only shows what the library controller reports."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QSize, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QLabel,
    QListView,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QWidget,
)

from app.core.events import (
    FileDone,
    FileStarted,
    IngestEvent,
    IngestFinished,
    IngestProgress,
    IngestStarted,
)
from app.ingest.skip_reasons import skipped_phrase
from app.ui.formatting import count, duration, short_path
from app.ui.tooltips import plain_tooltip

PATH_ROLE = Qt.ItemDataRole.UserRole + 4
MAX_FILE_ROWS = 400
STOPPING = "Stopping…"
SHOWN_SKIPPED = 20  # skipped files listed in the summary's tooltip; the rest are counted
_MARKS = {"indexed": "✓", "unchanged": "=", "skipped": "–", "failed": "✗", "removed": "−"}


class ElidedRows(QStyledItemDelegate):
    """Rows as wide as the list shows, so a long file name is elided in the middle
    (its end stays readable; the row's tooltip has the whole path) instead of cut off."""

    def sizeHint(
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QSize:
        hint = super().sizeHint(option, index)
        view = self.parent()
        if isinstance(view, QAbstractItemView):
            return QSize(max(1, view.viewport().width()), hint.height())
        return hint


def elide_rows(rows: QListWidget) -> None:
    rows.setItemDelegate(ElidedRows(rows))
    rows.setTextElideMode(Qt.TextElideMode.ElideMiddle)
    rows.setWordWrap(False)
    rows.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    rows.setResizeMode(QListView.ResizeMode.Adjust)  # laid out again (rows re-elided) when resized
    # every row is one line as wide as the list: laid out from the first row's size, not by
    # asking the delegate about each of the 400 rows each time a file is added (11 ms a file)
    rows.setUniformItemSizes(True)


class IngestProgressView:
    """The widgets, laid out by the library panel: :meth:`bar_row`, then the others in order."""

    def __init__(self) -> None:
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop indexing; it resumes where it stopped next time")
        self.progress = QProgressBar()
        self.progress.setObjectName("ingestProgress")
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("Idle")
        self.progress.setTextVisible(True)
        self.current_label = QLabel("")
        self.current_label.setWordWrap(True)
        self.files = QListWidget()
        self.files.setObjectName("ingestFiles")
        self.failures_label = QLabel("Failed files")
        self.failures = QListWidget()
        self.failures.setObjectName("ingestFailures")
        for rows in (self.files, self.failures):
            elide_rows(rows)
        self.failures_label.hide()
        self.failures.hide()
        self._file_rows: dict[str, QListWidgetItem] = {}
        self.skipped: list[tuple[str, str]] = []  # (path, reason) of this ingest's skipped files
        self._stopping = False  # Stop was pressed; the controller has not said it stopped yet

    def bar_row(self) -> QHBoxLayout:
        row = QHBoxLayout()
        row.addWidget(self.progress, 1)
        row.addWidget(self.stop_button)
        return row

    def widgets(self) -> list[tuple[QWidget, int]]:
        """The widgets under the bar, with their stretch."""
        return [
            (self.current_label, 0),
            (self.files, 2),
            (self.failures_label, 0),
            (self.failures, 1),
        ]

    # -- what the controller reports --------------------------------------
    def start(self, doing: str) -> None:
        self.files.clear()
        self._file_rows.clear()
        self.skipped.clear()
        self.current_label.setToolTip("")
        self.failures.clear()
        self.failures.hide()
        self.failures_label.hide()
        self.progress.setRange(0, 0)  # busy until the file count is known
        self.progress.setFormat(doing)
        self.current_label.setText("")
        self._stopping = False

    def stopped(self, text: str, clear_line: bool) -> None:
        self._stopping = False
        self.progress.setRange(0, 1)  # not busy: stopped
        self.progress.setFormat(text)
        if clear_line:
            self.current_label.setText("")

    def failed(self, message: str) -> None:
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("Stopped")
        self.current_label.setText(message)
        self.current_label.setObjectName("errorText")

    def repaired(self, consistent: bool) -> None:
        self.progress.setRange(0, 1)
        self.progress.setValue(1)
        self.progress.setFormat("Repair done" if consistent else "Repair: problems remain")

    @property
    def is_stopping(self) -> bool:
        return self._stopping

    def stopping(self) -> None:
        """Stop was pressed: said at once, and Stop cannot be pressed again meanwhile."""
        self._stopping = True
        self.stop_button.setEnabled(False)
        self.progress.setFormat(STOPPING)

    def show_event(self, event: IngestEvent) -> None:
        if self._stopping and isinstance(event, (FileStarted, IngestProgress)):
            return
        if isinstance(event, IngestStarted):
            self.progress.setRange(0, max(event.total_files, 1))
            self.progress.setValue(0)
            self.progress.setFormat(f"{event.collection}: 0 / {event.total_files} files")
        elif isinstance(event, FileStarted):
            self._file_row(event.path).setText(f"… {short_path(event.path, 3)}")
        elif isinstance(event, FileDone):
            self._file_done(event)
        elif isinstance(event, IngestProgress):
            self.progress.setRange(0, max(event.total_files, 1))
            self.progress.setValue(event.done_files)
            if self._stopping:
                return  # what was under way as Stop was pressed: old news
            if event.eta_s is not None:
                eta = f" — ETA {duration(event.eta_s)}"
            else:  # no rate to go by yet (none needed once every file is through)
                eta = " — ETA estimating…" if event.done_files < event.total_files else ""
            self.progress.setFormat(
                f"{event.done_files} / {event.total_files} files ({event.fraction:.0%}){eta}"
            )
            ocr = f" — {event.ocr}" if event.ocr else ""
            self.current_label.setText(f"{event.collection}: {event.chunks:,} chunks so far{ocr}")
        elif isinstance(event, IngestFinished):
            self._finished(event)

    # -- rows -------------------------------------------------------------
    def _file_row(self, path: str) -> QListWidgetItem:
        row = self._file_rows.get(path)
        if row is None:
            row = QListWidgetItem(short_path(path, 3))
            row.setToolTip(plain_tooltip(path))
            row.setData(PATH_ROLE, path)
            self.files.addItem(row)
            self._file_rows[path] = row
            while self.files.count() > MAX_FILE_ROWS:
                old = self.files.takeItem(0)
                if old is not None:
                    self._file_rows.pop(old.data(PATH_ROLE), None)
        return row

    def _file_done(self, event: FileDone) -> None:
        detail = f"{event.chunks} chunks" if event.status == "indexed" else event.status
        if event.reason:
            detail += f": {event.reason}"
        row = self._file_row(event.path)
        row.setText(f"{_MARKS.get(event.status, '·')} {short_path(event.path, 3)} — {detail}")
        row.setToolTip(
            plain_tooltip(f"{event.path}\n{detail}")
        )  # the reason in full, however narrow the list
        if event.status == "failed":
            self._add_failure(event.path, event.reason)
        elif event.status == "skipped":
            self.skipped.append((event.path, event.reason))
        self.files.scrollToBottom()

    def _add_failure(self, path: str, reason: str) -> None:
        item = QListWidgetItem(f"{Path(path).name}: {reason or 'failed'}")
        item.setToolTip(plain_tooltip(f"{path}\n{reason}"))
        item.setData(PATH_ROLE, path)
        self.failures.addItem(item)
        self.failures.show()
        self.failures_label.show()

    def _finished(self, event: IngestFinished) -> None:
        total = event.indexed + event.unchanged + event.skipped + event.failed
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(max(total, 1))
        self.progress.setFormat(f"{event.collection}: done, {total} / {total} files")
        skipped = skipped_phrase(event.skipped, [reason for _, reason in self.skipped])
        self.current_label.setText(
            f"{count(event.indexed, 'file')} indexed, {event.unchanged} unchanged, {skipped}, "
            f"{event.failed} failed, {event.removed} removed; {event.chunks:,} chunks in {duration(event.elapsed_s)}"
        )
        self.current_label.setToolTip(
            plain_tooltip(_skipped_details(self.skipped)) if self.skipped else ""
        )
        known = {self.failures.item(i).data(PATH_ROLE) for i in range(self.failures.count())}
        for path, reason in event.failures:
            if path not in known:
                self._add_failure(path, reason)


def _skipped_details(skipped: list[tuple[str, str]]) -> str:
    """The skipped files with their reasons (the summary line's tooltip)."""
    lines = ["Skipped:"] + [
        f"{short_path(path, 3)}: {reason}" for path, reason in skipped[:SHOWN_SKIPPED]
    ]
    if len(skipped) > SHOWN_SKIPPED:
        lines.append(f"… and {len(skipped) - SHOWN_SKIPPED} more")
    return "\n".join(lines)
