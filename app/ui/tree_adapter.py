"""From the engine's research tree (``app.research.tree.TreeNode``) to the rows
the window shows (:class:`~app.ui.tree_model.ViewNode`).

Pure: no Qt widgets, no I/O. The run's root is not a row; its children are
the top-level rows. Each node's reasoning becomes a "Reasoning" child row
(one line; the full text in the detail pane), notices become rows too.
"""

from __future__ import annotations

from typing import Any

from app.research.tree import TreeNode
from app.ui.formatting import source_label
from app.ui.tree_model import ViewNode, ViewStatus

_REASONING_PREVIEW = 90


def _first_line(text: str, limit: int = _REASONING_PREVIEW) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def match_rank(detail: dict[str, Any]) -> str:
    """ "#2 of 10": where a passage came in its sub-question's search (#1 the closest match).
    One scale for every search; the raw scores (BM25, cosine, fused ranks) are not comparable."""
    rank, of = detail.get("rank"), detail.get("of")
    if not isinstance(rank, int):
        return ""
    return f"#{rank} of {of}" if isinstance(of, int) else f"#{rank}"


def to_view(root: TreeNode) -> ViewNode:
    # while a follow-up runs, only its branch is running: the first run's nodes are done
    follow_ups = any(child.kind == "followup" for child in root.children)
    running = root.status == "running" and not follow_ups
    return ViewNode(
        node_id=root.node_id,
        kind="root",
        label=root.label,
        status=root.status,
        children=_children(root, running, last_round=_last_of(root, "round")),
    )


def _last_of(node: TreeNode, kind: str) -> str | None:
    found = [child.node_id for child in node.children if child.kind == kind]
    return found[-1] if found else None


def _children(node: TreeNode, running: bool, last_round: str | None) -> tuple[ViewNode, ...]:
    rows: list[ViewNode] = []
    if node.reasoning.strip():
        rows.append(
            ViewNode(
                node_id=f"{node.node_id}#reasoning",
                kind="reasoning",
                label=f"Reasoning: {_first_line(node.reasoning)}",
                result=f"{len(node.reasoning):,} chars",
                detail=node.reasoning,
            )
        )
    for child in node.children:
        rows.append(_convert(child, running, last_round))
    for i, message in enumerate(node.notices):
        rows.append(
            ViewNode(
                node_id=f"{node.node_id}#notice{i}",
                kind="notice",
                label=_first_line(message, 160),
                detail=message,
                status="warning",
            )
        )
    return tuple(rows)


def _convert(node: TreeNode, running: bool, last_round: str | None) -> ViewNode:
    d: dict[str, Any] = node.detail
    kind = node.kind
    label, result, source, detail = node.label, "", "", ""
    status: ViewStatus = node.status
    if kind == "round":
        subqueries = sum(1 for c in node.children if c.kind == "subquery")
        result = f"{subqueries} sub-quer{'y' if subqueries == 1 else 'ies'}"
        status = "running" if running and node.node_id == last_round else "done"
    elif kind == "subquery":
        origin = str(d.get("origin", ""))
        if origin and origin not in ("decompose",):
            label = f"{node.label}  ({origin})"
        chunks = [c for c in node.children if c.kind == "chunk"]
        relevant = sum(1 for c in chunks if c.status == "relevant")
        judged = sum(1 for c in chunks if c.status in ("relevant", "irrelevant"))
        if "hits" not in d:
            result = "searching…" if running else "not searched"
            status = "running" if running else "cancelled"
        else:
            result = f"{d['hits']} hits" + (f", {relevant} relevant" if judged else "")
            status = "running" if running and judged < len(chunks) and chunks else "done"
        if "finding" in d:
            result += " · answered" if d.get("answered") else " · step done"
            detail = f"Finding: {d['finding']}"
        collections = d.get("collections") or []
        source = ", ".join(collections)
    elif kind == "chunk":
        verdict = {"relevant": "relevant", "irrelevant": "not relevant"}.get(
            node.status, "not judged"
        )
        result = f"{match_rank(d)} · {verdict}" if match_rank(d) else verdict
        source = source_label(str(d.get("path", "")), d.get("page"))
        detail = str(d.get("text", ""))
        if d.get("reason"):
            detail = f"{detail}\n\nJudgement: {d['reason']}"
        if d.get("path"):
            detail = (
                f"{d['path']}"
                + (f", page {d['page']}" if d.get("page") is not None else "")
                + f"\n\n{detail}"
            )
    elif kind == "reflection":
        gaps = list(d.get("gap_queries") or [])
        result = (
            f"{len(gaps)} gap quer{'y' if len(gaps) == 1 else 'ies'}" if gaps else "enough evidence"
        )
        detail = node.label + (
            "\n\nGap queries:\n" + "\n".join(f"• {g}" for g in gaps) if gaps else ""
        )
        status = "done" if node.status == "done" or not gaps else "info"
    elif kind == "plan":
        steps = list(d.get("steps") or [])
        result = f"{len(steps)} steps"
        detail = "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1))
        status = "done"
    elif kind == "report":
        status = "running" if running else "done"
        result = "writing…" if running else "written"
    elif kind == "followup":  # a follow-up question's branch: its own run
        running, last_round = node.status == "running", _last_of(node, "round")
        evidence = int(d.get("evidence", 0))
        result = (
            f"{evidence} new source{'' if evidence == 1 else 's'}"
            if not running
            else "researching…"
        )
        status = "done" if node.status == "finished" else node.status
    return ViewNode(
        node_id=node.node_id,
        kind=kind,
        label=label,
        result=result,
        source=source,
        detail=detail,
        status=status,
        children=_children(node, running, last_round),
    )
