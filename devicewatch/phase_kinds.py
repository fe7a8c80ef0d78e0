"""The kinds of phase every view tells apart (train, validate, data, copy; anything else is
``other``), and their numbers: a phase's kind as its place in KINDS.

A leaf: analysis sorts phases by kind, the live model stores kinds as numbers, and the pure
drawing functions shade by them, without drawing importing the model that holds them.
"""

from __future__ import annotations

PHASE_KINDS = ("train", "validate", "data", "copy")
OTHER = "other"
KINDS = (*PHASE_KINDS, OTHER)   # a phase's kind as a number: its place here


def kind_of(name: str) -> str:
    """train, validate, data, copy, or other."""
    return name if name in PHASE_KINDS else OTHER
