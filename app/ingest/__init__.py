"""Folders → files → Docling → chunks → embeddings → store."""
