"""One async interface over every model back end (llama.cpp, Ollama, OpenAI-compatible)."""
