"""The attach's pure parts: austin's samples as slices, stacks as kinds, slices as phase events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from devicewatch.attach.classify import DATA, OTHER, TRAIN, VALIDATE, Classifier, loader_workers, read_source
from devicewatch.attach.phases import PhaseBuilder
from devicewatch.attach.stacks import Frame, SampleReader, Slice, Slicer

SCRIPT = """\
import torch
for epoch in range(3):
    for x, y in train:
        loss = model(x).sum()
        loss.backward()
        opt.step()
    with torch.no_grad():
        for x, y in val:
            model(x)
save(model)


@torch.inference_mode()
def score(batch):
    return model(batch)
"""


def test_the_source_says_which_lines_evaluate_and_which_train() -> None:
    source = read_source(SCRIPT)
    # The with block (lines 7-9) and the decorated function (its def on 14 to its end on 15).
    assert sorted(source.no_grad) == [(7, 9), (14, 15)]
    # The outer loop (2-9) and the inner one (3-6) both hold backward() in their bodies.
    assert sorted(source.training) == [(2, 9), (3, 6)]
    assert not source.in_training(10) and not source.in_no_grad(10)


def test_a_script_that_does_not_parse_says_nothing() -> None:
    assert read_source("for x in :\n") == read_source("")


LOADER_NEXT = Frame("_BaseDataLoaderIter.__next__", "/v/torch/utils/data/dataloader.py", 733)
SINGLE = Frame("_SingleProcessDataLoaderIter._next_data", "/v/torch/utils/data/dataloader.py", 789)
BACKWARD = Frame("Tensor.backward", "/v/site-packages/torch/_tensor.py", 626)
FORWARD = Frame("Module._call_impl", "/v/site-packages/torch/nn/modules/module.py", 1750)


def frames(script: Path, line: int, *inner: Frame) -> tuple[Frame, ...]:
    return (Frame("<module>", str(script), line), *inner)


def test_stacks_are_told_apart_by_their_frames_and_the_script_s_lines(tmp_path: Path) -> None:
    script = tmp_path / "loop.py"
    script.write_text(SCRIPT)
    kind = Classifier().kind
    assert kind(frames(script, 3, LOADER_NEXT, SINGLE)) == DATA
    assert kind(frames(script, 5, BACKWARD)) == TRAIN
    assert kind(frames(script, 4, FORWARD)) == TRAIN           # the loop's body, by the source
    assert kind(frames(script, 8, LOADER_NEXT, SINGLE)) == VALIDATE   # the evaluation's own loader
    assert kind(frames(script, 9, FORWARD)) == VALIDATE
    assert kind(frames(script, 10)) == OTHER                   # after the loop
    assert kind((Frame("evaluate", "/elsewhere/keras/src/trainers/trainer.py", 1), FORWARD)) == VALIDATE
    # model.eval() is Module.eval, no evaluation loop
    assert kind(frames(script, 10, Frame("Module.eval", "/v/torch/nn/modules/module.py", 2800))) == OTHER


def test_the_loader_s_iterator_says_whether_it_has_workers() -> None:
    assert loader_workers((LOADER_NEXT, SINGLE)) is False
    assert loader_workers((LOADER_NEXT, Frame("_MultiProcessingDataLoaderIter._next_data", "x", 1))) is True
    assert loader_workers((BACKWARD,)) is None


# Lines as austin 3.7 writes them (-P, wall-clock mode), taken from a run on the loop of
# tests/integration/test_attach_process.py.
LINES = [
    "# austin: 3.7.0\n",
    "P300;T0:300;/s/loop.py:<module>:37;/v/torch/utils/data/dataloader.py:_BaseDataLoaderIter.__next__:725 40116\n",
    "P300;T0:300;:INVALID: 40130\n",
    "P300;T0:301;/v/threading.py:Thread._bootstrap:995 40120\n",
    "P300;T0:300;/s/loop.py:<module>:41;/v/torch/nn/functional.py:relu:1771 40388\n",
    "P300;T0:300;/s/loop.py:<module>:41;/v/torch/nn/functional.py:relu:1771 40000\n",
    "# errors: 1/4\n",
]


def test_austin_s_lines_become_samples_and_an_unreadable_stack_none() -> None:
    reader = SampleReader()
    got = [reader.read(line) for line in LINES]
    assert [g is None for g in got] == [True, False, True, False, False, False, True]
    first = got[1]
    assert first is not None and (first.pid, first.tid, first.delta) == (300, 300, 0.040116)
    assert first.stack == (Frame("<module>", "/s/loop.py", 37),
                           Frame("_BaseDataLoaderIter.__next__", "/v/torch/utils/data/dataloader.py", 725))
    assert first.stack[1].function == "__next__"
    assert got[4] is not None and got[5] is not None and got[4].stack is got[5].stack   # parsed once


def test_a_thread_s_stack_holds_until_its_next_sample_a_late_burst_spread_back_by_austin_s_intervals() -> None:
    reader, slicer = SampleReader(), Slicer()
    main_1, other, main_2, main_3 = (s for s in (reader.read(line) for line in LINES) if s is not None)
    slicer.add(main_1, 10.0)
    slicer.add(other, 10.01)
    assert slicer.ready() == []   # each thread's first sample closes nothing
    # Came 0.5 s after the one before, though austin took it 40 ms after: this reader was kept
    # waiting (a busy machine): timed by austin's interval; the next likewise.
    slicer.add(main_2, 10.5)
    slicer.add(main_3, 10.8)
    assert slicer.ready() == [Slice("MainThread", 300, 10.0, 10.040388, main_1.stack)]   # main_3: held
    assert slicer.flush() == [Slice("MainThread", 300, 10.040388, 10.080388, main_2.stack)]
    slicer.forget()   # a new austin run: nothing spans the moment between two


def test_a_burst_read_late_at_the_start_is_timed_back_from_its_last_sample() -> None:
    """Seven samples austin took 40 ms apart, read together 0.3 s late: spread over the 0.24 s
    they were taken in, ending when the last came, not squeezed into the moment they were read."""
    reader, slicer = SampleReader(), Slicer()
    sample = reader.read(LINES[1])
    assert sample is not None
    for n in range(7):
        slicer.add(sample, 5.3 + n * 0.001)
    got = slicer.flush()
    assert [round(s.start, 4) for s in got] == [round(5.306 - 0.040116 * (6 - n), 4) for n in range(6)]
    assert got[-1].end == 5.306


class Kinds(Classifier):
    """Stacks named by their kind: the builder's input without a script."""

    def kind(self, stack: tuple[Frame, ...]) -> str:
        return stack[-1].name


def piece(kind: str, start: float, end: float) -> Slice:
    return Slice("MainThread", 1, start, end, (Frame(kind, "x.py", 1),))


def test_passes_become_train_validate_and_data_phases_with_their_epoch_figures() -> None:
    written: list[dict[str, Any]] = []
    builder = PhaseBuilder(written.append, pid=42, classifier=Kinds())
    # Joined mid-pass: a partial pass (no epoch), then one whole pass, then a second cut short.
    timeline = [(TRAIN, 0.0, 0.5), (VALIDATE, 0.5, 1.0),
                (DATA, 1.0, 1.6), (TRAIN, 1.6, 1.8), (DATA, 1.8, 2.4), (TRAIN, 2.4, 2.6), (VALIDATE, 2.6, 3.0),
                (DATA, 3.0, 3.2)]
    for kind, start, end in timeline:
        builder.feed(piece(kind, start, end))
    builder.finish()
    phases = [(r["kind"], r["name"], r["t"], r["epoch"]) for r in written if r["kind"].startswith("phase")]
    assert phases == [
        ("phase_begin", "train", 0.0, None), ("phase_end", "train", 0.5, None),
        ("phase_begin", "validate", 0.5, None), ("phase_end", "validate", 1.0, None),
        ("phase_begin", "train", 1.0, 1),
        ("phase_begin", "data", 1.0, 1), ("phase_end", "data", 1.6, 1),
        ("phase_begin", "data", 1.8, 1), ("phase_end", "data", 2.4, 1),
        ("phase_end", "train", 2.6, 1), ("phase_begin", "validate", 2.6, 1),
        ("phase_end", "validate", 3.0, 1), ("phase_begin", "train", 3.0, 2),
        ("phase_begin", "data", 3.0, 2), ("phase_end", "data", 3.2, 2), ("phase_end", "train", 3.2, 2)]
    epochs = [r for r in written if r["kind"] == "epoch"]
    # Only the whole pass: 1.2 s of its 1.6 s waited on data, two steps (data, then train) in 1.6 s.
    assert [(r["epoch"], r["t"]) for r in epochs] == [(1, 2.6)]
    assert epochs[0]["metrics"] == {"steps": 2, "data_wait_s": 1.2, "wait_s": 1.2, "loader_wait_s": 1.2,
                                    "iterators": 1, "waited_on": "DataLoader", "steps_sampled": True}
    assert all(r["sampled"] and r["source"] == "auto" and r["pid"] == 42 for r in written)


def test_a_gap_between_windows_is_no_data_wait_and_an_overlap_is_taken_once() -> None:
    written: list[dict[str, Any]] = []
    builder = PhaseBuilder(written.append, pid=1, classifier=Kinds())
    for kind, start, end in [(VALIDATE, 0.0, 0.2), (DATA, 0.2, 0.6), (TRAIN, 0.6, 0.8),
                             (DATA, 0.7, 1.0),          # the next window, begun before the last ended
                             (DATA, 1.2, 1.4),          # after 0.2 s nobody sampled
                             (VALIDATE, 1.4, 1.6)]:
        builder.feed(piece(kind, start, end))
    builder.finish()
    (epoch,) = [r for r in written if r["kind"] == "epoch"]
    # Sampled: data 0.4 + 0.2 + 0.2, train 0.2, of 1.0 s; the pass lasted 1.2 s: 0.8 / 1.0 of it.
    assert epoch["metrics"]["data_wait_s"] == 0.96


def test_one_stray_sample_in_an_evaluation_begins_no_pass() -> None:
    """A non-blocking read of a stack as it changes: 4 ms of data amid evaluation, and 10 ms of
    neither, stay evaluation; 60 ms of data after it is the next pass."""
    written: list[dict[str, Any]] = []
    builder = PhaseBuilder(written.append, pid=1, classifier=Kinds())
    for kind, start, end in [(DATA, 0.0, 1.0), (VALIDATE, 1.0, 1.2), (DATA, 1.2, 1.204), (VALIDATE, 1.204, 1.3),
                             (OTHER, 1.3, 1.31), (VALIDATE, 1.31, 1.4), (DATA, 1.4, 1.46), (TRAIN, 1.46, 1.5)]:
        builder.feed(piece(kind, start, end))
    builder.finish()
    phases = [(r["kind"], r["name"], r["t"]) for r in written if r["kind"].startswith("phase") and r["name"] != "data"]
    assert phases == [("phase_begin", "train", 0.0), ("phase_end", "train", 1.0), ("phase_begin", "validate", 1.0),
                      ("phase_end", "validate", 1.4), ("phase_begin", "train", 1.4), ("phase_end", "train", 1.5)]


def test_a_change_of_section_in_a_gap_is_put_halfway_through_it() -> None:
    written: list[dict[str, Any]] = []
    builder = PhaseBuilder(written.append, pid=1, classifier=Kinds())
    for kind, start, end in [(DATA, 0.0, 1.0), (VALIDATE, 1.4, 1.6), (DATA, 1.64, 1.8)]:
        builder.feed(piece(kind, start, end))
    builder.finish()
    phases = [(r["kind"], r["name"], r["t"]) for r in written if r["kind"].startswith("phase") and r["name"] != "data"]
    # 0.4 s unsampled between the pass and evaluation: the change at 1.2; 40 ms is no gap.
    assert phases == [("phase_begin", "train", 0.0), ("phase_end", "train", 1.2), ("phase_begin", "validate", 1.2),
                      ("phase_end", "validate", 1.64), ("phase_begin", "train", 1.64), ("phase_end", "train", 1.8)]


def test_a_stray_sample_is_judged_by_the_sampling_period() -> None:
    """At 25 samples a second a stray sample's slice lasts 40 ms, and 80 ms when the next sample
    comes late: under 2.5 periods (100 ms) it is the evaluation's; 120 ms of data is a pass."""
    def passes(stray: float) -> int:
        written: list[dict[str, Any]] = []
        builder = PhaseBuilder(written.append, pid=1, classifier=Kinds(), period=0.04)
        for kind, start, end in [(DATA, 0.0, 1.0), (VALIDATE, 1.0, 1.2), (DATA, 1.2, 1.2 + stray),
                                 (VALIDATE, 1.2 + stray, 1.5)]:
            builder.feed(piece(kind, start, end))
        builder.finish()
        return sum(1 for r in written if r["kind"] == "phase_begin" and r["name"] == "train")

    assert passes(0.08) == 1
    assert passes(0.12) == 2


def test_a_misread_evaluation_amid_a_pass_on_a_busy_machine_splits_no_epoch() -> None:
    """At 25 samples a second (a glitch: 0.1 s) a busy machine holds a misread sample until a
    late next one: 0.15 s of evaluation amid a pass, longer than a glitch. It is under half the
    evaluations seen whole (0.4 s), and comes before the pass has run its course: the pass goes
    on. An evaluation of 0.25 s, shorter than those before it but over half of them, is the
    epoch's; then one of 0.18 s, over half the shortest seen (0.25 s)."""
    written: list[dict[str, Any]] = []
    builder = PhaseBuilder(written.append, pid=1, classifier=Kinds(), period=0.04)
    timeline = [(DATA, 0.0, 0.9), (TRAIN, 0.9, 1.0), (VALIDATE, 1.0, 1.4),                # partial pass
                (DATA, 1.4, 1.8), (TRAIN, 1.8, 1.84), (VALIDATE, 1.84, 1.99),            # pass 1, a misread
                (DATA, 1.99, 2.5), (TRAIN, 2.5, 2.54), (DATA, 2.54, 2.9), (VALIDATE, 2.9, 3.3),
                (DATA, 3.3, 3.8), (TRAIN, 3.8, 3.84), (VALIDATE, 3.84, 3.99),            # pass 2, a misread
                (DATA, 3.99, 4.76), (TRAIN, 4.76, 4.8), (VALIDATE, 4.8, 5.05),           # shorter, over half
                (DATA, 5.05, 6.51), (TRAIN, 6.51, 6.55), (VALIDATE, 6.55, 6.73),         # under half, at the end
                (DATA, 6.73, 7.0)]
    for kind, start, end in timeline:
        builder.feed(piece(kind, start, end))
    builder.finish()
    spans: dict[tuple[str, Any], list[float]] = {}
    for r in written:
        if r["kind"].startswith("phase") and r["name"] != "data":
            spans.setdefault((r["name"], r["epoch"]), []).append(round(r["t"], 4))
    assert spans == {("train", None): [0.0, 1.0], ("validate", None): [1.0, 1.4],
                     ("train", 1): [1.4, 2.9], ("validate", 1): [2.9, 3.3],
                     ("train", 2): [3.3, 4.8], ("validate", 2): [4.8, 5.05],
                     ("train", 3): [5.05, 6.55], ("validate", 3): [6.55, 6.73], ("train", 4): [6.73, 7.0]}
    epochs = {r["epoch"]: r["metrics"] for r in written if r["kind"] == "epoch"}
    # Passes 1 and 2: 1.5 s, two steps, 1.5 - 0.08 train - 0.15 misread = 1.27 s of data sampled
    # (the misread's seconds are neither data nor train: the pass's, not the evaluation's).
    assert sorted(epochs) == [1, 2, 3]
    assert [(epochs[n]["steps"], epochs[n]["data_wait_s"]) for n in (1, 2, 3)] == [(2, 1.27), (2, 1.27), (1, 1.46)]


def test_the_epoch_under_way_is_read_from_the_script_s_own_loop_variable() -> None:
    from devicewatch.attach.loop_variable import epoch_in

    def frame(name: str, file: str, **local: str) -> dict[str, Any]:
        return {"name": name, "filename": file, "locals": [{"name": k, "repr": v} for k, v in local.items()]}

    keras = frame("fit", "/v/site-packages/keras/src/backend/torch/trainer.py", epoch="0")   # 0-based, not the script's
    main = frame("main", "/home/u/train.py", epoch="7", loss="0.25")
    dump = [{"thread_name": "pt_autograd_0", "frames": [frame("run", "/home/u/train.py", epoch="99")]},
            {"thread_name": "MainThread", "frames": [keras, frame("fit_one", "/home/u/train.py", batch="3"), main,
                                                     frame("<module>", "/home/u/train.py")]}]
    assert epoch_in(dump) == ("epoch", 7)
    # Named for the epoch but no whole number, or only a framework's: none.
    assert epoch_in([{"thread_name": "MainThread", "frames": [frame("main", "/h/t.py", epoch="<object at 0x1>"),
                                                              keras]}]) is None
    assert epoch_in([{"thread_name": "MainThread", "frames": [frame("main", "/h/t.py", current_epoch="3")]}]) \
        == ("current_epoch", 3)
    assert epoch_in("not a dump") is None


def test_an_evaluation_cut_by_a_moment_nobody_sampled_still_ends_its_pass() -> None:
    """Evaluations of 0.4 s seen whole; the next one seen for 0.1 s before 0.4 s nobody sampled
    (between two py-spy runs): up to halfway through the gap it may have gone on, 0.3 s in all,
    over half of 0.4 s: the pass ends where it began, and the next begins halfway through the gap."""
    written: list[dict[str, Any]] = []
    builder = PhaseBuilder(written.append, pid=1, classifier=Kinds(), period=0.04)
    for kind, start, end in [(DATA, 0.0, 1.0), (VALIDATE, 1.0, 1.4), (DATA, 1.4, 2.9), (VALIDATE, 2.9, 3.0),
                             (DATA, 3.4, 4.0)]:
        builder.feed(piece(kind, start, end))
    builder.finish()
    spans = [(r["kind"], r["name"], round(r["t"], 4), r["epoch"]) for r in written
             if r["kind"].startswith("phase") and r["name"] != "data"]
    assert spans == [("phase_begin", "train", 0.0, None), ("phase_end", "train", 1.0, None),
                     ("phase_begin", "validate", 1.0, None), ("phase_end", "validate", 1.4, None),
                     ("phase_begin", "train", 1.4, 1), ("phase_end", "train", 2.9, 1),
                     ("phase_begin", "validate", 2.9, 1), ("phase_end", "validate", 3.2, 1),
                     ("phase_begin", "train", 3.2, 2), ("phase_end", "train", 4.0, 2)]
