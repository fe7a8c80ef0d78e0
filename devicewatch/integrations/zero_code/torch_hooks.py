"""The PyTorch hooks: what the training loop does, fed to this process's ``Loop``.

- **Data wait**: ``_BaseDataLoaderIter.__next__`` (the iterator every DataLoader returns,
  single-process or with workers) is wrapped to time how long the loop is blocked in it, as
  TraceML times ``next()`` on the DataLoader's iterator and Lightning's ``_DataFetcher`` times
  its fetch (``train_dataloader_next``) and torchtnt its ``next(data_iter)``: here on the
  iterator class itself, so that a loop of any shape (plain ``for``, Lightning, Hugging Face,
  Keras on torch) is measured the same way, with two clock reads a batch.
- **The loop's wait** from a step's end to the next step's compute is timed whatever feeds it:
  it ends when a training batch is out of the DataLoader, or, for a loop that reads no
  DataLoader (known when training is confirmed, or after steps in a row with no batch from
  one), when the trained model is called: only then is ``Module.__call__`` wrapped (one
  attribute read a module call; the rest only while the loop waits between steps). Where
  that wait is more than a few per cent of the time outside a DataLoader, a watcher thread
  reads the loop's stack every WATCH_INTERVAL while it waits and names what it does
  (``waits.spent_on``), as a sampling profiler does: only then, so a loop that does not wait
  pays nothing for it.
- **A worker's batch**: a loop that starts its workers anew each step waits for them to start
  as much as for its batch; what a batch alone costs is timed in the workers themselves
  (``_MapDatasetFetcher.fetch`` and its iterable twin), each worker adding its time to a slot of
  a page shared with the process that forked it (``WorkerBatches``), read when a unit ends
  (``worker_batch_s``). Workers started by ``spawn`` share no page: the figure is then absent.
- **Train or validate**: ``nn.Module.train`` (``eval()`` calls it too) is wrapped, counting only
  the outermost call on a model whose parameters an optimizer holds; grad mode is read at each
  batch. No forward hook: a global one takes every module off PyTorch's fast call path, and
  one on the model travels with it (``torch.save``, ``torch.jit.script``).
- **Epochs or segments**: a DataLoader over a data set with no length (a stream) has no
  passes to count, so its loop is read in segments between evaluations. A loop that reads no
  DataLoader makes its passes with a Python ``for`` loop: at each step's model call the loop
  around it is found in the frames (``passes.Passes``), checked once against an optimizer
  step by a post-step hook put in only for that check, and asked at each evaluation whether
  it was left.
- **A checkpoint loaded back**: ``Module.__setstate__`` (``torch.load`` of a whole module, a
  deep copy) and ``load_state_dict`` are wrapped to note the modules loaded after training
  began; one of the trained model's class is the trained model (a best checkpoint tested at
  the end), and its first ``eval()`` begins an evaluation of its own.
- **Waiting for other ranks**: ``torch.distributed.barrier`` is wrapped, so a rank waiting at a
  barrier while another validates is seen waiting, not training.
- **Steps**: the public ``register_optimizer_step_post_hook``; ``torch.autograd.backward`` (which
  ``Tensor.backward`` calls) for loops that update their weights by hand, put back to
  PyTorch's own at the first optimizer step (each hook costs a little on every step).

Only the main thread's calls count (a background prefetch thread's ``next()`` blocks no loop),
but a DataLoader that runs out on another thread tells a loop fed through a queue that its pass
was read.
A hook whose own work raises is restored to PyTorch's original and reported once; PyTorch's
own exceptions (``StopIteration`` included) pass through untouched.
"""

from __future__ import annotations

import atexit
import functools
import mmap
import struct
import sys
import sysconfig
import threading
import time
import weakref
from types import CodeType, ModuleType
from typing import Any, Protocol
from collections.abc import Callable, Iterator

from . import copy_probe
from .waits import Frame, spent_on
from .passes import Passes
from .process_state import Process

_monotonic = time.monotonic
get_ident = threading.get_ident
_MAIN = threading.main_thread().ident
WATCH_INTERVAL = 0.005   # seconds between two looks at a waiting loop's stack
STACK_DEPTH = 64         # frames read, innermost first
_LIBRARIES = tuple({sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")})
_OURS = __file__.rsplit("/", 3)[0]  # the devicewatch package: its frames are not the loop's
WORKER_SLOTS = 64        # workers timed apart (a worker id beyond shares a slot: a lost count at worst)
_SLOT = struct.Struct("dq")   # seconds making batches, batches made


class TorchParameter(Protocol):
    requires_grad: bool


class TorchModule(Protocol):
    """What the hooks read of an ``nn.Module``: typed, so that a read of anything else is caught."""

    training: bool

    def parameters(self) -> Iterator[TorchParameter]: ...


class RemovableHandle(Protocol):
    """A hook torch registered (``torch.utils.hooks.RemovableHandle``)."""

    def remove(self) -> None: ...


def on_import(framework: str, name: str, module: Any, process: Process) -> None:
    """torch has been imported (``frameworks.FRAMEWORKS``): its hooks go in."""
    arm(module, process)


def arm(torch: Any, process: Process) -> None:
    """Put the hooks in (once per process)."""
    from torch.nn.modules.module import Module
    from torch.optim.optimizer import register_optimizer_step_post_hook
    from torch.utils.data import dataloader as dataloader_module
    from torch.utils.data.dataloader import DataLoader, _BaseDataLoaderIter

    hooks = _Hooks(torch, process)
    hooks.wrap(_BaseDataLoaderIter, "__next__", hooks.timed_next)
    hooks.wrap(Module, "train", hooks.counted_train)
    hooks.wrap(Module, "__setstate__", hooks.unpickled)
    hooks.wrap(Module, "load_state_dict", hooks.state_loaded)
    process.loop.loop_left = hooks.loop_left
    process.loop.gap.need_calls = functools.partial(hooks.wrap, Module, "__call__", hooks.timed_call)
    process.loop.watch = hooks.start_watcher
    hooks.wrap(torch.autograd, "backward", hooks.counted_backward)
    distributed = getattr(torch, "distributed", None)
    if distributed is not None and callable(getattr(distributed, "barrier", None)):
        hooks.wrap(distributed, "barrier", hooks.timed_barrier)
    hooks.step_handle = register_optimizer_step_post_hook(hooks.after_step)
    process.on_disarm(hooks.step_handle.remove)
    process.on_disarm(hooks.drop_pass_check)
    process.knobs.wrap_dataloader(DataLoader, process.replace)
    hooks.wrap(dataloader_module._MultiProcessingDataLoaderIter, "__init__", hooks.workers_starting)
    if process.trial is not None:
        hooks.wrap(dataloader_module._MultiProcessingDataLoaderIter, "__del__", hooks.timed_teardown)
    hooks.wrap(_BaseDataLoaderIter, "__next__", hooks.probed_next)   # over timed_next, until a training batch
    process.knobs.set_threads(torch, process.replace)
    process.threads = torch.get_num_threads
    if process.trial is not None and not process.knobs.vary:   # the variants' values timed after the window
        process.trial.threads = (torch.get_num_threads, torch.set_num_threads)
        process.trial.loader = lambda: process.knobs.loader_of(process.loop.pass_.source or process.loop.pass_.last_source)
    atexit.register(hooks.at_exit)
    process.on_disarm(lambda: atexit.unregister(hooks.at_exit))


class _Hooks:
    def __init__(self, torch: Any, process: Process):
        self.torch: ModuleType = torch
        self.process = process
        self.loop = process.loop
        self.is_grad_enabled: Callable[[], bool] = torch.is_grad_enabled
        self.restore: dict[str, Callable[[], None]] = {}
        # Whether each hook still counts (a failed one is off): plain attributes, read on every
        # batch and step, where a call or a set look-up would cost more than the rest.
        self.timed_next_on = self.counted_train_on = self.counted_backward_on = True
        self.after_step_on = self.at_exit_on = self.timed_barrier_on = self.timed_call_on = True
        self.trained_modules: dict[int, bool] = {}
        self.worker_batches: WorkerBatches | None = None
        self.trained_params: set[int] = set()
        self.optimizers: set[int] = set()
        self.train_depth = 0
        self.step_handle: RemovableHandle | None = None
        self.passes = Passes()
        self.passes_on = self.unpickled_on = self.state_loaded_on = True
        self.pass_check: RemovableHandle | None = None   # the post-step hook checking a loop against the step, while one is
        self.loop_code: CodeType | None = None   # the code of the frame that calls the trained model: the loop's
        self.trained_classes: set[type] = set()
        self.loaded: weakref.WeakSet[TorchModule] = weakref.WeakSet()   # modules loaded back since training began, not yet told
        self.copies: weakref.WeakSet[TorchModule] = weakref.WeakSet()   # ... and those that were: the trained model loaded back
        self.after_step = self.step_hook()

    def wrap(self, owner: Any, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
        original = getattr(owner, name)
        wrapper = functools.wraps(original)(make(original))
        self.process.replace(owner, name, wrapper)

        def restore() -> None:
            if getattr(owner, name) is wrapper:
                setattr(owner, name, original)

        self.restore[make.__name__] = restore

    def failed(self, hook: str, exc: BaseException) -> None:
        """Our bookkeeping in HOOK raised: disarm HOOK, say so once."""
        setattr(self, hook + "_on", False)
        try:
            if hook == "after_step":
                if self.step_handle is not None:
                    self.step_handle.remove()
            elif hook == "passes":
                self.loop.loop_left = None
            else:
                self.restore[hook]()
        except Exception:
            pass
        self.process.error("torch", hook.replace("_", " "), exc)

    # -- the wrappers -------------------------------------------------------------------------

    def timed_next(self, original: Callable[[Any], Any]) -> Callable[[Any], Any]:
        process, fetch, exhausted, is_grad_enabled = self.process, self.loop.fetch, self.loop.exhausted, self.is_grad_enabled
        endless, exhausted_elsewhere = self.loop.endless, self.loop.exhausted_elsewhere
        monotonic, thread, main = _monotonic, get_ident, _MAIN  # the closure's own: no global look-ups a batch

        def __next__(iterator: Any) -> Any:
            if not (self.timed_next_on and process.live):
                return original(iterator)
            if thread() != main:  # a thread that fills a queue: only its pass running out matters
                try:
                    return original(iterator)
                except StopIteration:
                    try:
                        exhausted_elsewhere(id(iterator._dataset), monotonic())
                    except Exception as exc:
                        self.failed("timed_next", exc)
                    raise
            start = monotonic()
            try:
                batch = original(iterator)
            except StopIteration:
                end = monotonic()
                try:
                    exhausted(id(iterator._dataset), end)
                except Exception as exc:
                    self.failed("timed_next", exc)
                raise
            end = monotonic()
            try:
                dataset = iterator._dataset
                if process.joining and is_grad_enabled():   # joined mid-run: is this pass whole?
                    process.knobs.iterator_seen(iterator)
                    process.first_batch(iterator._num_yielded == 1, sys._getframe(1))
                # PyTorch's __next__ counts the batches of the pass: the first made it 1
                if iterator._num_yielded != 1:  # every batch but a pass's first: kept short
                    fetch(id(dataset), is_grad_enabled(), False, start, end)
                else:
                    length = None
                    if _has_length(dataset):
                        length = _length(iterator)
                    else:
                        endless(id(dataset))
                    fetch(id(dataset), is_grad_enabled(), True, start, end, length)
            except Exception as exc:
                self.failed("timed_next", exc)
            return batch
        return __next__

    def counted_train(self, original: Callable[..., Any]) -> Callable[..., Any]:
        process = self.process

        def train(module: Any, mode: bool = True) -> Any:
            if not (self.counted_train_on and process.live and get_ident() == _MAIN):
                return original(module, mode)
            self.train_depth += 1  # children's train() calls come back through here
            try:
                result = original(module, mode)
            finally:
                self.train_depth -= 1
            if self.train_depth == 0:
                try:
                    reloaded = bool(self.loaded) and self.loaded_back(module)
                    if reloaded or self.is_trained(module):
                        self.loop.mode(bool(mode), _monotonic(), reloaded)
                except Exception as exc:
                    self.failed("counted_train", exc)
            return result
        return train

    def timed_call(self, original: Callable[..., Any]) -> Callable[..., Any]:
        gap = self.loop.gap  # read on every module call: one attribute, bound once

        def __call__(module: Any, *args: Any, **kwargs: Any) -> Any:
            if gap.since is not None and self.timed_call_on:
                self.called(module)
            return original(module, *args, **kwargs)
        return __call__

    def called(self, module: TorchModule) -> None:
        """A module is called while the loop waits between steps: the trained model's call
        (with gradients on, in training mode, on the main thread) begins the step's compute."""
        if get_ident() != _MAIN or not module.training or not self.is_grad_enabled() or not self.process.live:
            return
        try:
            trained = self.trained_modules.get(id(module))
            if trained is None:
                # PyTorch's own parameters(): a model may hide its own (a wrapper that keeps them private)
                params = self.torch.nn.Module.parameters(module)
                trained = not self.trained_params or any(id(p) in self.trained_params for p in params)
                if self.trained_params:  # known for good once an optimizer has stepped
                    self.trained_modules[id(module)] = trained
                if trained and self.loop_code is None:
                    self.loop_code = sys._getframe(2).f_code  # who called the model: the loop
                    self.trained_classes.add(type(module))
            if trained:
                self.loop.compute(_monotonic())
                if self.loop.pass_.source is None and self.passes_on:
                    self.find_pass(sys._getframe(2))
        except Exception as exc:
            self.failed("timed_call", exc)

    # -- the pass of a loop that reads no DataLoader (passes.Passes) --------------------------

    def find_pass(self, caller: Any) -> None:
        """A step's model call from CALLER: hold the ``for`` loop around it; a loop not yet
        checked against an optimizer step gets a post-step hook for the check, taken out at
        the first call after it (not from inside the step: its hooks are being iterated)."""
        try:
            unchecked = self.passes.call(caller)
            if unchecked and self.pass_check is None:
                from torch.optim.optimizer import register_optimizer_step_post_hook

                self.pass_check = register_optimizer_step_post_hook(self.pass_stepped)
            elif not unchecked and self.pass_check is not None:
                self.pass_check.remove()
                self.pass_check = None
        except Exception as exc:
            self.passes_failed(exc)

    def pass_stepped(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self.passes_on and self.process.live and get_ident() == _MAIN:
            try:
                self.passes.stepped(sys._getframe())
            except Exception as exc:
                self.passes_failed(exc)

    def loop_left(self) -> bool | None:
        """Asked by the loop when an evaluation begins: whether the held loop's pass ended."""
        if not self.passes_on:
            return None
        try:
            return self.passes.left(sys._getframe())
        except Exception as exc:
            self.passes_failed(exc)
            return None

    def passes_failed(self, exc: BaseException) -> None:
        self.drop_pass_check()
        self.failed("passes", exc)

    def drop_pass_check(self) -> None:
        if self.pass_check is not None:
            self.pass_check.remove()
            self.pass_check = None

    # -- the trained model loaded back --------------------------------------------------------

    def unpickled(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def __setstate__(module: Any, state: Any) -> None:
            original(module, state)
            if self.unpickled_on:
                try:
                    self.note_loaded(module)
                except Exception as exc:
                    self.failed("unpickled", exc)
        return __setstate__

    def state_loaded(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def load_state_dict(module: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(module, *args, **kwargs)
            if self.state_loaded_on:
                try:
                    self.note_loaded(module)
                except Exception as exc:
                    self.failed("state_loaded", exc)
            return result
        return load_state_dict

    def note_loaded(self, module: TorchModule) -> None:
        """MODULE's weights were loaded: after training began, on the training thread, it may
        be the trained model's checkpoint loaded back (``loaded_back``)."""
        if self.loop.confirmed and self.process.live and get_ident() == _MAIN:
            try:
                self.loaded.add(module)
            except TypeError:  # a module that cannot be hashed: not told apart
                pass

    def loaded_back(self, module: TorchModule) -> bool:
        """Whether MODULE, train()/eval() called on it, is the trained model loaded back: its
        class the trained model's, its weights loaded since training began, and this its first
        such call since (a frozen teacher is built and loaded before training begins)."""
        if not _within(module, self.loaded):
            return False
        self.loaded.discard(module)
        if type(module) not in self.trained_classes:
            return False
        self.copies.add(module)
        return True

    def workers_starting(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """The first DataLoader with workers: their batches are timed from then on (a loop
        without workers pays nothing for it)."""
        def __init__(iterator: Any, *args: Any, **kwargs: Any) -> None:
            if self.process.trial is not None and get_ident() == _MAIN:
                self.process.trial.iterators += 1   # a loop that restarts its workers: a trial calibrates its knobs
            if self.worker_batches is None and self.process.live:
                try:
                    from torch.utils.data import _utils

                    batches = WorkerBatches(_utils.worker.get_worker_info, self.process)
                    for fetcher in (_utils.fetch._MapDatasetFetcher, _utils.fetch._IterableDatasetFetcher):
                        self.wrap(fetcher, "fetch", batches.timed_fetch)
                    self.worker_batches = batches
                    self.loop.worker_batches = batches.total
                except Exception as exc:
                    self.process.error("torch", "worker batches", exc)
            original(iterator, *args, **kwargs)
        return __init__

    def timed_teardown(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """A trial's figure: the training thread's time shutting down the workers of an iterator
        it dropped (a loop that takes a new iterator every step pays it after its batch is out,
        outside ``__next__``), which the trial's window reports (``teardown_s``) and ``try``'s
        prediction takes out of the step's compute."""
        trial = self.process.trial
        assert trial is not None   # armed only in a trial

        def __del__(iterator: Any) -> None:
            if get_ident() != _MAIN or not self.process.live:
                return original(iterator)
            start = _monotonic()
            try:
                return original(iterator)
            finally:
                trial.teardown += _monotonic() - start
        return __del__

    def probed_next(self, original: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """The first training batch on the training thread from a DataLoader that does not pin
        its memory: what pinned memory would save its copy to the GPU (``copy_probe``, only where
        the script uses CUDA), once; this wrapper then takes itself off."""
        def __next__(iterator: Any) -> Any:
            batch = original(iterator)
            if get_ident() == _MAIN and self.is_grad_enabled() and self.process.live:
                self.restore["probed_next"]()
                try:
                    if not getattr(iterator, "_pin_memory", False):
                        copy_probe.probe_and_say(self.torch, batch)
                except Exception as exc:
                    self.process.error("torch", "copy probe", exc)
            return batch
        return __next__

    def start_watcher(self) -> None:
        """The loop waits enough outside a DataLoader to name what it waits on: sample it."""
        threading.Thread(target=self.watch, name="devicewatch-wait-watcher", daemon=True).start()

    def watch(self) -> None:
        loop, gap, frames_now, main = self.loop, self.loop.gap, sys._current_frames, _MAIN or 0
        try:
            while self.process.live and self.timed_call_on:
                time.sleep(WATCH_INTERVAL)
                if gap.since is None:
                    continue
                frame = frames_now().get(main)
                stack: list[Frame] = []
                loop_at = None
                while frame is not None and len(stack) < STACK_DEPTH:
                    code = frame.f_code
                    path = code.co_filename
                    if code is self.loop_code and loop_at is None:
                        loop_at = len(stack)
                    if not path.startswith(_OURS):
                        stack.append((path, code.co_name, frame.f_lineno, bool(code.co_flags & _GENERATOR),
                                      path.startswith(_LIBRARIES) or path.startswith("<")))
                    frame = frame.f_back
                if gap.since is not None and stack:  # still waiting: the sample is of the wait
                    loop.sampled(*spent_on(stack, loop_at))
        except Exception as exc:
            self.process.error("torch", "wait watcher", exc)

    def counted_backward(self, original: Callable[..., Any]) -> Callable[..., Any]:
        process, backward_seen = self.process, self.loop.backward

        def backward(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            if self.counted_backward_on and process.live and get_ident() == _MAIN:
                try:
                    backward_seen(_monotonic())
                except Exception as exc:
                    self.failed("counted_backward", exc)
            return result
        return backward

    def timed_barrier(self, original: Callable[..., Any]) -> Callable[..., Any]:
        process, barrier = self.process, self.loop.barrier

        def timed(*args: Any, **kwargs: Any) -> Any:
            if not (self.timed_barrier_on and process.live and get_ident() == _MAIN):
                return original(*args, **kwargs)
            try:
                barrier(True, _monotonic())
            except Exception as exc:
                self.failed("timed_barrier", exc)
            try:
                return original(*args, **kwargs)
            finally:
                if self.timed_barrier_on:
                    try:
                        barrier(False, _monotonic())
                    except Exception as exc:
                        self.failed("timed_barrier", exc)
        return timed

    def step_hook(self) -> Callable[[Any, Any, Any], None]:
        """The optimizer's post-step hook (``after_step``), what it reads every step bound in its
        closure."""
        process, step, optimizers, monotonic, thread, main = \
            self.process, self.loop.step, self.optimizers, _monotonic, get_ident, _MAIN

        def after_step(optimizer: Any, args: Any, kwargs: Any) -> None:
            if not (self.after_step_on and process.live and thread() == main):
                return
            try:
                if id(optimizer) not in optimizers:
                    optimizers.add(id(optimizer))
                    self.trained_params.update(id(p) for group in optimizer.param_groups for p in group["params"])
                    if self.counted_backward_on:  # steps are counted now: backward passes no longer matter
                        self.counted_backward_on = False
                        self.restore["counted_backward"]()
                step(monotonic())
            except Exception as exc:
                self.failed("after_step", exc)
        return after_step

    def at_exit(self) -> None:
        if not (self.at_exit_on and self.process.live):
            return
        try:
            self.loop.finish(_monotonic())
            self.process.voice.say_left_out()
        except Exception as exc:
            self.failed("at_exit", exc)

    def is_trained(self, module: TorchModule) -> bool:
        """Whether MODULE is a model being trained: before the first optimizer step any model
        may be but one whose parameters are all frozen (a teacher, ``requires_grad_(False)``);
        after it, one holding a parameter an optimizer steps (not a frozen teacher), or a copy
        of it loaded back (``loaded_back``)."""
        if not self.trained_params:
            # PyTorch's own parameters(): a model may hide its own (a wrapper that keeps them private)
            grads = [p.requires_grad for p in self.torch.nn.Module.parameters(module)]
            return not grads or any(grads)
        if any(id(p) in self.trained_params for p in module.parameters()):
            self.trained_classes.add(type(module))
            return True
        return bool(self.copies) and _within(module, self.copies)


_GENERATOR = 0x20  # inspect.CO_GENERATOR


def _within(module: TorchModule, modules: weakref.WeakSet[TorchModule]) -> bool:
    """MODULE in MODULES; a module that cannot be hashed (its class defines ``__eq__``
    alone) was never added."""
    try:
        return module in modules
    except TypeError:
        return False


def _length(iterator: Any) -> int | None:
    """Batches in the pass of ITERATOR (its sampler's length), or None."""
    try:
        return len(iterator)
    except Exception:  # a sampler without a length
        return None


class WorkerBatches:
    """What the DataLoader workers forked from this process took to make their batches: each
    adds to its own slot of an anonymous shared page, so no two write the same bytes."""

    def __init__(self, worker_info: Callable[[], Any], process: Process):
        self.page = mmap.mmap(-1, _SLOT.size * WORKER_SLOTS)
        self.worker_info = worker_info
        self.process = process

    def timed_fetch(self, original: Callable[..., Any]) -> Callable[..., Any]:
        page, info, slot, process = self.page, self.worker_info, _SLOT, self.process

        def fetch(fetcher: Any, *args: Any, **kwargs: Any) -> Any:
            if process.live:  # the loop's own process (a fork is not live): its DataLoader's __next__ is timed already
                return original(fetcher, *args, **kwargs)
            start = _monotonic()
            batch = original(fetcher, *args, **kwargs)
            try:
                worker = info()
                if worker is not None:
                    at = slot.size * (worker.id % WORKER_SLOTS)
                    seconds, count = slot.unpack_from(page, at)
                    slot.pack_into(page, at, seconds + _monotonic() - start, count + 1)
            except Exception:  # a worker has no one to report to: its batch goes on untimed
                pass
            return batch
        return fetch

    def total(self) -> tuple[float, int]:
        """Seconds the workers spent making batches, and how many, so far."""
        slots = [_SLOT.unpack_from(self.page, _SLOT.size * i) for i in range(WORKER_SLOTS)]
        return sum(s for s, _ in slots), sum(n for _, n in slots)


def _has_length(dataset: Any) -> bool:
    """Whether DATASET has a length (an IterableDataset stream may not): asked once a pass."""
    try:
        len(dataset)
    except TypeError:
        return False
    return True
