"""The errors devicewatch reports as one line and a non-zero exit, never a traceback.

A leaf: it imports nothing of devicewatch, so every layer can raise these and the command line
alone decides how they are shown.
"""

from __future__ import annotations


class DevicewatchError(Exception):
    """An expected failure whose message is one line meant for the user."""


class UsageError(DevicewatchError):
    """Bad input on the command line (exit status 2)."""


class RunFileError(DevicewatchError):
    """A run file that cannot be read: missing, empty, foreign, or a newer schema."""


class RecorderError(DevicewatchError):
    """The recorder could not start: the output cannot be written, the command cannot run."""


class UnknownWorkload(UsageError):
    """A workload name the registry does not know."""
