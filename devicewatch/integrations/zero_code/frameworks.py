"""The frameworks the zero-code instrumentation knows, one row each.

Each row says which imported modules arm the framework, which hooks module of this package
arms it, whether its hooks measure the training loop, and how the report names it and its
training when the instrumentation was not active. The arming (``instrument.arm``), the
measured check (``process_state``) and the not-active text (``recorder.instrumentation``)
read this table alone, so a new framework is one row and one hooks module. Each hooks module
has ``on_import(framework, name, module, process)``, called once a row's module has run.

The startup ``sitecustomize`` cannot import this (that would cost every Python process of the
workload): the recorder hands it the watched modules and their frameworks in the workload's
environment (``zero_code.environment``), so it watches, and names in its errors, this table's.

Standard library only: the recorder imports it for every run.
"""

from __future__ import annotations

from dataclasses import dataclass

# How a framework's hooks measure its loop (``Framework.measures``).
LOOP = "loop"   # every training loop in a process where it is armed: data wait and steps
FIT = "fit"     # each fit its hooks took the batches of, as they say (``Process.fit_measured``)
NONE = ""       # nothing of its own: a callback that owns the phases, measured by another row

# Keras's TensorFlow trainer, and Keras 2's: what the TensorFlow hooks need to measure Model.fit
KERAS_TRAINER = "keras.src.backend.tensorflow.trainer"
KERAS2_TRAINER = "tf_keras.src.engine.training"


@dataclass(frozen=True)
class Framework:
    name: str                     # as the instrument events and the report name it
    title: str                    # as the not-active text writes it
    modules: tuple[str, ...]      # the modules whose import arms it
    hooks: str                    # the module of this package that arms it
    measures: str = NONE          # LOOP, FIT or NONE
    # What its hooks take for training, as (what, of whom): rows with the same ``what`` are
    # said together in the not-active text ("no fit of Lightning, Keras or the Trainer").
    training: tuple[str, str] | None = None
    # Modules whose import completes an arming already said (not said again).
    completing: tuple[str, ...] = ()


FRAMEWORKS: tuple[Framework, ...] = (
    Framework("torch", "torch", ("torch",), "torch_hooks", measures=LOOP,
              training=("optimizer step or backward pass", "torch")),
    Framework("lightning", "Lightning", ("lightning.pytorch", "pytorch_lightning"), "framework_hooks",
              training=("fit", "Lightning")),
    Framework("keras", "Keras", ("keras",), "framework_hooks", training=("fit", "Keras")),
    # Keras 2, also ``tf.keras`` under TF_USE_LEGACY_KERAS=1 (which imports tf_keras).
    Framework("tf_keras", "Keras 2", ("tf_keras",), "framework_hooks", training=("fit", "Keras 2")),
    # Its hooks count a tape's gradient and an optimizer's apply, eager or in a tf.function.
    Framework("tensorflow", "TensorFlow", ("tensorflow", KERAS_TRAINER, KERAS2_TRAINER), "tf_hooks",
              measures=FIT, training=("GradientTape gradient or optimizer step", "TensorFlow"),
              completing=(KERAS_TRAINER, KERAS2_TRAINER)),
    Framework("transformers", "transformers", ("transformers.trainer",), "framework_hooks",
              training=("fit", "the Trainer")),
)


def watched() -> dict[str, str]:
    """Each watched module name and the framework it arms, as the table says now: what the
    recorder hands the start-up hook (``zero_code.environment``)."""
    return {module: row.name for row in FRAMEWORKS for module in row.modules}


BY_NAME: dict[str, Framework] = {row.name: row for row in FRAMEWORKS}
WATCHED: dict[str, str] = watched()


def either(words: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def titles() -> str:
    """Every framework, as the not-active text names them: ``torch, Lightning, … or transformers``."""
    return either([row.title for row in FRAMEWORKS])


def training_steps() -> str:
    """What the hooks take for training, every framework's: ``no optimizer step or backward
    pass of torch, no fit of Lightning, Keras, Keras 2 or the Trainer, no GradientTape gradient or
    optimizer step of TensorFlow``."""
    groups: dict[str, list[str]] = {}
    for row in FRAMEWORKS:
        if row.training is not None:
            what, whom = row.training
            groups.setdefault(what, []).append(whom)
    return ", ".join(f"no {what} of {either(whom)}" for what, whom in groups.items())
