"""Look up a name the first search missed.

One hybrid search of a whole question can miss the passage about a name in it: asked
"What currency predated the Euro in the country Signmark is from?", the question's
other words pull in passages on the Euro, and none of the top five mentions Signmark.
The report would then say, rightly for what it was shown, that nothing found mentions
"Signmark", though the library has his page. So a name of the question that no passage
found holds (:func:`app.research.answerability.missing_names`) is searched for on its own,
no model call, and only hits that hold the name itself (capitalised, as a word) are
kept: a lookup that finds nothing naming it leaves the report to say so, as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from app.core.models import Hit
from app.research.answerability import Found, missing_names

MAX_NAMES = 2  # names looked up, one search each
TOP_K = 10  # hits read per lookup: a bare name's search ranks common-word matches too
KEEP = 2  # hits naming it kept per lookup

_POSSESSIVE = re.compile(r"['’]s$")


def names_to_look_up(question: str, found: Sequence[Found], limit: int = MAX_NAMES) -> list[str]:
    """The question's names that nothing in ``found`` holds, as searched for ("Hans
    Edler's" → "Hans Edler"), at most ``limit``."""
    out: list[str] = []
    for name in missing_names(question, found):
        bare = _POSSESSIVE.sub("", name).strip()
        if bare and bare not in out:
            out.append(bare)
    return out[: max(0, limit)]


def naming(hits: Sequence[Hit], name: str, keep: int = KEEP) -> list[Hit]:
    """The first ``keep`` hits whose title or text holds ``name`` as written (a word,
    capitalised as in the question: "Brother" the band, not "his brother")."""
    pattern = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
    held = [h for h in hits if pattern.search(f"{h.chunk.title}\n{h.chunk.text}")]
    return held[:keep]
