"""The PySide6 window. The only package that imports Qt.

- ``main.py``: ``fathom`` with no arguments (the window on qasync's loop); ``main_window.py``: the
  layout, the dialogs and one short slot per user action; ``qt_libraries.py`` (imports no Qt): before
  the window, are the system libraries Qt's platform plugin needs there, and which packages if not;
  ``pyside_import_hook.py``: PySide6's import hook made to stop importing from inside other imports;
  ``gui_thread_gc.py``: garbage collection on the GUI thread only;
- ``run_controller.py``: a research run and what follows it (history, replay, export, sources), no window;
  ``run_presenter.py``: its events shown in the tree (``tree_model.py``, ``tree_adapter.py``), the report
  (``report_view.py``) and the table (``table_view.py``);
- ``library_controller.py``: the library's state and actions; ``library_panel.py`` renders them (its tree
  from ``library_model.py``),
  ``ingest_progress.py`` shows an indexing, ``drop_zone.py`` takes dropped folders and files;
- ``research_panel.py``, ``history_panel.py``, ``source_viewer.py`` (``file_opener.py``; ``page_view.py``, its
  "Page N" tab), ``find_bar.py``, ``banner.py``: the other panes;
- ``settings_dialog.py``, ``setup_dialog.py``: the two forms, saved by ``settings_form.py``, with
  ``key_field.py`` for the API key;
- ``services.py``: library, model and engine, loaded after the window is up; ``history_store.py``: the
  run history on its own thread;
- ``tasks.py``: a handle on every task, and ``run_blocking``, the one way to call something that blocks;
- untrusted text: ``safe_document.py``, ``citations.py``, ``tooltips.py`` (``safe_markdown.py`` and
  ``md_fences.py`` now live in ``app/export``); ``exporters.py``: Qt's PDF renderer and the window's
  export (the exporter is ``app/export``); ``dialogs.py``, ``formatting.py``,
  ``theme.py``: small shared pieces.
"""
