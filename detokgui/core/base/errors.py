"""Exceptions whose messages are meant to be shown to a person as they are."""


class DetokError(Exception):
    """Base class: the message says what went wrong and what to do about it."""


class ModelLoadError(DetokError):
    """A checkpoint could not be found, read, or analysed."""


class InputError(DetokError, ValueError):
    """Input to an analysis is out of range or malformed (too long, empty, bad position)."""


class Cancelled(DetokError):
    """Work was stopped because its result is no longer wanted."""
