"""API keys for OpenAI-compatible endpoints (and Milvus servers' tokens), kept in the OS keyring.

A key is stored under the service ``fathom`` with the endpoint's base URL as
the user name; it is never written to the settings file. Where the system
has no keyring (a headless Linux box without Secret Service, for example),
Fathom says so and reads the key from the environment variable
``FATHOM_API_KEY`` instead.

Every function here may block (a keyring backend talks D-Bus, or waits for the
user to unlock it): the window calls them in an executor, never on its loop.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from app.core.errors import FathomError

SERVICE = "fathom"
ENV_VAR = "FATHOM_API_KEY"
MILVUS_TOKEN_VAR = "FATHOM_MILVUS_TOKEN"


def _usable_keyring() -> object | None:
    import keyring
    from keyring.backends import fail, null

    backend = keyring.get_keyring()
    if isinstance(backend, fail.Keyring | null.Keyring):
        return None
    return backend


@dataclass(frozen=True)
class Wording:
    """How a secret is named to the user: an endpoint's API key, a Milvus server's token."""

    env_var: str = ENV_VAR  # read instead where there is no keyring
    a_secret: str = "an API key"
    short: str = "key"
    field: str = "Base URL"  # the field whose value it is stored under


API_KEY = Wording()
MILVUS_TOKEN = Wording(MILVUS_TOKEN_VAR, "a Milvus token", "token", "Milvus URI")


@dataclass(frozen=True)
class KeyringState:
    """What the settings dialogs say about the API key of one endpoint (or a Milvus server's token)."""

    available: bool  # an OS keyring exists
    backend: str  # its name, or "" when none
    has_key: bool  # a key is stored for the endpoint (False when no keyring or no URL)
    env_key: bool  # the environment variable (FATHOM_API_KEY) is set
    problem: str = ""  # the keyring exists but could not be read
    wording: Wording = API_KEY

    def sentence(self, base_url: str) -> str:
        """One line for the dialog; says "stored" only when a key was read back from the keyring."""
        w = self.wording
        if not self.available:
            if self.env_key:
                return (
                    f"No OS keyring on this system: Fathom uses the {w.short} "
                    f"in the environment variable {w.env_var}."
                )
            return (
                f"No OS keyring on this system, so Fathom cannot keep {w.a_secret}. "
                f"Set the environment variable {w.env_var} before starting Fathom."
            )
        if self.problem:
            return (
                f"The OS keyring could not be read ({self.problem}). Unlock it, or set {w.env_var}."
            )
        if not base_url:
            return f"Fill in the {w.field}: the {w.short} is stored in the OS keyring under it."
        if self.has_key:
            return f"A {w.short} for {base_url} is stored in the OS keyring ({self.backend})."
        return f"No {w.short} is stored for {base_url} yet; one you type is kept in the OS keyring ({self.backend})."


def keyring_state(base_url: str, wording: Wording = API_KEY) -> KeyringState:
    """Ask the keyring (blocking) whether it exists and holds a key for ``base_url``."""
    import keyring
    import keyring.errors

    env_key = bool(os.environ.get(wording.env_var))
    backend = _usable_keyring()
    if backend is None:
        return KeyringState(False, "", False, env_key, wording=wording)
    name = _backend_name(backend)
    if not base_url:
        return KeyringState(True, name, False, env_key, wording=wording)
    try:
        stored = keyring.get_password(SERVICE, base_url)
    except keyring.errors.KeyringError as exc:
        return KeyringState(
            True, name, False, env_key, problem=str(exc) or type(exc).__name__, wording=wording
        )
    return KeyringState(True, name, bool(stored), env_key, wording=wording)


def milvus_token_state(uri: str) -> KeyringState:
    """Whether the keyring exists and holds a token for the Milvus server at ``uri`` (blocking)."""
    return keyring_state(uri, MILVUS_TOKEN)


def _backend_name(backend: object) -> str:
    return str(getattr(backend, "name", "") or type(backend).__name__)


def keyring_description() -> str:
    """A short line for ``fathom doctor``: which keyring holds the keys, or why none does."""
    backend = _usable_keyring()
    if backend is None:
        return f"no OS keyring available; API keys are read from the environment variable {ENV_VAR}"
    return f"OS keyring: {type(backend).__module__}.{type(backend).__name__}"


def get_api_key(base_url: str) -> str | None:
    """The key for ``base_url``: the keyring first, then ``FATHOM_API_KEY``; None when neither has one."""
    return _stored_secret(base_url) or os.environ.get(ENV_VAR) or None


def get_milvus_token(uri: str) -> str:
    """A Milvus server's token ("user:password" or an API key) for ``uri``: the keyring's
    (service ``fathom``, the URI as user name), else ``FATHOM_MILVUS_TOKEN``; "" if none.
    (Never ``FATHOM_API_KEY``: a model endpoint's key is not sent to Milvus.)"""
    return _stored_secret(uri) or os.environ.get(MILVUS_TOKEN_VAR, "")


def _stored_secret(user: str) -> str | None:
    """What the keyring holds for ``user`` under service ``fathom`` (None: nothing, or no keyring)."""
    import keyring
    import keyring.errors

    if not user or _usable_keyring() is None:
        return None
    try:
        return keyring.get_password(SERVICE, user) or None
    except keyring.errors.KeyringError:
        return None


def set_api_key(base_url: str, key: str) -> None:
    """Store the key for ``base_url`` in the OS keyring (an empty key deletes it), and read
    it back: returning means the keyring holds exactly ``key``; otherwise FathomError."""
    _store_secret(base_url, key, API_KEY)


def set_milvus_token(uri: str, token: str) -> None:
    """Store a Milvus server's token under its URI, as :func:`set_api_key` does a key."""
    _store_secret(uri, token, MILVUS_TOKEN)


def _store_secret(user: str, secret: str, wording: Wording) -> None:
    import keyring
    import keyring.errors

    the = "the " + wording.a_secret.split(" ", 1)[1]  # "the API key"
    if _usable_keyring() is None:
        raise FathomError(
            f"No OS keyring is available on this system, so {the} cannot be stored safely.",
            f"Set the environment variable {wording.env_var} before starting Fathom instead "
            "(or install a keyring service such as GNOME Keyring or KWallet).",
        )
    try:
        if secret:
            keyring.set_password(SERVICE, user, secret)
        else:
            try:
                keyring.delete_password(SERVICE, user)
            except keyring.errors.PasswordDeleteError:
                pass
        kept = keyring.get_password(SERVICE, user)
    except keyring.errors.KeyringError as exc:
        raise FathomError(
            f"The OS keyring refused to store {the} ({exc}).",
            f"Unlock the keyring and try again, or set the environment variable {wording.env_var}.",
        ) from exc
    if (kept or "") != secret:
        raise FathomError(
            f"The OS keyring did not keep {the} (reading it back gave something else).",
            f"Check the keyring, or set the environment variable {wording.env_var} instead.",
        )
