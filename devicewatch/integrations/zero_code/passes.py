"""Where a training loop that reads no DataLoader is in its pass, read from its frames.

A loop fed by a generator, a list of shard paths or a ``range()`` over a tensor has no loader
that runs out; its pass is the Python ``for`` loop around its steps, and the pass ended when
that loop was left. At a step's model call, ``call`` finds the loop: walking out from the frame
that called the model, the first ``for`` loop whose body holds the call (a ``FOR_ITER`` and
its exhaustion target, from the code's bytecode, cached per call site so a step pays a dict
look-up a frame). A loop inside the step (micro-batches of gradient accumulation) holds the
call but not the optimizer step: at the next step, ``stepped`` checks once per loop that its
frame is inside it, and a loop that is not is passed over from then on. When an evaluation
begins, ``left`` says whether the pass ended: the frame that looped returned, or it is past
the loop; an evaluation inside the loop's body (every N steps) is no pass's end.

No frame is held: the loop's frame is known by its id and its code while it runs (a returned
frame held would keep its locals, a batch and its outputs, alive), and found again on the
stack when asked. Standard library only; ``torch_hooks`` feeds it.
"""

from __future__ import annotations

import dis
from types import CodeType, FrameType

DEPTH = 16   # frames walked out from the model's caller to find the loop


class Passes:
    """The loop around the last step's model call, and what is known of each loop seen."""

    def __init__(self) -> None:
        # a code's for loops: (the FOR_ITER's offset, its exit's)
        self.loops: dict[CodeType, list[tuple[int, int]]] = {}
        # (code, offset) -> the innermost loop holding it not known to miss the step, and
        # whether it is yet to be checked; None: no such loop (emptied at each check)
        self.around: dict[tuple[CodeType, int], tuple[tuple[int, int], bool] | None] = {}
        # (code, a loop's FOR_ITER) -> whether the loop holds the optimizer step
        self.holds_step: dict[tuple[CodeType, int], bool] = {}
        # the loop of the last step: (its frame's id, its code, the loop)
        self.held: tuple[int, CodeType, tuple[int, int]] | None = None

    def call(self, frame: FrameType | None) -> bool:
        """The trained model was called from FRAME at a step's start: hold the loop around it.
        True where that loop is yet to be checked against an optimizer step (``stepped``)."""
        around, depth = self.around, DEPTH
        while frame is not None and depth:
            code = frame.f_code
            key = (code, frame.f_lasti)
            found = around[key] if key in around else self._around(key)
            if found is not None:
                self.held = (id(frame), code, found[0])
                return found[1]
            frame = frame.f_back
            depth -= 1
        self.held = None
        return False

    def stepped(self, frame: FrameType | None) -> None:
        """An optimizer stepped, FRAME innermost: the held loop holds the step where its frame
        is on the stack inside it; one that does not (a micro-batch loop) is passed over."""
        held = self.held
        if held is None or (held[1], held[2][0]) in self.holds_step:
            return
        frame_id, code, (start, end) = held
        at = _position(frame, frame_id, code)
        holds = at is not None and start <= at < end
        self.holds_step[(code, start)] = holds
        self.around.clear()
        if not holds:
            self.held = None

    def left(self, frame: FrameType | None) -> bool | None:
        """An evaluation begins, FRAME innermost: whether the pass of the loop held since the
        last step ended (its frame returned, or is past the loop). None where no loop is held
        (a ``while`` loop, no step since the last look). The loop is let go either way."""
        held, self.held = self.held, None
        if held is None:
            return None
        frame_id, code, (start, end) = held
        at = _position(frame, frame_id, code)
        return at is None or not start <= at < end

    def _around(self, key: tuple[CodeType, int]) -> tuple[tuple[int, int], bool] | None:
        code, offset = key
        loops = self.loops.get(code)
        if loops is None:
            loops = self.loops[code] = [(i.offset, i.argval) for i in dis.get_instructions(code)
                                        if i.opname == "FOR_ITER" and isinstance(i.argval, int)]
        found = None
        for loop in sorted((loop for loop in loops if loop[0] <= offset < loop[1]), reverse=True):  # innermost first
            holds = self.holds_step.get((code, loop[0]))
            if holds is not False:
                found = (loop, holds is None)
                break
        self.around[key] = found
        return found


def _position(frame: FrameType | None, frame_id: int, code: CodeType) -> int | None:
    """The current instruction of the frame FRAME_ID running CODE, where it is on the stack
    from FRAME outward; None where it is not (it returned)."""
    while frame is not None:
        if id(frame) == frame_id and frame.f_code is code:
            return frame.f_lasti
        frame = frame.f_back
    return None
