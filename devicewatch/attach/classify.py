"""Which kind of phase a sampled stack is in: data wait, train, validate or other.

Read from the frames themselves (a DataLoader's ``__next__``, ``backward``, an ``evaluate``)
and, for the script's own frames, from its source: a line inside a ``with torch.no_grad()`` or
``inference_mode()`` block (or a function under that decorator) is evaluation, a line inside the
body of a loop that calls ``backward()`` or ``step()`` is training. Validate is asked first (an
evaluation loop reads its own DataLoader), then data, then train.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .stacks import Frame

DATA, TRAIN, VALIDATE, OTHER = "data", "train", "validate", "other"

# Where a frame is input: torch's DataLoader and the readers frameworks feed from.
DATA_PATHS = ("torch/utils/data/", "tensorflow/python/data/", "keras/src/trainers/data_adapters/",
              "webdataset/", "datasets/arrow_dataset.py", "lightning/pytorch/loops/fetchers.py",
              "keras/src/trainers/epoch_iterator.py")
# Evaluation loops by their function's name: a script's own, Keras's ``evaluate``, Lightning's.
VALIDATE_FUNCTIONS = frozenset({"evaluate", "validate", "validation", "eval_epoch", "validate_epoch",
                                "evaluation_loop", "validation_step", "test_step", "eval_step",
                                "_run_evaluate", "run_evaluation", "test", "eval"})
# Evaluation loops by their file: Lightning's (its ``_EvaluationLoop.run`` is named ``run``).
VALIDATE_PATHS = ("lightning/pytorch/loops/evaluation_loop.py", "pytorch_lightning/loops/evaluation_loop.py")
# Training loops by their file: the optimizer, Lightning's fit loop, Keras's fit on torch; a
# stack under them that is neither evaluation nor input is training (the loop's own overhead too).
TRAIN_PATHS = ("torch/optim/", "lightning/pytorch/loops/", "pytorch_lightning/loops/",
               "keras/src/backend/torch/trainer.py")
# Frames of training: autograd, the optimizer, the frameworks' steps.
TRAIN_FUNCTIONS = frozenset({"backward", "_engine_run_backward", "zero_grad", "training_step", "train_step",
                             "optimizer_step", "train_epoch", "train_one_epoch"})
FRAMEWORK_PATHS = ("/torch/", "/lightning/", "/pytorch_lightning/", "/keras/", "/transformers/", "/accelerate/")
# A DataLoader's iterator made anew: a pass over the training data begins.
NEW_ITERATOR = frozenset({"DataLoader.__iter__", "DataLoader._get_iterator", "_BaseDataLoaderIter.__init__",
                          "_SingleProcessDataLoaderIter.__init__", "_MultiProcessingDataLoaderIter.__init__"})
SINGLE_PROCESS_LOADER = "_SingleProcessDataLoaderIter."
WORKER_LOADER = "_MultiProcessingDataLoaderIter."
NO_GRAD = frozenset({"no_grad", "inference_mode"})
TRAINING_CALLS = frozenset({"backward", "step"})


@dataclass(frozen=True)
class Source:
    """What a script's source says of its lines: those under ``no_grad`` and those in a
    training loop's body, as (first, last) line ranges."""

    no_grad: tuple[tuple[int, int], ...] = ()
    training: tuple[tuple[int, int], ...] = ()

    def in_no_grad(self, line: int) -> bool:
        return any(a <= line <= b for a, b in self.no_grad)

    def in_training(self, line: int) -> bool:
        return any(a <= line <= b for a, b in self.training)


def _called(node: ast.AST) -> str | None:
    """The name called in ``torch.no_grad()``, ``no_grad()`` or named bare (a decorator)."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def read_source(text: str) -> Source:
    """The line ranges of TEXT under ``no_grad``/``inference_mode`` and of training loops' bodies
    (a ``for`` or ``while`` whose body calls ``backward()`` or ``step()``)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return Source()
    no_grad: list[tuple[int, int]] = []
    training: list[tuple[int, int]] = []
    for node in ast.walk(tree):
        end = getattr(node, "end_lineno", None)
        if end is None:
            continue
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(_called(i.context_expr) in NO_GRAD for i in node.items):
            no_grad.append((node.lineno, end))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                any(_called(d) in NO_GRAD for d in node.decorator_list):
            no_grad.append((node.lineno, end))
        elif isinstance(node, (ast.For, ast.While)) and any(
                isinstance(call, ast.Call) and _called(call) in TRAINING_CALLS
                for statement in node.body for call in ast.walk(statement)):
            training.append((node.lineno, end))
    return Source(tuple(no_grad), tuple(training))


def is_framework(frame: Frame) -> bool:
    return any(part in frame.file for part in FRAMEWORK_PATHS) or "site-packages/" in frame.file


class Classifier:
    """Stacks into kinds, reading each script's source once (a file that cannot be read says
    nothing: its frames are judged by their names alone)."""

    def __init__(self) -> None:
        self._sources: dict[str, Source] = {}

    def source(self, path: str) -> Source:
        found = self._sources.get(path)
        if found is None:
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    found = read_source(f.read())
            except OSError:
                found = Source()
            self._sources[path] = found
        return found

    def kind(self, stack: tuple[Frame, ...]) -> str:
        own = [f for f in stack if f.file.endswith(".py") and not is_framework(f) and f.file.startswith("/")]
        if any(f.function in VALIDATE_FUNCTIONS and not f.file.endswith("nn/modules/module.py") for f in stack) \
                or any(any(p in f.file for p in VALIDATE_PATHS) for f in stack) \
                or any(self.source(f.file).in_no_grad(f.line) for f in own):
            return VALIDATE
        if any(any(p in f.file for p in DATA_PATHS) for f in stack):
            return DATA
        if any(f.function in TRAIN_FUNCTIONS or any(p in f.file for p in TRAIN_PATHS) for f in stack) \
                or any(self.source(f.file).in_training(f.line) for f in own):
            return TRAIN
        return OTHER


def new_iterator(stack: tuple[Frame, ...]) -> bool:
    """A DataLoader's iterator being made: a new pass over its data."""
    return any(f.name in NEW_ITERATOR for f in stack)


def loader_workers(stack: tuple[Frame, ...]) -> bool | None:
    """Whether the DataLoader read in STACK has workers (True), reads in the loop's own process
    (False), or is not a DataLoader's (None)."""
    for f in stack:
        if f.name.startswith(SINGLE_PROCESS_LOADER):
            return False
        if f.name.startswith(WORKER_LOADER):
            return True
    return None
