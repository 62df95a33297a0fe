"""Qt-free domain: data types, events, settings, paths and errors.

Nothing in here imports any other part of ``app``.
"""
