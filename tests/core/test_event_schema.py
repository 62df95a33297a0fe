"""Stored events carry a schema version; an event that does not fit its type is
refused with a reason (so a reader can skip it), never turned into a wrong object."""

from __future__ import annotations

from typing import Any

import pytest

from app.core import events as ev
from app.core.models import Chunk, Hit

CHUNK = Chunk("c1", "d1", "docs", "/x/a.md", "text", title="A", page=4, chunk_no=2)


def stored(event: ev.Event) -> dict[str, Any]:
    return ev.event_to_dict(event)


def test_every_stored_event_says_its_schema_version() -> None:
    data = stored(ev.RoundStarted(run_id="r", node_id="n1", round_no=1))
    assert data["v"] == ev.SCHEMA_VERSION >= 1
    assert data["type"] == "RoundStarted"


def test_an_event_from_before_versions_existed_still_reads() -> None:
    event = ev.SubQueryPlanned(
        run_id="r", node_id="q1", parent_id="n1", text="sub", collections=("a",)
    )
    data = stored(event)
    del data["v"]  # what the first versions wrote
    assert ev.event_from_dict(data) == event


def test_an_optional_field_the_writer_did_not_know_takes_its_default() -> None:
    data = stored(ev.Notice(run_id="r", message="careful", level="warning"))
    del data["node_id"]
    assert ev.event_from_dict(data) == ev.Notice(
        run_id="r", message="careful", level="warning", ts=data["ts"]
    )


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda d: d.update(type="Teleported"), "unknown event type 'Teleported'"),
        (lambda d: d.pop("type"), "no event type"),
        (lambda d: d.pop("round_no"), "lacks 'round_no'"),
        (lambda d: d.update(colour="blue"), "no field 'colour'"),
        (lambda d: d.update(round_no="1"), "expected int, got str"),
        (lambda d: d.update(round_no=True), "expected int, got a boolean"),
        (lambda d: d.update(node_id=None), "got null"),
        (lambda d: d.update(v="one"), "bad schema version"),
    ],
    ids=[
        "unknown-type",
        "no-type",
        "missing",
        "extra",
        "wrong-type",
        "bool-for-int",
        "null",
        "bad-version",
    ],
)
def test_a_malformed_event_is_refused_with_its_reason(change: Any, reason: str) -> None:
    data = stored(ev.RoundStarted(run_id="r", node_id="n1", round_no=1))
    change(data)
    with pytest.raises(ev.EventDecodeError, match=reason):
        ev.event_from_dict(data)


def test_nested_values_are_checked_too() -> None:
    data = stored(ev.SearchFinished(run_id="r", node_id="q1", hits=(Hit(CHUNK, 0.5, "q"),)))
    bad_hit = {
        **data,
        "hits": [{"chunk": {"chunk_id": "c1"}, "score": 0.5}],
    }  # a chunk without its fields
    with pytest.raises(ev.EventDecodeError, match="SearchFinished"):
        ev.event_from_dict(bad_hit)
    not_a_list = {**data, "hits": "c1"}  # a string is not a tuple of hits (nor of letters)
    with pytest.raises(ev.EventDecodeError, match="expected a list"):
        ev.event_from_dict(not_a_list)
    extra_inside = stored(ev.SearchFinished(run_id="r", node_id="q1", hits=(Hit(CHUNK, 0.5, "q"),)))
    extra_inside["hits"][0]["chunk"]["secret"] = 1
    with pytest.raises(ev.EventDecodeError, match="no field 'secret'"):
        ev.event_from_dict(extra_inside)


def test_something_that_is_not_an_object_is_refused() -> None:
    for data in ([1, 2], "RoundStarted", None, 3):
        with pytest.raises(ev.EventDecodeError):
            ev.event_from_dict(data)


def test_an_event_from_a_newer_version_reads_when_it_only_added_fields() -> None:
    data = stored(ev.ChunkJudged(run_id="r", node_id="q1", chunk_id="c1", relevant=True, score=0.8))
    data.update(v=ev.SCHEMA_VERSION + 1, confidence_band="high")
    event = ev.event_from_dict(data)
    assert isinstance(event, ev.ChunkJudged) and event.relevant and event.score == 0.8
    data.pop("relevant")  # but not when a field it needs is gone
    with pytest.raises(ev.EventDecodeError, match="newer Fathom"):
        ev.event_from_dict(data)


def test_settings_style_reading_stays_lenient() -> None:
    """The codec's default (settings files) still ignores keys it does not know; strict refuses them."""
    from app.core.codec import from_jsonable, to_jsonable

    data = {**to_jsonable(CHUNK), "added_later": 1}
    assert from_jsonable(Chunk, data) == CHUNK
    with pytest.raises(ValueError, match="no field 'added_later'"):
        from_jsonable(Chunk, data, strict=True)
