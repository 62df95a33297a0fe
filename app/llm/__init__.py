"""One async interface over every model back end (llama.cpp, Ollama, OpenAI-compatible).

What a model file is and where to get one is :mod:`app.model_files`' job; this package
never imports it.

- ``base``: the interface (``ChatModel``) and the reply types.
- ``backend``: ``ModelBackend``, what every back end shares: ``chat()`` and
  ``structured()`` written once (token budget, hardened schema, the repair round)
  around each back end's ``_stream`` and ``_structured_attempts``; ``warm_up()``, a no-op
  unless the back end has something to load before its first call (llama.cpp does).
- ``llamacpp``: a GGUF model in-process; ``ollama_backend``: a model on an Ollama server;
  ``openai_backend``: any OpenAI-compatible endpoint.
- ``ollama_client``: what every caller of Ollama shares: its errors in words, its model list.
- ``factory``: the back end the settings ask for; what each back end offers now.
- ``structured``: JSON replies (schema hardened, validated, one repair).
- ``reasoning``: ``<think>`` split from the answer, also while streaming.
- ``fencing``: document text fenced as data in every prompt.
- ``keys``: API keys in the OS keyring.
- ``starter``: the bundled starter model (the factory falls back on it).
"""
