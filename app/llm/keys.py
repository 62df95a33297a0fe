"""API keys for OpenAI-compatible endpoints, kept in the OS keyring.

A key is stored under the service ``fathom`` with the endpoint's base URL as
the user name; it is never written to the settings file. Where the system
has no keyring (a headless Linux box without Secret Service, for example),
Fathom says so and reads the key from the environment variable
``FATHOM_API_KEY`` instead.
"""

from __future__ import annotations

import os

from app.core.errors import FathomError

SERVICE = "fathom"
ENV_VAR = "FATHOM_API_KEY"


def _usable_keyring() -> object | None:
    import keyring
    from keyring.backends import fail, null

    backend = keyring.get_keyring()
    if isinstance(backend, fail.Keyring | null.Keyring):
        return None
    return backend


def keyring_description() -> str:
    """A short line for ``fathom doctor``: which keyring holds the keys, or why none does."""
    backend = _usable_keyring()
    if backend is None:
        return f"no OS keyring available; API keys are read from the environment variable {ENV_VAR}"
    return f"OS keyring: {type(backend).__module__}.{type(backend).__name__}"


def get_api_key(base_url: str) -> str | None:
    """The key for ``base_url``: the keyring first, then ``FATHOM_API_KEY``; None when neither has one."""
    import keyring
    import keyring.errors

    if base_url and _usable_keyring() is not None:
        try:
            stored = keyring.get_password(SERVICE, base_url)
        except keyring.errors.KeyringError:
            stored = None
        if stored:
            return stored
    return os.environ.get(ENV_VAR) or None


def set_api_key(base_url: str, key: str) -> None:
    """Store the key for ``base_url`` in the OS keyring (an empty key deletes it)."""
    import keyring
    import keyring.errors

    if _usable_keyring() is None:
        raise FathomError(
            "No OS keyring is available on this system, so the API key cannot be stored safely.",
            f"Set the environment variable {ENV_VAR} before starting Fathom instead "
            "(or install a keyring service such as GNOME Keyring or KWallet).",
        )
    try:
        if key:
            keyring.set_password(SERVICE, base_url, key)
        else:
            try:
                keyring.delete_password(SERVICE, base_url)
            except keyring.errors.PasswordDeleteError:
                pass
    except keyring.errors.KeyringError as exc:
        raise FathomError(
            f"The OS keyring refused to store the API key ({exc}).",
            f"Unlock the keyring and try again, or set the environment variable {ENV_VAR}.",
        ) from exc
