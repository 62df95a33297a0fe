"""Export a research run: one exporter for the window and the CLI, no Qt.

- ``content.py``: what is exported (question, report, evidence, table);
- ``markdown.py``: the export's Markdown, every other report format's source;
- ``html.py``: that Markdown as a standalone page (markdown-it-py, no raw HTML, no
  link, no image, a Content-Security-Policy); the PDF renders the same page;
- ``stored.py``: a recorded run read from the history (for ``fathom export``);
- ``exporter.py``: a format's bytes, and a file written (``files.py``: atomic, with
  the user's normal permissions); ``formats.py``: names and suffixes;
- ``safe_markdown.py``, ``md_fences.py``: untrusted text made inert or quoted (pure
  text; the window uses them too).
"""
