"""First imports of large third-party packages, one thread at a time.

Fathom imports Docling, docling-core, pymilvus, onnxruntime, llama.cpp and faiss
when first needed, often from worker threads that start together (an ingest scans
files, loads the embedder and chunks at once). Python takes a lock per module, and
when two threads import packages that import each other's modules in a different
order it breaks the deadlock by handing one of them a *partially initialised*
module: ``ImportError: cannot import name 'import_string' from partially initialized
module 'pydantic._internal._validators'`` (seen once in the installed build's
self-test). Wrapping those first imports in :func:`serial_import` makes them take
turns; a module already imported costs a dictionary lookup and takes no lock, so a
thread (or the event loop) that needs it later never waits behind another import.

This covers Fathom's own first imports only. The same error in the window had another
cause that no lock here can cover: PySide6's import hook ran pydantic's lazy module
attributes, so *any* import, in any thread, could start one of pydantic's from inside
it; ``app/ui/pyside_import_hook.py`` stops that.

    with serial_import("docling.datamodel.base_models"):
        from docling.datamodel.base_models import InputFormat
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_LOCK = threading.RLock()


def imported(name: str) -> bool:
    """Whether ``name`` is fully imported (in ``sys.modules`` and not still running)."""
    module = sys.modules.get(name)
    if module is None:
        return False
    spec = getattr(module, "__spec__", None)
    return not getattr(spec, "_initializing", False)


@contextmanager
def serial_import(name: str) -> Iterator[None]:
    """Hold the import lock for the block unless ``name`` (the deepest module the
    block imports) is already imported."""
    if imported(name):
        yield
        return
    with _LOCK:
        yield
