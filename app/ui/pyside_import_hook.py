"""PySide6's import hook, made to stop importing from inside other imports.

Once PySide6 is loaded, every import statement, in every thread, ends in PySide6's
``feature_imported(module)`` (its ``__feature__`` support, which Fathom does not use).
For a module it has not seen yet, it asks whether the module uses PySide6 by reading
its source with ``inspect.getsource``, and that first calls ``hasattr(module,
"__wrapped__")``. A module with a lazy ``__getattr__`` runs it there: pydantic's
modules (which Docling is built on) import ``pydantic._internal._validators`` from it.
So an import in one thread (the folder scan loading Docling) can start a second import
from inside the first, and when another thread is part-way through that second
module, each waits for the other; Python breaks the deadlock by handing one of them
the module half-initialised, and the import fails: ``ImportError: cannot import name
'import_string' from partially initialized module 'pydantic._internal._validators'``
(seen ending an indexing in the window). No lock in Fathom can prevent it, since any
import anywhere can set it off.

:func:`make_feature_check_safe` replaces that check with one that gives the same answer
(a module whose ``.py`` file contains "PySide6") by reading the file, never touching
the module's attributes. ``main.py`` calls it as soon as PySide6 is imported, before
anything else loads.
"""

from __future__ import annotations

import logging
from types import ModuleType

log = logging.getLogger(__name__)

_CHECK = "_mod_uses_pyside"  # the name feature_imported() looks up in its module's globals


def uses_pyside(module: ModuleType) -> bool:
    """Whether ``module``'s source file mentions PySide6 (what PySide6's check answers),
    read from the file named in its ``__dict__``: no attribute lookup, so no module
    ``__getattr__`` runs. A module with no ``.py`` file (built in, compiled, frozen) does not."""
    path = module.__dict__.get("__file__")
    if not isinstance(path, str) or not path.endswith(".py"):
        return False
    try:
        with open(path, "rb") as source:
            return b"PySide6" in source.read()
    except OSError:
        return False


def make_feature_check_safe() -> bool:
    """Put :func:`uses_pyside` in place of PySide6's check; returns whether it could
    (False: this PySide6 has no such check to replace, and nothing was changed)."""
    try:
        from PySide6.support import feature  # type: ignore[attr-defined]  # not in the stubs
    except ImportError:
        log.debug("PySide6.support.feature is not there; its import hook is left as it is")
        return False
    hook = getattr(feature, "feature_imported", None)
    namespace = getattr(hook, "__globals__", None)
    if not isinstance(namespace, dict) or not callable(namespace.get(_CHECK)):
        log.debug("PySide6's feature_imported has no %s; its import hook is left as it is", _CHECK)
        return False
    namespace[_CHECK] = uses_pyside
    return True
