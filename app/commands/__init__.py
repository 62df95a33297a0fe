"""Subcommands of the ``fathom`` CLI, one module each (see app/cli.py)."""
