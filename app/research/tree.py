"""The research tree as a pure function of a run's events.

``build_tree(events)`` folds events into a tree of :class:`TreeNode`;
``TreeBuilder.apply(event)`` does one step and says what changed, so the
window's Qt item model can mirror it incrementally (inserted node / updated
node). Replaying a persisted run's events gives exactly the same tree.

Node kinds: ``run`` (root), ``round``, ``plan``, ``subquery``, ``chunk``
(a hit of a sub-query, with its judgement), ``reflection``, ``report``, and
``followup``: the branch of a follow-up question. A thread's runs are folded
into one tree, the first run's at the root and each follow-up's (a run whose
``RunStarted.follows`` is set) under its own branch, its node ids prefixed with
its run id; the root's status is the latest run's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from app.core.events import (
    ROOT_NODE,
    ChunkJudged,
    Event,
    EvidenceAdded,
    Failed,
    Finished,
    Notice,
    PlanWritten,
    ReasoningDelta,
    Reflected,
    ReportStarted,
    RoundStarted,
    RunStarted,
    SearchFinished,
    StepFinished,
    SubQueryPlanned,
    UsageUpdated,
)

REPORT_NODE = "report"


# what a node of the research tree is: the run, a follow-up's branch, a round of searches,
# one sub-query, a chunk it found, a reflection, a plan, the report
NodeKind = Literal["run", "followup", "round", "subquery", "chunk", "reflection", "plan", "report"]
# a run or follow-up: running, finished, failed, cancelled; a chunk: relevant, irrelevant or
# not judged (""); a reflection: done or not ("")
NodeStatus = Literal[
    "", "running", "finished", "failed", "cancelled", "relevant", "irrelevant", "done"
]


@dataclass
class TreeNode:
    node_id: str
    kind: NodeKind
    label: str
    parent_id: str | None = None
    status: NodeStatus = ""
    detail: dict[str, Any] = field(default_factory=dict)
    reasoning: str = ""
    notices: list[str] = field(default_factory=list)
    children: list[TreeNode] = field(default_factory=list)

    def find(self, node_id: str) -> TreeNode | None:
        if self.node_id == node_id:
            return self
        for child in self.children:
            found = child.find(node_id)
            if found is not None:
                return found
        return None

    def walk(self) -> Iterable[TreeNode]:
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass(frozen=True)
class TreeChange:
    """What one event did: ``inserted`` (node ids, in order) and ``updated`` node ids."""

    inserted: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()


def chunk_node_id(subquery_node: str, chunk_id: str) -> str:
    return f"{subquery_node}/{chunk_id}"


class TreeBuilder:
    """Applies events one at a time to a tree rooted at ``ROOT_NODE``."""

    def __init__(self) -> None:
        self.root = TreeNode(ROOT_NODE, "run", "", status="running")
        self._index: dict[str, TreeNode] = {ROOT_NODE: self.root}
        self._first_run = ""
        self._branches: dict[str, str] = {}  # a follow-up's run id -> its branch node

    def node(self, node_id: str) -> TreeNode | None:
        return self._index.get(node_id)

    def _insert(self, node: TreeNode) -> TreeChange:
        if node.node_id in self._index:
            existing = self._index[node.node_id]
            existing.label, existing.detail = node.label, {**existing.detail, **node.detail}
            return TreeChange(updated=(node.node_id,))
        parent = self._index.get(node.parent_id or ROOT_NODE, self.root)
        node.parent_id = parent.node_id
        parent.children.append(node)
        self._index[node.node_id] = node
        return TreeChange(inserted=(node.node_id,))

    def _target(self, node_id: str) -> TreeNode:
        return self._index.get(node_id, self.root)

    def apply(self, event: Event) -> TreeChange:
        run_id = str(getattr(event, "run_id", ""))
        if (
            isinstance(event, RunStarted)
            and event.follows
            and self._first_run
            and run_id != self._first_run
        ):
            return self._start_branch(event)
        branch = self._branches.get(run_id)
        if branch is not None:
            return self._apply_in_branch(event, run_id, self._index[branch])
        if isinstance(event, RunStarted):
            self._first_run = self._first_run or run_id
        return self._apply(event)

    def _start_branch(self, event: RunStarted) -> TreeChange:
        node_id = f"followup:{event.run_id}"
        self._branches[event.run_id] = node_id
        self.root.status = "running"
        branch = TreeNode(
            node_id,
            "followup",
            f"Follow-up: {event.question}",
            ROOT_NODE,
            status="running",
            detail={"mode": event.mode, "run_id": event.run_id, "question": event.question},
        )
        change = self._insert(branch)
        return TreeChange(inserted=change.inserted, updated=(ROOT_NODE,))

    def _apply_in_branch(self, event: Event, run_id: str, branch: TreeNode) -> TreeChange:
        """A follow-up's event, placed under its branch (node ids prefixed with its run id)."""
        if isinstance(event, ReportStarted):
            return self._insert(
                TreeNode(f"{run_id}/{REPORT_NODE}", "report", "Report", branch.node_id)
            )
        if isinstance(event, EvidenceAdded):
            branch.detail["evidence"] = branch.detail.get("evidence", 0) + 1
            return TreeChange(updated=(branch.node_id,))
        if isinstance(event, UsageUpdated):
            branch.detail["tokens"] = event.total.total_tokens
            branch.detail["calls"] = event.total.calls
            return TreeChange(updated=(branch.node_id,))
        if isinstance(event, (Finished, Failed)):
            self._apply(event)
            branch.status = self.root.status
            branch.detail.update(
                {k: v for k, v in self.root.detail.items() if k in ("stop_reason", "message")}
            )
            return TreeChange(updated=(ROOT_NODE, branch.node_id))
        changes: dict[str, Any] = {}
        for name in ("node_id", "parent_id"):
            value = getattr(event, name, None)
            if isinstance(value, str):
                changes[name] = branch.node_id if value == ROOT_NODE else f"{run_id}/{value}"
        return self._apply(dataclasses.replace(event, **changes) if changes else event)  # type: ignore[type-var]

    def _apply(self, event: Event) -> TreeChange:
        if isinstance(event, RunStarted):
            self.root.label = event.question
            self.root.detail.update(
                mode=event.mode, model=event.model, collections=list(event.collections)
            )
            return TreeChange(updated=(ROOT_NODE,))
        if isinstance(event, RoundStarted):
            return self._insert(
                TreeNode(
                    event.node_id,
                    "round",
                    f"Round {event.round_no}",
                    event.parent_id,
                    detail={"round": event.round_no},
                )
            )
        if isinstance(event, PlanWritten):
            return self._insert(
                TreeNode(
                    event.node_id,
                    "plan",
                    "Plan",
                    event.parent_id,
                    detail={"steps": list(event.steps)},
                )
            )
        if isinstance(event, SubQueryPlanned):
            return self._insert(
                TreeNode(
                    event.node_id,
                    "subquery",
                    event.text,
                    event.parent_id,
                    detail={
                        "origin": event.origin,
                        "round": event.round_no,
                        "collections": list(event.collections),
                    },
                )
            )
        if isinstance(event, SearchFinished):
            inserted: list[str] = []
            for rank, hit in enumerate(event.hits, 1):
                node_id = chunk_node_id(event.node_id, hit.chunk.chunk_id)
                label = hit.chunk.title or hit.chunk.heading_path or hit.chunk.path
                change = self._insert(
                    TreeNode(
                        node_id,
                        "chunk",
                        label,
                        event.node_id,
                        detail={
                            "chunk_id": hit.chunk.chunk_id,
                            "score": round(
                                hit.score, 6
                            ),  # on its search's own scale (BM25, cosine, RRF)
                            "rank": rank,  # what the window shows: one scale for every search
                            "of": len(event.hits),
                            "path": hit.chunk.path,
                            "page": hit.chunk.page,
                            "text": hit.chunk.text[:300],
                        },
                    )
                )
                inserted += change.inserted
            sub = self._target(event.node_id)
            sub.detail["hits"] = sub.detail.get("hits", 0) + len(event.hits)
            return TreeChange(inserted=tuple(inserted), updated=(sub.node_id,))
        if isinstance(event, ChunkJudged):
            node = self._index.get(chunk_node_id(event.node_id, event.chunk_id))
            if node is None:
                return TreeChange()
            node.status = "relevant" if event.relevant else "irrelevant"
            if event.reason:
                node.detail["reason"] = event.reason
            return TreeChange(updated=(node.node_id,))
        if isinstance(event, ReasoningDelta):
            node = self._target(event.node_id)
            node.reasoning += event.text
            return TreeChange(updated=(node.node_id,))
        if isinstance(event, Reflected):
            return self._insert(
                TreeNode(
                    event.node_id,
                    "reflection",
                    event.summary or ("Enough evidence" if event.done else "Reflection"),
                    event.parent_id,
                    status="done" if event.done else "",
                    detail={"gap_queries": list(event.gap_queries)},
                )
            )
        if isinstance(event, StepFinished):
            node = self._target(event.node_id)
            node.detail.update(finding=event.finding, answered=event.answered)
            return TreeChange(updated=(node.node_id,))
        if isinstance(event, EvidenceAdded):
            self.root.detail["evidence"] = self.root.detail.get("evidence", 0) + 1
            return TreeChange(updated=(ROOT_NODE,))
        if isinstance(event, ReportStarted):
            return self._insert(TreeNode(REPORT_NODE, "report", "Report", ROOT_NODE))
        if isinstance(event, Notice):
            node = self._target(event.node_id)
            node.notices.append(event.message)
            return TreeChange(updated=(node.node_id,))
        if isinstance(event, UsageUpdated):
            self.root.detail["tokens"] = event.total.total_tokens
            self.root.detail["calls"] = event.total.calls
            return TreeChange(updated=(ROOT_NODE,))
        if isinstance(event, Finished):
            self.root.status = "cancelled" if event.stop_reason == "cancelled" else "finished"
            self.root.detail["stop_reason"] = event.stop_reason
            return TreeChange(updated=(ROOT_NODE,))
        if isinstance(event, Failed):
            self.root.status = "failed"
            self.root.detail["message"] = event.message
            return TreeChange(updated=(ROOT_NODE,))
        return TreeChange()


def build_tree(events: Iterable[Event]) -> TreeNode:
    builder = TreeBuilder()
    for event in events:
        builder.apply(event)
    return builder.root
