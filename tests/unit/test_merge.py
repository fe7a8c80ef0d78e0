"""Merging nodes' runs: literal run files with known clock pairs, so every aligned time is reasoned."""

import argparse

import pytest

from devicewatch import analysis, compare, merge
from devicewatch.commands import merge as merge_command
from devicewatch.errors import RunFileError, UsageError
from devicewatch.render.report import report_text
from devicewatch.runformat import records
from devicewatch.runformat.runfile import load

from conftest import merged_two_gpu_nodes, write_run

JOB = "127.0.0.1:29500"


def ident(rank, group=None, world=2, job=JOB):
    return {"rank": rank, "local_rank": 0, "world_size": world,
            "group_rank": rank if group is None else group, "job": job}


def phase(kind, t, rank, epoch, name="train", lane="main", **who):
    return {"type": "event", "t": t, "kind": kind, "name": name, "epoch": epoch, "lane": lane,
            "pid": 100 + rank, **ident(rank, **who)}


def node_file(path, rank, unix, mono, duration=4.0, end_pair=True, host="box", records=(), **who):
    """A node's run: started at wall clock ``unix`` / monotonic ``mono``, ran ``duration`` s."""
    records = [{"type": "sample", "t": 0.5, "cpu": [10.0, 30.0], "cpu_total": 20.0},
               phase("phase_begin", 1.0, rank, 1, **who), phase("phase_end", 2.0, rank, 1, **who),
               {"type": "log", "t": 2.5, "stream": "stdout", "line": f"rank {rank} done"},
               *records]
    end = {"type": "end", "t": duration, "status": "ok", "exit_code": 0, "signal": None,
           "duration": duration, "reason": "the workload finished"}
    if end_pair:
        end["clock"] = {"unix": unix + duration, "mono": mono + duration}
    return write_run(path, records, header={"started_unix": round(unix, 3), "clock": {"unix": unix, "mono": mono},
                                            "host": {"hostname": host, "cpu_model": "test", "cpu_count": 2, "gpus": []}},
                     end=end)


def two_nodes(tmp_path, b_unix=1002.0005, b_mono=52.0, **b):
    a = node_file(tmp_path / "node0.jsonl", 0, 1000.0, 50.0)
    other = node_file(tmp_path / "node1.jsonl", 1, b_unix, b_mono, **b)
    return str(a), str(other)


def test_merge_puts_each_rank_in_its_lane_and_each_host_apart(tmp_path):
    merged = merge.merge(list(two_nodes(tmp_path)))
    out = tmp_path / "merged.jsonl"
    merge.write(merged, str(out))
    run = load(out)
    # node 1 started 2.0005 s after node 0 on the wall clock: its t = 1.0 is 3.0005 merged
    ends = {(e["lane"], e["t"]) for e in run.events if e["kind"] == "phase_end"}
    assert ends == {("rank 0", 2.0), ("rank 1", 4.0005)}
    assert [(s["host"], s["t"]) for s in run.samples] == [("node 0", 0.5), ("node 1", 2.5005)]
    assert {(log.host, log.rank, log.line) for log in run.logs} == {
        ("node 0", 0, "rank 0 done"), ("node 1", 1, "rank 1 done")}
    assert run.host_labels == ["node 0", "node 1"]
    assert run.duration == pytest.approx(6.0005)
    assert run.end.status == "ok"
    assert [lane for lane in analysis.lanes(analysis.phases(run))] == ["rank 0", "rank 1"]
    # one host (same name, same boot): the pairs disagree by 0.5 ms, the error it states
    assert run.header.raw["alignment"]["hosts"] == 1
    assert run.header.raw["alignment"]["same_host_error_s"] == pytest.approx(0.0005)
    node1 = run.of_host("node 1")
    assert [s["t"] for s in node1.samples] == [2.5005] and node1.header.host.hostname == "box"


def test_two_hosts_state_their_clock_sync_as_the_error(tmp_path):
    merged = merge.merge(list(two_nodes(tmp_path, host="other")))
    assert merged.alignment["hosts"] == 2 and merged.alignment["same_host_error_s"] is None
    assert "clock synchronisation" in merged.alignment["text"]


def test_the_end_pair_corrects_a_slewed_wall_clock(tmp_path):
    # node 1's wall clock ran 1e-4 fast against its monotonic clock: 4 mono s are 4.0004 wall s
    b = node_file(tmp_path / "node1.jsonl", 1, 1001.0, 951.0, host="other")
    text = b.read_text().replace('"unix": 1005.0', '"unix": 1005.0004')
    b.write_text(text)
    a = node_file(tmp_path / "node0.jsonl", 0, 1000.0, 50.0)
    merged = merge.merge([str(a), str(b)])
    end = next(r for r in merged.records if isinstance(r, dict) and r.get("kind") == "phase_end" and r["rank"] == 1)
    assert end["t"] == pytest.approx(1.0 + 2.0 * 1.0001)


def test_stragglers_name_the_last_rank_and_the_others_wait(tmp_path):
    run = load(write_run(tmp_path / "literal.jsonl", [phase("phase_begin", 0.0, 0, 1), phase("phase_end", 1.0, 0, 1),
                        phase("phase_begin", 0.0, 1, 1), phase("phase_end", 1.4, 1, 1),
                        phase("phase_begin", 1.5, 0, 2), phase("phase_end", 2.7, 0, 2),
                        phase("phase_begin", 1.5, 1, 2), phase("phase_end", 2.5, 1, 2),
                        phase("phase_begin", 2.8, 1, 3)]))  # epoch 3 never ended: no finish to judge
    rows = analysis.run_figures(run).stragglers
    assert [(r.epoch, r.last_rank, r.waited) for r in rows] == [(1, 1, {0: 0.4}), (2, 0, {1: 0.2})]
    assert rows[0].finished == {0: 1.0, 1: 1.4} and rows[1].max_wait == pytest.approx(0.2)


@pytest.mark.parametrize("case, error, says", [
    ("missing", RunFileError, "no such file"),
    ("twice", UsageError, "given twice"),
    ("same node", RunFileError, "same node given twice"),
    ("apart", RunFileError, "do not overlap in time"),
    ("other job", RunFileError, "different jobs"),
    ("no ranks", RunFileError, "no events from torchrun ranks"),
    ("one file", UsageError, "two or more"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_bad_input_is_one_clear_line(tmp_path, case, error, says):
    a = str(node_file(tmp_path / "node0.jsonl", 0, 1000.0, 50.0))
    paths = {
        "missing": [a, str(tmp_path / "absent.jsonl")],
        "twice": [a, a],
        "same node": [a, str(node_file(tmp_path / "copy.jsonl", 0, 1000.0, 50.0))],
        "apart": [a, str(node_file(tmp_path / "late.jsonl", 1, 2000.0, 1050.0))],
        "other job": [a, str(node_file(tmp_path / "job.jsonl", 1, 1001.0, 51.0, job="10.0.0.1:29400"))],
        "no ranks": [a, str(write_run(tmp_path / "plain.jsonl", [{"type": "sample", "t": 0.1, "cpu": [1.0]}]))],
        "one file": [a],
    }[case]
    with pytest.raises(error, match=says) as caught:
        merge.merge(paths)
    assert "\n" not in str(caught.value)


def test_a_merged_run_is_not_merged_again(tmp_path):
    a, b = two_nodes(tmp_path)
    out = tmp_path / "merged.jsonl"
    merge.write(merge.merge([a, b]), str(out))
    with pytest.raises(RunFileError, match="already a merged run"):
        merge.merge([str(out), a])


def test_a_node_whose_recorder_was_killed_merges_by_its_start_pair(tmp_path):
    a = node_file(tmp_path / "node0.jsonl", 0, 1000.0, 50.0)
    b = node_file(tmp_path / "node1.jsonl", 1, 1001.0, 51.0)
    b.write_text("".join(b.read_text().splitlines(keepends=True)[:-1]))  # no end record
    merged = merge.merge([str(a), str(b)])
    assert merged.records[-1].status == "error"
    (notice,) = [r for r in merged.records if isinstance(r, records.Notice) and "node 1 ended error" in r.message]
    assert notice.t == pytest.approx(1.0 + 2.5)  # node 1's last record, 1 s after node 0 began
    assert merged.records[-1].duration == pytest.approx(4.0)  # node 0 ran longest


def parse(argv):
    parser = argparse.ArgumentParser(prog="devicewatch merge")
    merge_command.add_arguments(parser)
    return parser.parse_args(argv)


def test_the_command_writes_one_run_and_prints_the_alignment(tmp_path, capsys):
    a, b = two_nodes(tmp_path)
    out = tmp_path / "merged.jsonl"
    assert merge_command.run(parse([a, b, "-o", str(out)])) == 0
    printed = capsys.readouterr().out
    assert "alignment: one host: aligned to within 500.0 µs" in printed
    assert "epoch 1: rank 1 finished its work last; waited: rank 0 2.00" in printed
    assert load(out).header.raw["job"]["ranks"] == [0, 1]
    with pytest.raises(UsageError, match="is one of the files"):
        merge_command.run(parse([a, b, "-o", a]))


def test_one_host_of_a_merged_run_is_that_nodes_run_exactly(tmp_path):
    """Samples, the driver's buffered samples and per-process use of one node, none of the
    other's, and its own cores and GPUs: the charts and verdict of one host read the same."""
    out, a, b = merged_two_gpu_nodes(tmp_path)
    run = load(out)
    assert run.host_labels == ["node 0", "node 1"] and run.samples.gpus == 2

    node0, node1 = run.of_host("node 0"), run.of_host("node 1")
    judged = {h.host: h.verdict for h in analysis.run_figures(run).hosts}   # each host on its own figures
    for label, node, path in (("node 0", node0, a), ("node 1", node1, b)):  # started at one wall clock: same times
        own = load(path)
        assert node.samples.gpus == own.samples.gpus and node.header.host == own.header.host
        assert list(node.samples.t) == list(own.samples.t)
        assert list(node.samples.cpu_total) == list(own.samples.cpu_total)
        for g in range(own.samples.gpus):
            for ours, theirs in zip(node.samples.util(g), own.samples.util(g)):
                assert list(ours) == list(theirs)
        assert list(node.samples.procs("pid")) == list(own.samples.procs("pid"))
        assert list(node.samples.procs_t) == list(own.samples.procs_t)
        assert judged[label].figures == analysis.run_figures(own).verdict.figures
    assert node1.samples.gpus == 1 and list(node1.samples.procs("pid")) == [100.0, 101.0]
    assert [e["rank"] for e in node1.events] == [1, 1] and [r.line for r in node1.logs] == ["rank 1 done"]
    with pytest.raises(RunFileError, match="no host 'node 2'"):
        run.of_host("node 2")


def test_report_of_a_merged_run_gives_each_node_its_own_devices_and_verdict(tmp_path):
    out, a, b = merged_two_gpu_nodes(tmp_path)
    summary = analysis.Summary.of(analysis.run_figures(load(out))).to_json()
    own = [analysis.Summary.of(analysis.run_figures(load(path))).to_json() for path in (a, b)]
    assert [h["host"] for h in summary["per_host"]] == ["node 0", "node 1"]
    assert [h["hostname"] for h in summary["per_host"]] == ["abox", "bbox"]
    for host, alone in zip(summary["per_host"], own):
        assert host["verdict"] == alone["verdict"] and host["devices"] == alone["devices"]
    assert [d["device"].split(":")[0] for d in summary["devices"]] == ["node 0", "node 0", "node 1"]
    assert summary["verdict"]["text"] == "; ".join(f"node {i}: {o['verdict']['text']}" for i, o in enumerate(own))
    text = report_text(analysis.run_figures(load(out)))
    assert "Per host" in text and "verdict node 0:" in text and "verdict node 1:" in text


def test_compare_judges_a_merged_side_node_by_node(tmp_path):
    out, a, _b = merged_two_gpu_nodes(tmp_path)
    c = compare.comparison(load(a), load(out))
    alone = analysis.run_figures(load(a)).verdict
    assert c.b.verdict.text.startswith(f"node 0: {alone.text}; node 1: ")
    assert [d.device for d in c.b.devices] == ["node 0: GPU 0 (A100)", "node 0: GPU 1 (A100)", "node 1: GPU 0 (H100)"]
    assert c.a.verdict == alone
