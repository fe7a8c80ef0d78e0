"""A variant applied to an unmodified script from outside (``devicewatch try``), and what the
script set up itself (which ``report``'s advice reads).

The variant comes in ``DEVICEWATCH_VARY`` (``{"num_workers": 2}``): every DataLoader the script
makes is made with those arguments instead of its own, and PyTorch's operator threads are set
to ``threads`` (the script's own ``torch.set_num_threads`` too gets the variant's number), with
``OMP_NUM_THREADS`` set to the same for what starts after. Each
change is said once as an ``instrument`` event, state ``varied``, with the knob, the value the
script had and the one it got; a knob that found nothing to apply to (no DataLoader made, a
``prefetch_factor`` for a loader without workers) is said at the exit, state ``not_applied``,
with why. Only knobs that leave the model's arithmetic as it is.

Whether or not a variant is given, the DataLoaders' own arguments are kept by data set
(``loader_setup``), so that the instrumentation can say how the training data was fed.
"""

from __future__ import annotations

import inspect
import json
import os
import weakref
from typing import Any
from collections.abc import Callable, Hashable

from ... import events
from . import LOADER_KNOBS, MAP_PARALLEL, THREADS, VARY_VAR, knob_value

SETUP_KEYS = LOADER_KNOBS + ("batch_size",)


def requested(env: dict[str, str] | os._Environ[str] = os.environ) -> dict[str, Any]:
    """The variant this process was given; {} when none or when it cannot be read."""
    text = env.get(VARY_VAR)
    if not text:
        return {}
    try:
        given = json.loads(text)
        return {k: knob_value(k, str(v).lower() if isinstance(v, bool) else str(v)) for k, v in given.items()}
    except (ValueError, AttributeError, TypeError):
        return {}


class Knobs:
    """The variant of one process, and what it changed."""

    def __init__(self, vary: dict[str, Any], say: Callable[..., None] = events.emit):
        self.vary = vary
        self.say = say
        self.applied: set[str] = set()
        self.skipped: dict[str, str] = {}
        self.loader_setup: dict[int, dict[str, Any]] = {}   # id(dataset) -> the loader's arguments
        self.loaders: dict[Hashable, weakref.ref[Any]] = {}     # id(dataset) -> the loader (a trial's calibration sets it)
        self.tf_maps = 0              # tf.data maps the script made ...
        self.tf_sequential_maps = 0   # ... of which it left num_parallel_calls unset (one element at a time)

    # -- DataLoader -------------------------------------------------------------------------

    def wrap_dataloader(self, loader_class: type, replace: Callable[[Any, str, Any], None]) -> None:
        original = loader_class.__init__  # type: ignore[misc]  # the class's own constructor, wrapped in place
        signature = inspect.signature(original)
        knobs = self

        def __init__(loader: Any, *args: Any, **kwargs: Any) -> None:
            try:
                bound = signature.bind(loader, *args, **kwargs)
                bound.apply_defaults()
                arguments = bound.arguments
                knobs.loader_made(arguments)
                args, kwargs = _call_arguments(signature, arguments)
            except Exception:
                pass
            original(loader, *args, **kwargs)
            try:
                knobs.loaders[id(loader.dataset)] = weakref.ref(loader)
            except Exception:
                pass

        __init__.__wrapped__ = original  # type: ignore[attr-defined]  # functools.wraps without its copying
        __init__.__doc__ = original.__doc__
        replace(loader_class, "__init__", __init__)   # on the class, until the hooks are taken out

    def loader_made(self, arguments: dict[str, Any]) -> None:
        """A DataLoader is being made with ARGUMENTS (changed in place to the variant's)."""
        for knob in LOADER_KNOBS:
            if knob not in self.vary or knob not in arguments:
                continue
            want, had = self.vary[knob], arguments[knob]
            workers = self.vary.get("num_workers", arguments.get("num_workers", 0))
            if knob in ("persistent_workers", "prefetch_factor") and not workers:
                self.skipped.setdefault(knob, f"{knob} needs workers, and this DataLoader has none")
                continue
            if want == had:   # the variant is the script's own: nothing changed, and said so at the exit
                if knob not in self.applied:
                    self.skipped.setdefault(knob, f"the script's DataLoader already has {knob}={_plain(want)}")
                continue
            arguments[knob] = want
            if knob not in self.applied:
                self.applied.add(knob)
                self.skipped.pop(knob, None)
                self.say(events.INSTRUMENT, state="varied", knob=knob, was=_plain(had), now=want)
        if "num_workers" in self.vary and not arguments.get("num_workers"):
            # the script's settings for workers the variant took away: a loader without workers refuses them
            if arguments.get("prefetch_factor") is not None:
                arguments["prefetch_factor"] = None
            if arguments.get("persistent_workers"):
                arguments["persistent_workers"] = False
        dataset = arguments.get("dataset")
        if dataset is not None:
            self.loader_setup[id(dataset)] = {k: _plain(arguments.get(k)) for k in SETUP_KEYS}

    def iterator_seen(self, iterator: Any) -> None:
        """The setup of a DataLoader made before the hooks went in (a process joined mid-run),
        read off an iterator over it: its own copies of the loader's arguments."""
        key = id(iterator._dataset)
        if key not in self.loader_setup:
            self.loader_setup[key] = {
                "num_workers": iterator._num_workers, "pin_memory": iterator._pin_memory,
                "persistent_workers": iterator._persistent_workers,
                "prefetch_factor": getattr(iterator, "_prefetch_factor", None),
                "batch_size": _plain(getattr(iterator._index_sampler, "batch_size", None))}

    def loader_of(self, source: Hashable | None) -> Any:
        """The DataLoader last made over the data set SOURCE (``id(dataset)``), while it lives."""
        found = self.loaders.get(source) if source is not None else None
        return found() if found is not None else None

    # -- threads ----------------------------------------------------------------------------

    def set_threads(self, torch: Any, replace: Callable[[Any, str, Any], None]) -> None:
        """PyTorch's operator threads to the variant's, now and whenever the script sets them."""
        if THREADS not in self.vary:
            return
        want = self.vary[THREADS]
        original = torch.set_num_threads
        had = torch.get_num_threads()   # the script's own: torch's default, or its OMP_NUM_THREADS
        original(want)
        # OpenMP's other users in this process (and its children) start with the same number:
        # set now, before any of them has made its pool (torch makes its own at the first parallel op)
        os.environ["OMP_NUM_THREADS"] = str(want)
        if had == want:   # the variant is the script's own: nothing changed (unless the script sets another)
            self.skipped[THREADS] = f"PyTorch already ran {want} operator thread{'s' * (want != 1)}"
        else:
            self.applied.add(THREADS)
            self.say(events.INSTRUMENT, state="varied", knob=THREADS, was=had, now=want)

        def set_num_threads(n: int) -> None:
            if n != want:
                self.applied.add(THREADS)
                self.say(events.INSTRUMENT, state="varied", knob=THREADS, was=n, now=want, by="the script")
            original(want)

        replace(torch, "set_num_threads", set_num_threads)

    # -- TensorFlow -------------------------------------------------------------------------

    def tensorflow(self, tf: Any) -> None:
        """TensorFlow's operator threads to the variant's, and tf.data's maps watched (and made
        parallel with ``map_parallel`` where the script left them sequential)."""
        self._tf_threads(tf)
        dataset = tf.data.Dataset
        original = dataset.map
        signature = inspect.signature(original)
        knobs = self

        def map(data: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                bound = signature.bind(data, *args, **kwargs)
                bound.apply_defaults()
                knobs.map_made(bound.arguments)
                args, kwargs = _call_arguments(signature, bound.arguments)
            except Exception:
                pass
            return original(data, *args, **kwargs)

        map.__wrapped__ = original  # type: ignore[attr-defined]  # functools.wraps without its copying
        map.__doc__ = original.__doc__
        dataset.map = map

    def map_made(self, arguments: dict[str, Any]) -> None:
        self.tf_maps += 1
        if arguments.get("num_parallel_calls") is not None:
            return
        self.tf_sequential_maps += 1
        if MAP_PARALLEL in self.vary:
            arguments["num_parallel_calls"] = self.vary[MAP_PARALLEL]
            if arguments.get("deterministic") is None:
                arguments["deterministic"] = True   # the elements in the script's order, as sequentially
            if MAP_PARALLEL not in self.applied:
                self.applied.add(MAP_PARALLEL)
                self.say(events.INSTRUMENT, state="varied", knob=MAP_PARALLEL, was=None, now=self.vary[MAP_PARALLEL])

    def _tf_threads(self, tf: Any) -> None:
        if THREADS not in self.vary:
            return
        threading = tf.config.threading
        want = self.vary[THREADS]
        had = threading.get_intra_op_parallelism_threads()   # 0: TensorFlow's default, every core
        original = threading.set_intra_op_parallelism_threads
        try:
            original(want)
        except RuntimeError as exc:  # TensorFlow already started its runtime
            self.skipped[THREADS] = f"TensorFlow's threads are fixed once it has started: {exc}"
            return
        self.applied.add(THREADS)
        self.say(events.INSTRUMENT, state="varied", knob=THREADS, was=had or "default", now=want)

        def set_intra_op_parallelism_threads(n: int) -> None:
            if n != want:
                self.say(events.INSTRUMENT, state="varied", knob=THREADS, was=n, now=want, by="the script")
            original(want)

        threading.set_intra_op_parallelism_threads = set_intra_op_parallelism_threads

    def tf_data_setup(self) -> dict[str, Any] | None:
        """How tf.data fed the script, for the setup event (None: it made no map)."""
        if not self.tf_maps:
            return None
        return {"maps": self.tf_maps, "sequential_maps": self.tf_sequential_maps}

    def at_exit(self) -> None:
        """Knobs of the variant that found nothing to apply to, and why."""
        for knob in self.vary:
            if knob in self.applied:
                continue
            why = self.skipped.get(knob) or (
                "the script made no DataLoader" if knob in LOADER_KNOBS else
                "the script left no tf.data map sequential (or made none)" if knob == MAP_PARALLEL else
                "the script imported no framework whose threads it sets")
            self.say(events.INSTRUMENT, state="not_applied", knob=knob, reason=why)


def _call_arguments(signature: inspect.Signature, arguments: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """ARGUMENTS (of a bound call, ``self`` first) as the args and kwargs to call with, less self."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for i, (name, parameter) in enumerate(signature.parameters.items()):
        if i == 0 or name not in arguments:
            continue
        value = arguments[name]
        if parameter.kind is parameter.VAR_POSITIONAL:
            args.extend(value)
        elif parameter.kind is parameter.VAR_KEYWORD:
            kwargs.update(value)
        elif parameter.kind is parameter.POSITIONAL_ONLY:
            args.append(value)
        else:
            kwargs[name] = value
    return tuple(args), kwargs


def _plain(value: Any) -> Any:
    return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)
