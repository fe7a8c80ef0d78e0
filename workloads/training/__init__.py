"""CPU vs GPU training of the CIFAR-100 CNN of source 001, in PyTorch or Keras 3.

The same 975,692-parameter network, data and batch size on either device, so two recordings
(one ``--device cpu``, one ``--device cuda``) compare like for like; ``--model dense`` is the
Dense-only case the source says can train faster on a CPU. Every epoch reports a "train" and a
"validate" phase and its loss, accuracy and step times; ``--ddp`` under torchrun reports each
rank in its own lane.

torch, TensorFlow and Keras are imported only once a run starts (and after
CUDA_VISIBLE_DEVICES / KERAS_BACKEND are set), so listing the workload stays instant.
"""

from __future__ import annotations

import argparse
import os
import sys

from .config import ALL, DEFAULT_STEPS, DeviceError, TrainingConfig, UsageError

TITLE = "CIFAR-100 CNN (975,692 params) trained on CPU or GPU, torch or Keras: train/validate phases, step times"
SOURCE = "001: CPU vs GPU training of a CIFAR-100 CNN"


def _count_or_all(text: str) -> int | str:
    if text == "all":
        return "all"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number or 'all', got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="training", description=TITLE)
    parser.add_argument("--model", choices=["cnn", "dense"], default="cnn",
                        help="cnn: the source's 975,692-parameter CNN; dense: Dense layers only (default cnn)")
    parser.add_argument("--framework", choices=["torch", "keras"], default="torch",
                        help="torch, or Keras 3 as the source uses (default torch)")
    parser.add_argument("--backend", choices=["torch", "tensorflow"], default=None,
                        help="Keras backend, set as KERAS_BACKEND before keras is imported (default torch)")
    parser.add_argument("--device", choices=["cpu", "cuda", "auto"], default="auto",
                        help="where to train; auto takes the GPU when there is one (default auto)")
    parser.add_argument("--cpu-method", choices=["env", "override", "device"], default="device",
                        help="how --device cpu keeps the GPU out: env (CUDA_VISIBLE_DEVICES=\"\" before the "
                             "import), override (torch.cuda.is_available = lambda: False) or device "
                             "(explicit torch.device('cpu') / keras.device('cpu')) (default device)")
    parser.add_argument("--epochs", type=_positive, default=3, help="epochs (default 3; the source ran 20)")
    parser.add_argument("--steps-per-epoch", type=_count_or_all, default=None,
                        help="training steps per epoch, or 'all' for the full 1,329 "
                             "(default 50 for cnn, about 12 s an epoch on a 2-core CPU; all for dense)")
    parser.add_argument("--val-steps", type=_count_or_all, default=None,
                        help="validation batches per epoch, or 'all' (default: 0.15/0.85 of the training steps)")
    parser.add_argument("--train-samples", type=_positive, default=None,
                        help="use only the first N samples before the 0.15 validation split (default all 50,000)")
    parser.add_argument("--batch-size", type=_positive, default=32, help="batch size (default 32, as the source)")
    parser.add_argument("--data", metavar="PATH", default=None,
                        help="cifar-100-python.tar.gz or its extracted folder (default: the Keras cache "
                             "~/.keras/datasets if there, else synthetic data of the same shape)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--ddp", action="store_true",
                        help="data parallel over torchrun's ranks (gloo on CPU, NCCL on GPU); "
                             "torchrun --nproc-per-node N -m workloads.training --ddp ...")
    return parser


def make_config(args: argparse.Namespace) -> TrainingConfig:
    """Checks the combination of options and fills in the model-dependent defaults."""
    if args.backend is not None and args.framework != "keras":
        raise UsageError("--backend applies to --framework keras only")
    backend = (args.backend or "torch") if args.framework == "keras" else None
    if args.ddp and args.framework != "torch":
        raise UsageError("--ddp needs --framework torch (it uses torch.distributed)")
    if args.ddp and "RANK" not in os.environ:
        raise UsageError("--ddp runs under torchrun: torchrun --nproc-per-node 2 -m workloads.training --ddp ...")
    if args.device == "cpu" and args.cpu_method == "override" and backend == "tensorflow":
        raise UsageError("--cpu-method override patches torch.cuda.is_available; "
                         "with --backend tensorflow use env or device")
    if args.data is not None and not os.path.exists(args.data):
        raise UsageError(f"--data {args.data}: no such file or folder")
    if args.steps_per_epoch is None:
        steps = DEFAULT_STEPS[args.model]
    else:
        steps = None if args.steps_per_epoch == "all" else args.steps_per_epoch
    val_steps = ALL if args.val_steps == "all" else args.val_steps   # None: in proportion
    return TrainingConfig(
        model=args.model, framework=args.framework, backend=backend, device=args.device,
        cpu_method=args.cpu_method, epochs=args.epochs, steps_per_epoch=steps, val_steps=val_steps,
        train_samples=args.train_samples, batch_size=args.batch_size, data=args.data,
        seed=args.seed, ddp=args.ddp)


def prepare_environment(config: TrainingConfig) -> None:
    """What must be in the environment before any framework is imported."""
    if config.device == "cpu" and config.cpu_method == "env":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    if config.framework == "keras":
        os.environ["KERAS_BACKEND"] = config.backend or "torch"
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TensorFlow's start-up notices out of the log


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        config = make_config(args)
    except UsageError as exc:
        print(f"training: {exc}", file=sys.stderr)
        return 2
    prepare_environment(config)

    from . import data

    def load_dataset() -> data.Dataset:
        return data.load(config.data, config.train_samples, config.seed)

    try:
        if config.framework == "torch":
            from . import torch_run

            torch_run.run(config, load_dataset)
        else:
            from . import keras_run

            keras_run.run(config, load_dataset)
    except (data.DataError, DeviceError, UsageError) as exc:
        print(f"training: {exc}", file=sys.stderr)
        return 1
    return 0
