"""The command line never tracebacks: generated argument lists against every subcommand,
through the real interface (`python -m devicewatch ARGS`). A usage error is one line on
stderr and exit status 2; anything else must end without a traceback."""

from __future__ import annotations

import subprocess

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import PY, ROOT, child_env

SUBCOMMANDS = ["report", "compare", "export", "replay", "workloads", "run", "--record"]
TOKENS = ["--json", "--text", "--chart", "--no-chart", "--format", "csv", "svg", "perfetto", "parquet", "-o",
          "--interval", "0", "-1", "nan", "1e309", "--gpu", "maybe", "--grace", "--", "-", "--pair", "--a=",
          "--b=", "--width", "x", str(ROOT / "tests/fixtures/demo-cpu.jsonl"), "/nonexistent", "/", "demo", "--epochs",
          "=", "--runs-dir", "--watcher-pid", "--quiet", "--presenter", "--control", "-h", "é"]  # no NUL: no process can be given one
token = st.sampled_from(TOKENS) | st.text(alphabet=st.characters(blacklist_categories=("Cs",),
                                                                 blacklist_characters="\x00"), max_size=8)


def _run(argv: list[str], cwd) -> subprocess.CompletedProcess:
    """In a scratch folder: an export's -o with a generated name writes there, nowhere else."""
    return subprocess.run([PY, "-m", "devicewatch", *argv], env=child_env(TERM="dumb"), capture_output=True,
                          text=True, timeout=30, stdin=subprocess.DEVNULL, cwd=cwd)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sub=st.sampled_from(SUBCOMMANDS), rest=st.lists(token, max_size=5))
def test_generated_argument_lists(tmp_path, sub, rest):
    # Nothing here may start a workload or a dashboard: that is not what is fuzzed.
    if sub != "workloads":
        rest = [t for t in rest if t != "demo"]
    if sub in ("run", "replay") or (sub == "--record"):
        rest = [t for t in rest if t not in ("demo", "--")]
        argv = [sub, str(tmp_path / "out.jsonl")] if sub == "--record" else [sub]
        argv += ["--interval", "bad"] + rest   # a usage error before anything starts
    else:
        argv = [sub, *rest]
    if "-h" in argv or sub == "workloads" and not rest:
        return
    done = _run(argv, tmp_path)
    assert "Traceback" not in done.stderr, (argv, done.stderr)
    if done.returncode == 2:
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("devicewatch: error:"), (argv, done.stderr)
    else:
        assert done.returncode in (0, 1), (argv, done.returncode, done.stderr)
