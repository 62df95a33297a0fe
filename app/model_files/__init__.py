"""Model files: which models there are, which fit this machine, getting and removing them.

The back ends that run a model are :mod:`app.llm`'s; this package only manages the
files (and Ollama's models) they run. It may import ``app.llm`` (the starter model, the
factory's idea of a chat model, Ollama's list and errors); ``app.llm`` never imports it,
and research runs never need it. Only the window and the CLI use it.

- ``model_inventory``: one list of models (on this machine and recommended for download),
  each row saying whether it fits and whether research uses it now; what making one the
  research model, or removing it, changes in Settings.
- ``catalog``: the catalog of recommended models (``resources/models.json``, or an
  organisation's own file or URL).
- ``download``: one model file downloaded with resume, progress, cancel and SHA-256 check.
- ``model_folders``: GGUF files already on this computer (Fathom's, GPT4All's, LM Studio's);
  adding a file by copy or link.
- ``gguf_info``: what a GGUF file is, read from its header.
- ``machine_fit``: whether a model fits this machine's memory, the library's share kept aside.
- ``machine_speed``: how fast a model would answer here (the starter timed once, scaled by size).
- ``ollama_admin``: have Ollama pull or delete a model.
"""
