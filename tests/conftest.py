"""Shared test helpers: run the real command line in a subprocess, write literal run files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def devicewatch(*args: str, timeout: float = 120, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run ``python -m devicewatch ARGS`` from the repository root, capturing its output."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("DEVICEWATCH_EVENTS", None)
    return subprocess.run([sys.executable, "-m", "devicewatch", *args], cwd=kwargs.pop("cwd", ROOT),
                          env=env, capture_output=True, text=True, timeout=timeout, **kwargs)


def write_run(path: Path, records: list[dict[str, Any]], header: dict[str, Any] | None = None,
              end: dict[str, Any] | None = None) -> Path:
    """A run file from literal records (header and end filled in unless given)."""
    head = {"type": "header", "format": "devicewatch-run", "schema": 1, "devicewatch": "test",
            "started": "2026-01-01T00:00:00+00:00", "started_unix": 0.0, "interval": 0.1,
            "host": {"cpu_model": "test", "cpu_count": 2, "gpus": []},
            "workload": {"name": "literal", "args": [], "command": ["literal"]}}
    head.update(header or {})
    lines = [head, *records]
    if end is not False:
        last = max([r.get("t", 0.0) for r in records] or [0.0])
        lines.append(end or {"type": "end", "t": last, "status": "ok", "exit_code": 0,
                             "signal": None, "duration": last, "reason": "the workload finished"})
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def command(name: str, argv: list[str], *global_options: str) -> int:
    """Run one subcommand in this process as the command line would, letting its errors raise."""
    from devicewatch import cli

    module, args = cli.parse([*global_options, name, *argv])
    return module.run(args)


@pytest.fixture
def python() -> str:
    return sys.executable
