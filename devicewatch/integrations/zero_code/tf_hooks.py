"""The TensorFlow hooks: what a TensorFlow training loop does, fed to this process's ``Loop``.

- **Data wait**: ``OwnedIterator.__next__`` (the iterator of a ``tf.data.Dataset`` in eager
  Python: ``for x, y in dataset``, ``next(it)``) is wrapped to time how long the loop is blocked
  in it, with two clock reads and one call a batch, like the DataLoader's ``__next__`` in
  ``torch_hooks``. A data set is told from another by the ``Dataset`` object iterated (the
  training set and the validation set are two), a pass by a new iterator. Calls made while a
  graph is traced (``next(it)`` inside a ``tf.function``) are not waits and are not timed: only
  an iterator first used in eager execution is.
- **Keras's ``Model.fit``** on TensorFlow takes its batches inside its compiled step (the
  ``IteratorGetNext`` op of a ``tf.function``), where no Python runs per batch and TensorFlow
  offers no per-step reading of the time spent in that op (its ``/tensorflow/data/*`` monitoring
  counters cannot be read from Python). So each training step is fed in Keras's own other way
  (Keras 3.7 or newer): the batch is taken in eager Python, where the hook above times it, and
  handed to the very same compiled step (the ``train_function``'s path for a batch given as
  data; Keras's development version after 3.15.1 takes each batch in eager Python itself).
  The arithmetic is the same, the losses and weights byte for byte (a test checks it); a step
  costs no more (measured on a small model: no slower); the step is traced once more per
  ``fit`` where the last batch is smaller than the others (traced for the first batch's shape,
  then for any). Only with ``steps_per_execution`` 1 and no distribution strategy: otherwise
  Keras runs as it would, unmeasured, and its epochs claim no figures (``measures_fit``).
- **Steps and training**: ``tf.GradientTape.gradient`` and the optimizers' ``apply``
  (Keras 3's ``BaseOptimizer.apply``, which ``apply_gradients`` calls; TensorFlow's
  ``compat.v1`` ``Optimizer.apply_gradients``). Called eagerly, each call is a backward pass or a
  step. Inside a ``tf.function`` they run only while it is traced: they then mark the function
  being called (the outermost ``tf.function`` called from eager Python), and every later call of
  a marked function (``Function.__call__``) counts as one step (or one backward pass), when it
  returns, as PyTorch's post-step hook does.

Keras's hooks are armed once its TensorFlow trainer has been imported (Keras imports
TensorFlow, so it comes after): at once if it is loaded, else by the start-up hook, which
watches the trainer's module as it watches the frameworks (``keras_trainer``).

Only the main thread's calls count (tf.data's own threads run the pipeline). A hook whose own
work raises is restored to TensorFlow's or Keras's original and reported once; their own
exceptions (``StopIteration``, ``OutOfRangeError``) pass through untouched.
"""

from __future__ import annotations

import atexit
import functools
import sys
import threading
import time
import types
import weakref
from typing import Any
from collections.abc import Callable

from .frameworks import BY_NAME, KERAS2_TRAINER, KERAS_TRAINER, LOOP
from .process_state import Process

_monotonic = time.monotonic
get_ident = threading.get_ident
_MAIN = threading.main_thread().ident
BACKWARD, STEP = 1, 2   # what the calls of a marked tf.function are
INFINITE = -1           # tf.data.INFINITE_CARDINALITY

_HOOKS: _Hooks | None = None


def on_import(framework: str, name: str, module: Any, process: Process) -> None:
    """TensorFlow, or Keras's TensorFlow trainer, has been imported (``frameworks.FRAMEWORKS``)."""
    if name == KERAS_TRAINER:
        keras_trainer(module)
    elif name == KERAS2_TRAINER:
        keras2_trainer(module)
    else:
        process.knobs.tensorflow(module)
        arm(module, process, framework)


def arm(tf: Any, process: Process, framework: str) -> None:
    """Put the hooks in (once per process); their errors are said as FRAMEWORK's (its row's name)."""
    global _HOOKS
    from tensorflow.python.data.ops.iterator_ops import OwnedIterator
    from tensorflow.python.eager import context
    from tensorflow.python.eager.backprop import GradientTape
    from tensorflow.python.eager.polymorphic_function.polymorphic_function import Function
    from tensorflow.python.training.optimizer import Optimizer

    hooks = _Hooks(process, framework, context.executing_eagerly, OwnedIterator, tf.function)
    hooks.wrap(OwnedIterator, "__next__", hooks.timed_next)
    hooks.wrap(Function, "__call__", hooks.counted_call)
    hooks.wrap(GradientTape, "gradient", hooks.counted_gradient)
    hooks.wrap(Optimizer, "apply_gradients", hooks.counted_apply)
    _HOOKS = hooks
    process.fit_measured = measures_fit
    atexit.register(hooks.at_exit)
    process.on_disarm(lambda: atexit.unregister(hooks.at_exit))
    # else the start-up hook arms each once it has run (``keras_trainer``, ``keras2_trainer``)
    trainer = sys.modules.get(KERAS_TRAINER)
    if trainer is not None:
        hooks.arm_keras(trainer)
    trainer = sys.modules.get(KERAS2_TRAINER)
    if trainer is not None:
        hooks.arm_keras2(trainer)


def keras_trainer(trainer: Any) -> None:
    """Keras's TensorFlow trainer has run (it imports TensorFlow first, so the hooks are in)."""
    if _HOOKS is not None:
        _HOOKS.arm_keras(trainer)


def keras2_trainer(trainer: Any) -> None:
    """Keras 2's training module has run (``tf_keras`` imports TensorFlow first)."""
    if _HOOKS is not None:
        _HOOKS.arm_keras2(trainer)


def measures_fit() -> bool | None:
    """Whether Keras's latest training step on TensorFlow was measured (its batch taken where
    the hooks time it, its step counted); None when no such step has run in this process."""
    return _HOOKS.fit_measured if _HOOKS is not None else None


class _Hooks:
    def __init__(self, process: Process, framework: str, executing_eagerly: Callable[[], bool], iterator_type: type,
                 compile_function: Callable[..., Any]):
        self.process = process
        self.framework = framework
        self.loop = process.loop
        self.executing_eagerly = executing_eagerly
        self.iterator_type: Any = iterator_type  # Any: `type(x) is it` must not narrow x to object
        self.compile_function = compile_function  # tf.function
        self.restore: dict[str, Callable[[], None]] = {}
        # Whether each hook still counts (a failed one is off): plain attributes, read on every
        # batch and step.
        self.timed_next_on = self.counted_call_on = self.counted_gradient_on = True
        self.counted_apply_on = self.eager_fetch_on = self.at_exit_on = True
        # The iterator that yielded last (a weak reference), its data set, and whether it runs
        # eagerly; iterators that have yielded, to tell a new pass from a return to the last one.
        self.last: Callable[[], Any] = lambda: None
        self.last_source: int = 0
        self.last_eager = False
        self.started: weakref.WeakSet[Any] = weakref.WeakSet()
        # The outermost tf.function called from eager Python and running now; what the calls
        # of each marked function are (BACKWARD or STEP), by id while it lives.
        self.calling: Any = None
        self.marked: dict[int, int] = {}
        self.apply_depth = 0
        self.fit_measured: bool | None = None
        self.batch_given = 0   # inside Keras 2's train_on_batch

    def wrap(self, owner: Any, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]],
             hook: str | None = None) -> None:
        original = getattr(owner, name)
        wrapper = functools.wraps(original)(make(original))
        self.process.replace(owner, name, wrapper)

        def restore() -> None:
            if owner.__dict__.get(name) is wrapper:
                setattr(owner, name, original)

        key = hook or make.__name__
        before = self.restore.get(key)
        if before is None:
            self.restore[key] = restore
        else:
            def restore_both(before: Callable[[], None] = before) -> None:
                before()
                restore()
            self.restore[key] = restore_both

    def failed(self, hook: str, exc: BaseException) -> None:
        """Our bookkeeping in HOOK raised: disarm HOOK, say so once."""
        setattr(self, hook + "_on", False)
        try:
            self.restore.get(hook, lambda: None)()
        except Exception:
            pass
        self.process.error(self.framework, hook.replace("_", " "), exc)

    # -- data wait ------------------------------------------------------------------------------

    def timed_next(self, original: Callable[[Any], Any]) -> Callable[[Any], Any]:
        timed = self.timed

        def __next__(iterator: Any) -> Any:
            return timed(iterator, original)
        return __next__

    def timed(self, iterator: Any, take: Callable[[Any], Any]) -> Any:
        """What TAKE gives from ITERATOR (its next batch, or StopIteration), the loop's wait for
        it timed: ``OwnedIterator.__next__``, or Keras 2's step taking its batch flat."""
        if not (self.timed_next_on and self.process.live and get_ident() == _MAIN):
            return take(iterator)
        first = False
        if self.last() is not iterator:
            try:
                first = self.yielding(iterator)
            except Exception as exc:
                self.failed("timed_next", exc)
                return take(iterator)
        if not self.last_eager:
            return take(iterator)
        start = _monotonic()
        try:
            batch = take(iterator)
        except StopIteration:
            end = _monotonic()
            try:
                self.loop.exhausted(self.last_source, end)
            except Exception as exc:
                self.failed("timed_next", exc)
            raise
        end = _monotonic()
        try:
            self.loop.fetch(self.last_source, True, first, start, end)
        except Exception as exc:
            self.failed("timed_next", exc)
        return batch

    def yielding(self, iterator: Any) -> bool:
        """ITERATOR yields now, not the last one: whether this is its first batch."""
        self.last = weakref.ref(iterator)
        self.last_eager = bool(self.executing_eagerly())
        dataset = getattr(iterator, "_dataset", None)
        self.last_source = id(dataset if dataset is not None else iterator)
        if iterator in self.started:
            return False
        self.started.add(iterator)
        if self.last_eager and dataset is not None and _endless(dataset):
            self.loop.endless(self.last_source)
        return True

    # -- steps ----------------------------------------------------------------------------------

    def counted_call(self, original: Callable[..., Any]) -> Callable[..., Any]:
        process, marked = self.process, self.marked

        def __call__(function: Any, *args: Any, **kwargs: Any) -> Any:
            if self.calling is not None or not (self.counted_call_on and process.live and get_ident() == _MAIN):
                return original(function, *args, **kwargs)
            self.calling = function
            try:
                result = original(function, *args, **kwargs)
            finally:
                self.calling = None
            kind = marked.get(id(function))
            if kind is not None and self.executing_eagerly():
                self.counted(kind)
            return result
        return __call__

    def counted(self, kind: int) -> None:
        """A call of a marked function, now: an optimizer's step (STEP), else the backward pass
        a step of its own stands for."""
        try:
            if kind == STEP:
                self.stepped(_monotonic())
            else:
                self.loop.backward(_monotonic())
        except Exception as exc:
            self.failed("counted_call", exc)

    def mark(self, kind: int) -> None:
        """A gradient (BACKWARD) or an optimizer step (STEP) is being traced: its calls count."""
        function = self.calling
        if function is None:
            return  # traced outside a call (get_concrete_function, a saved model): not a step
        key = id(function)
        if key not in self.marked:
            weakref.finalize(function, self.marked.pop, key, None)
        self.marked[key] = max(kind, self.marked.get(key, 0))

    def counted_gradient(self, original: Callable[..., Any]) -> Callable[..., Any]:
        process = self.process

        def gradient(tape: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(tape, *args, **kwargs)
            if self.counted_gradient_on and process.live and get_ident() == _MAIN:
                try:
                    if self.executing_eagerly():
                        self.loop.backward(_monotonic())
                    else:
                        self.mark(BACKWARD)
                except Exception as exc:
                    self.failed("counted_gradient", exc)
            return result
        return gradient

    def counted_apply(self, original: Callable[..., Any]) -> Callable[..., Any]:
        process = self.process

        def apply(optimizer: Any, *args: Any, **kwargs: Any) -> Any:
            if not (self.counted_apply_on and process.live and get_ident() == _MAIN):
                return original(optimizer, *args, **kwargs)
            self.apply_depth += 1  # a wrapping optimizer's apply calls its inner one's
            try:
                result = original(optimizer, *args, **kwargs)
            finally:
                self.apply_depth -= 1
            if self.apply_depth == 0:
                try:
                    if self.executing_eagerly():
                        self.stepped(_monotonic())
                    else:
                        self.mark(STEP)
                except Exception as exc:
                    self.failed("counted_apply", exc)
            return result
        return apply

    def stepped(self, now: float) -> None:
        if self.counted_gradient_on:  # steps are counted now: backward passes no longer matter
            self.counted_gradient_on = False
            self.restore["counted_gradient"]()
        self.loop.step(now)

    # -- Keras ----------------------------------------------------------------------------------

    def arm_keras(self, trainer: Any) -> None:
        """Keras's TensorFlow trainer is loaded: its optimizers' steps, its fit's batches."""
        try:
            from keras.src.optimizers.base_optimizer import BaseOptimizer

            self.wrap(BaseOptimizer, "apply", self.counted_apply)
            cls = trainer.TensorFlowTrainer
            if _takes_data(cls):
                self.wrap(cls, "make_train_function", self.eager_fetch)
                if hasattr(cls, "_maybe_symbolic_build"):
                    self.wrap(cls, "_maybe_symbolic_build", self.untimed_build, hook="eager_fetch")
        except Exception as exc:
            self.process.error(self.framework, "arm keras", exc)

    def eager_fetch(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """``make_train_function``, whose function then takes each batch in eager Python."""
        process = self.process

        def make_train_function(model: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(model, *args, **kwargs)
            if self.eager_fetch_on and process.live:
                try:
                    function = model.train_function
                    if function is not None and not getattr(function, "_devicewatch_eager_fetch", False):
                        model.train_function = self.fetching(
                            function, lambda batch: function((batch,)), model.steps_per_execution == 1)
                except Exception as exc:
                    self.failed("eager_fetch", exc)
            return result
        return make_train_function

    def fetching(self, function: Callable[[Any], Any], fed: Callable[[Any], Any], one_step: bool) -> Callable[[Any], Any]:
        """Keras's train FUNCTION, given its batch: taken from the iterator in eager Python
        (``__next__``, timed) and handed to FED, the same step for a batch given as data.
        An exhausted iterator goes to Keras as it is, which ends the epoch its own way."""
        process, iterator_type = self.process, self.iterator_type

        def train_function(iterator: Any) -> Any:
            if not (one_step and type(iterator) is iterator_type and self.eager_fetch_on and process.live
                    and not self.batch_given and get_ident() == _MAIN):
                self.fit_measured = False
                return function(iterator)
            try:
                batch = next(iterator)
            except StopIteration:
                return function(iterator)
            self.fit_measured = self.timed_next_on and self.counted_call_on
            return fed(batch)

        train_function._devicewatch_eager_fetch = True  # type: ignore[attr-defined]  # a mark on Keras's function: wrapped once
        return train_function

    def arm_keras2(self, trainer: Any) -> None:
        """Keras 2's training module is loaded: its optimizers' steps, its fit's batches."""
        try:
            from tf_keras.src.optimizers.legacy.optimizer_v2 import OptimizerV2
            from tf_keras.src.optimizers.optimizer import _BaseOptimizer

            self.wrap(_BaseOptimizer, "apply_gradients", self.counted_apply)
            self.wrap(OptimizerV2, "apply_gradients", self.counted_apply)
            self.wrap(trainer.Model, "make_train_function", self.keras2_fetch, hook="eager_fetch")
            self.wrap(trainer.Model, "train_on_batch", self.unfetched, hook="eager_fetch")
        except Exception as exc:
            self.process.error(self.framework, "arm keras 2", exc)

    def keras2_fetch(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """Keras 2's ``make_train_function``, whose function then takes each batch in eager
        Python. Keras 2 has no path for a batch given as data: its step's own Python
        (``next(iterator)``, then the step) is compiled once more, as a function of the batch's
        flat tensors (``keras2_flat``; else of the batch, ``keras2_fed``), handed the batch as
        the iterator it takes it from (``_Taken``)."""
        process = self.process

        def make_train_function(model: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(model, *args, **kwargs)
            if not (self.eager_fetch_on and process.live):
                return result
            try:
                function = model.train_function
                if function is not None and not getattr(function, "_devicewatch_eager_fetch", False):
                    flat = self.keras2_flat(function, _one_step(model))
                    fed = self.keras2_fed(model, function) if flat is None else None
                    if flat is not None:
                        model.train_function = result = flat
                    elif fed is not None:
                        model.train_function = result = self.fetching(function, fed, _one_step(model))
            except Exception as exc:
                self.failed("eager_fetch", exc)
            return result  # Keras 2's fit uses what this returns
        return make_train_function

    def keras2_fed(self, model: Any, function: Any) -> Callable[[Any], Any] | None:
        """Keras 2's train FUNCTION as a function of one batch, or None where it is neither
        its compiled function nor, with ``run_eagerly``, its plain one (a coordinator's)."""
        step = getattr(function, "python_function", None)
        if step is None:
            if not model.run_eagerly:
                return None
            return lambda batch: function(_Taken(batch))
        return self.compile_function(lambda batch: step(_Taken(batch)), reduce_retracing=True)

    def keras2_flat(self, function: Any, one_step: bool) -> Callable[[Any], Any] | None:
        """Keras 2's compiled train FUNCTION, handed each batch as the flat tensors of the
        iterator's own ``IteratorGetNext`` op, run eagerly and timed (``timed``); or None where
        this TensorFlow lacks what it calls (then ``keras2_fed``).

        Why not ``next(iterator)`` and a ``tf.function`` of the batch: on a tiny model those two
        cost more than the step (the eager ``next`` packs the batch's structure inside an
        execution-mode scope; the ``tf.function`` binds its arguments and looks up its trace),
        where the op alone and the step's concrete function, traced once for the data set's
        element spec (the shapes the compiled step's own ``IteratorGetNext`` has), take a
        fraction of it. Each call of that concrete function is a step as a call of a marked
        ``tf.function`` is (``counted_call``)."""
        step = getattr(function, "python_function", None)
        try:
            from tensorflow.python.data.util import structure
            from tensorflow.python.eager import context
            from tensorflow.python.eager.polymorphic_function.concrete_function import ConcreteFunction
            from tensorflow.python.framework.errors import OutOfRangeError
            from tensorflow.python.ops.gen_dataset_ops import iterator_get_next
        except ImportError:
            return None
        if step is None or not hasattr(ConcreteFunction, "_call_flat"):
            return None
        process, iterator_type, marked = self.process, self.iterator_type, self.marked
        executing_eagerly, context_now, SYNC = self.executing_eagerly, context.context, context.SYNC
        traced: dict[Any, tuple[Any, Any]] = {}   # element spec -> (its tf.function, its concrete function)
        last: list[Any] = [None, None, None]     # the latest iterator's element spec, and its two

        def take(iterator: Any) -> Any:
            try:
                return iterator_get_next(iterator._iterator_resource, output_types=iterator._flat_output_types,
                                         output_shapes=iterator._flat_output_shapes)
            except OutOfRangeError:
                raise StopIteration from None

        def trace(spec: Any) -> tuple[Any, Any]:
            compiled = self.compile_function(
                lambda *flat: step(_Taken(structure.from_compatible_tensor_list(spec, flat))))
            self.calling = compiled   # what the step's optimizer marks while it is traced (``mark``)
            try:
                concrete = compiled.get_concrete_function(*structure.get_flat_tensor_specs(spec))
            finally:
                self.calling = None
            return compiled, concrete

        def train_function(iterator: Any) -> Any:
            if not (one_step and type(iterator) is iterator_type and self.eager_fetch_on and process.live
                    and not self.batch_given and get_ident() == _MAIN and executing_eagerly()
                    and context_now().execution_mode == SYNC):
                self.fit_measured = False
                return function(iterator)
            try:
                flat = self.timed(iterator, take)
            except StopIteration:
                return function(iterator)
            spec = iterator._element_spec
            if spec is last[0]:
                compiled, concrete = last[1], last[2]
            else:
                compiled, concrete = traced.get(spec) or traced.setdefault(spec, trace(spec))
                last[:] = spec, compiled, concrete
            self.fit_measured = self.timed_next_on and self.counted_call_on
            result = concrete._call_flat(flat, concrete.captured_inputs)
            kind = marked.get(id(compiled))
            if kind is not None and self.counted_call_on:
                self.counted(kind)
            return result

        train_function._devicewatch_eager_fetch = True  # type: ignore[attr-defined]  # a mark on Keras's function: wrapped once
        return train_function

    def unfetched(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """Keras 2's ``train_on_batch``: its batch is given as data, in a new one-batch data
        set each call, which no loop waits on; its function runs as Keras calls it."""

        def train_on_batch(model: Any, *args: Any, **kwargs: Any) -> Any:
            self.batch_given += 1
            try:
                return original(model, *args, **kwargs)
            finally:
                self.batch_given -= 1
        return train_on_batch

    def untimed_build(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """``_maybe_symbolic_build``, which takes a batch before fit's first epoch (and drops
        it): not a wait of the training loop."""

        def _maybe_symbolic_build(model: Any, *args: Any, **kwargs: Any) -> Any:
            if not self.timed_next_on:
                return original(model, *args, **kwargs)
            self.timed_next_on = False
            try:
                return original(model, *args, **kwargs)
            finally:
                self.timed_next_on = True
        return _maybe_symbolic_build

    def at_exit(self) -> None:
        if not (self.at_exit_on and self.process.live) or any(
                name in BY_NAME and BY_NAME[name].measures == LOOP for name in self.process.armed):
            return  # the hooks that measure every loop (torch's) finish it where they are armed too
        try:
            self.loop.finish(_monotonic())
            self.process.voice.say_left_out()
        except Exception as exc:
            self.failed("at_exit", exc)


class _Taken:
    """A batch already taken, as the iterator Keras 2's step takes it from: ``next`` gives it."""

    def __init__(self, batch: Any):
        self.batch = batch

    def __iter__(self) -> _Taken:
        return self

    def __next__(self) -> Any:
        return self.batch


def _one_step(model: Any) -> bool:
    """Whether Keras 2's train function runs one step a call (``steps_per_execution`` 1, not
    tuned, no cluster coordinator): else its batches are taken inside its compiled loop."""
    steps = getattr(model, "_steps_per_execution", None)
    return ((steps is None or int(steps.numpy()) == 1) and not getattr(model, "autotune_steps_per_execution", False)
            and getattr(model, "_cluster_coordinator", None) is None)


def _endless(dataset: Any) -> bool:
    """Whether DATASET never runs out (``repeat()``: a stream, whose loop has segments, not
    epochs): asked once a pass. A cardinality TensorFlow cannot tell (a filter, a generator)
    is taken to end."""
    return int(dataset.cardinality()) == INFINITE


def _takes_data(trainer: type) -> bool:
    """Whether Keras's train function takes a batch given as data besides an iterator: its
    ``_make_function`` builds a ``function(iterator)`` that checks for an iterator and else
    runs the step on each batch given (Keras 3.7 and newer)."""
    code = getattr(getattr(trainer, "_make_function", None), "__code__", None)
    if code is None:
        return False
    inner = [c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == "function"]
    return len(inner) == 1 and {"isinstance", "zip"} <= set(inner[0].co_names)
