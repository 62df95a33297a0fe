"""The research engine: a question in, a stream of events out, ending with a cited report.

- ``engine.py``: ``ResearchEngine.run``, the run's lifecycle (task, stop, hard time limit,
  errors as a sentence); ``history_writer.py``: where a run is saved (the history file);
- ``modes/``: the research loops (``deep``, ``plan``, ``table``, ``hds``, ``quick``), each
  ``run_mode(ctx)``; ``modes/__init__.py`` names them;
- ``context.py``: ``RunContext``, all a mode sees of its run, made of its parts:
  ``run_events.py`` (events, node ids, notices, what the run is doing now: the status
  line, in the words of ``phases.py``), ``budget.py`` (budgets and what was spent),
  ``model_calls.py`` (every model call), ``evidence.py`` (the ``[n]`` evidence table) and
  ``report.py`` (the report), plus searching the library;
- the report's citations: ``citations.py`` (``[n]`` in the text, pure) and
  ``citation_check.py`` (the one model call that checks them);
- steps the modes share: ``routing.py`` (which collections a query goes to),
  ``query_hygiene.py`` (repeats and junk queries), ``relevance.py`` (a judge's picks made
  into ranked hits), ``snippets.py`` (passages cut to what
  matters), ``bridging.py`` (rule-written follow-up queries), ``prompts.py`` (prompt pieces;
  document text is fenced data);
- a mode's own helpers: ``placeholders.py`` (plan), ``sentence_markers.py`` and
  ``entity_table.py`` (table), ``hds_protocol.py`` (hds);
- ``tree.py``: the research tree as a pure function of the events (the window draws it).

Arrows point one way: a mode -> the context -> its parts -> ``app.core``, ``app.llm``,
``app.ingest``, ``app.store``; nothing here imports a mode but the engine, by name.
"""
