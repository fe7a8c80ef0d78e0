"""A job's file names from its launcher's variables, its id in each header, and a job's folder
read as one run by every view."""

import json
import os
import re

import pytest

from devicewatch import job, job_files
from devicewatch.errors import RunFileError, UsageError
from devicewatch.runformat.header import Header, JobId
from devicewatch.runformat.runfile import read_header

from conftest import command
from test_merge import node_file


def test_a_pattern_names_the_host_the_job_and_the_node_from_the_launchers_variables():
    slurm = {"SLURM_JOB_ID": "4711", "SLURM_NODEID": "3"}
    assert job.expand("runs/%j/%h.jsonl", slurm, host="gpu017") == "runs/4711/gpu017.jsonl"
    assert job.expand("runs/%j/node%n-%p.jsonl", slurm, host="h", pid=99) == "runs/4711/node3-99.jsonl"
    assert job.expand("runs/100%%-%j.jsonl", {"TORCHELASTIC_RUN_ID": "r1"}) == "runs/100%-r1.jsonl"
    # ours first: a launcher without a variable of its own (a Kubernetes label via the downward API)
    assert job.expand("%j", {"DEVICEWATCH_JOB": "train-7", "SLURM_JOB_ID": "1"}) == "train-7"
    assert job.expand("%j", {"DEVICEWATCH_JOB": "a/b c"}) == "a-b-c"     # one path component
    assert job.expand("plain.jsonl", {}) == "plain.jsonl"


def test_a_field_the_environment_cannot_fill_is_one_line_naming_the_variables():
    with pytest.raises(UsageError, match=r"%j needs the job's id, and none of \$DEVICEWATCH_JOB, \$SLURM_JOB_ID"):
        job.expand("runs/%j/%h.jsonl", {})
    with pytest.raises(UsageError, match="unknown field %x"):
        job.expand("runs/%x.jsonl", {})


def test_two_recorders_of_one_host_given_one_name_get_two_files(tmp_path):
    pattern = str(tmp_path / "%j" / "%h.jsonl")
    env = {"SLURM_JOB_ID": "9"}
    first, second = job.record_path(pattern, env), job.record_path(pattern, env)
    host = job.host_name()
    assert (first, second) == (str(tmp_path / "9" / f"{host}.jsonl"), str(tmp_path / "9" / f"{host}-2.jsonl"))
    assert os.path.getsize(first) == 0 and os.path.getsize(second) == 0   # reserved, empty: a recorder takes them


def test_the_job_of_a_process_and_its_header_record_round_trip():
    found = job.job_of({"SLURM_JOB_ID": "4711", "SLURM_NODEID": "1", "PET_NODE_RANK": "5"})
    assert found == JobId("4711", "SLURM_JOB_ID", "1", "SLURM_NODEID")
    assert JobId.parse(found.to_json()) == found
    assert job.job_of({}) is None
    # a merged run's job (MASTER_ADDR:PORT, world size, ranks) is no launcher's: not a node's job
    assert Header.parse({"job": {"id": "127.0.0.1:29500", "world_size": 2}}).job is None


def test_a_recorder_given_a_pattern_writes_the_job_into_its_header(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVICEWATCH_JOB", "j42")
    monkeypatch.delenv("DEVICEWATCH_NODE", raising=False)
    for name in job.NODE_VARIABLES[1:] + job.JOB_VARIABLES[1:]:
        monkeypatch.delenv(name, raising=False)
    from devicewatch import cli

    module, args = cli.parse(["--record", str(tmp_path / "%j" / "%h.jsonl"), "--quiet", "--gpu", "off",
                              "--", "true"])
    assert module.run(args) == 0
    written = tmp_path / "j42" / f"{job.host_name()}.jsonl"
    header = read_header(written)
    assert header is not None and header.job == JobId("j42", "DEVICEWATCH_JOB")


def job_of_two(tmp_path, folder, job_id, unix, ranks=(0, 1)):
    folder.mkdir(exist_ok=True)
    paths = []
    for rank in ranks:
        path = node_file(folder / f"node{rank}.jsonl", rank, unix + 0.001 * rank, 50.0 + rank)
        lines = path.read_text().splitlines()
        head = json.loads(lines[0])
        head["job"] = {"id": job_id, "from": "SLURM_JOB_ID"}
        path.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
        paths.append(path)
    return paths


def test_a_folder_is_read_as_its_newest_job_and_another_jobs_files_are_left_out(tmp_path):
    folder = tmp_path / "runs"
    job_of_two(tmp_path, folder, "old", 1000.0)
    (folder / "node0.jsonl").rename(folder / "old0.jsonl")
    (folder / "node1.jsonl").rename(folder / "old1.jsonl")
    job_of_two(tmp_path, folder, "new", 2000.0)
    (folder / "notes.jsonl").write_text("hello\n")
    found = job_files.job_folder(folder)
    assert found.job == "new"
    assert [f.path.name for f in found.files] == ["node0.jsonl", "node1.jsonl"]
    assert found.left_out == ("notes.jsonl: not a devicewatch run file", "old0.jsonl: of job old",
                              "old1.jsonl: of job old")
    said: list[str] = []
    run = job_files.load_run(folder, say=said.append)
    assert run.host_labels == ["node 0", "node 1"]
    assert len(said) == 3


def test_report_compare_and_export_take_a_jobs_folder_as_the_merged_file(tmp_path, capsys):
    folder = tmp_path / "job"
    job_of_two(tmp_path, folder, "7", 1000.0)
    assert command("report", [str(folder), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert sorted(summary["lanes"]) == ["rank 0", "rank 1"]
    assert command("compare", [str(folder), str(folder / "node0.jsonl"), "--text"]) == 0
    out = tmp_path / "trace.json"
    assert command("export", [str(folder), "--format", "perfetto", "-o", str(out)]) == 0
    names = {e["args"]["name"].split(":")[0] for e in json.loads(out.read_text())["traceEvents"]
             if e.get("name") == "process_name"}
    assert names == {"node 0", "node 1"}


def test_a_folder_without_a_nodes_file_is_one_line(tmp_path):
    (tmp_path / "x.jsonl").write_text("nope\n")
    with pytest.raises(RunFileError, match=r"holds no node's run file \(x.jsonl: not a devicewatch run file\)"):
        job_files.load_run(tmp_path)
    with pytest.raises(RunFileError, match="no such folder"):
        job_files.job_folder(tmp_path / "missing")


def test_report_of_a_folder_names_the_folder_and_every_nodes_command_not_a_scratch_file(tmp_path, capsys):
    """The merged run is a temporary file of the process, gone when it exits: the header names
    the folder the user gave, and each node's file, host, command and ending."""
    folder = tmp_path / "job"
    for rank, path in enumerate(job_of_two(tmp_path, folder, "7", 1000.0)):
        lines = path.read_text().splitlines()
        head = json.loads(lines[0])
        head["workload"] = {"name": None, "args": [], "command": ["torchrun", f"--node-rank={rank}", "train.py"]}
        path.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    assert job_files.load_run(folder).path == str(folder)
    assert command("report", [str(folder), "--no-chart"]) == 0
    text = capsys.readouterr().out
    assert re.search(rf"^run\s+torchrun --node-rank=0 train.py\s+{re.escape(str(folder))}$", text, re.M), text
    for rank in (0, 1):
        assert re.search(rf"^node {rank}\s+node{rank}.jsonl on box: torchrun --node-rank={rank} train.py \(ok\)$",
                         text, re.M), text
    assert "devicewatch-job-" not in text   # the scratch folder's name
    assert command("report", [str(folder), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["file"] == str(folder)
