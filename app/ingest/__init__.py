"""Folders → files → Docling → chunks → embeddings → store.

- ``library.py``: the facade the window, the CLI and the engine use (open, collections, ingest, repair);
- ``retrieval.py``: its read side (search across collections, chunks by id, samples);
- ``scan.py``: folders walked into the files to index, with a reason for each file left out;
- ``file_types.py``: which files are read, and by which reader;
- ``convert/``: one file to chunk pieces (checks, text, Docling, worker processes);
- ``chunking/``: chunk pieces cut to the embedder's token limit (``page_numbers.py``: a chunk's page);
- ``pipeline/``: an ingest run (change detection, embed batches, writes through the ledger, progress);
- ``embedder.py``, ``embedding_match.py``: text to vectors; a collection keeps its model;
- ``describe.py``: a collection's description written by a model;
- ``paths.py``, ``file_errors.py``: path text and the sentences for unreadable files.
- ``watcher.py``, ``watch_loop.py``: watched folders (when a collection is re-scanned);
  ``folder_presence.py``: whether its folders are there (an unplugged drive is offline, not deleted).
"""
