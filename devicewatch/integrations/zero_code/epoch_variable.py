"""The script's own epoch number, read from its loop variable: a variable named for the epoch
(``epoch``, ``current_epoch``, ``ep``…) holding a whole number in one of the script's own frames.

From outside (``attach.loop_variable``) py-spy reads the frames' locals; from inside a process
joined mid-run (``instrument.join``, which ``sys.remote_exec`` runs on the main thread, under
the training loop's own frames) the frames are read directly, a top-level loop's module
globals included. Standard library only.
"""

from __future__ import annotations

import os
import sysconfig
from types import FrameType

_LIBRARIES = tuple({sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")})
_OURS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the devicewatch package


def named_for_epoch(name: str) -> bool:
    """``epoch``, ``current_epoch``, ``ep``; not ``epochs`` (how many there are)."""
    return name == "ep" or (name.startswith("epoch") and not name.startswith("epochs")) or name.endswith("epoch")


def scripts_own(path: str) -> bool:
    """Whether PATH is a file of the script's own: not the interpreter's library, an installed
    package's or devicewatch's."""
    return path.endswith(".py") and os.path.isabs(path) and not path.startswith(_LIBRARIES) \
        and not path.startswith(_OURS) and "site-packages" not in path and "dist-packages" not in path


def epoch_in_frames(frame: FrameType | None) -> tuple[str, int] | None:
    """The loop variable and its value in the innermost of the script's own frames from FRAME
    outwards that holds one, or None."""
    while frame is not None:
        if scripts_own(frame.f_code.co_filename):
            for name, value in frame.f_locals.items():
                if named_for_epoch(name) and type(value) is int:
                    return name, value
        frame = frame.f_back
    return None
