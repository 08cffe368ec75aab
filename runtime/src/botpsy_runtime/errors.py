"""What can go wrong in an engine, as errors whose message is fit to show a user.

Apart from the engine protocol, so that what an engine uses (its chat template, the GGUF
reader, downloads) can raise them without importing the protocol.
"""

from __future__ import annotations


class EngineError(Exception):
    """An engine could not do what was asked; the message is fit to show a user."""


class ModelLoadError(EngineError):
    """The model file or server model cannot be used."""


class AuthenticationError(ModelLoadError):
    """The server refused the API key: only a new key helps."""


class EngineUnavailableError(EngineError):
    """The engine (worker process or server) cannot be reached or stopped mid-request."""


class PrefillInterruptedError(EngineError):
    """A request arrived while a prefix was being evaluated, and went first."""
