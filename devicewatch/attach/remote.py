"""The zero-code instrumentation's hooks put into a running process, where its Python allows it:
``sys.remote_exec`` (Python 3.14 or newer) has the process run a script of devicewatch's
(``inside``) on its main thread, at its next safe point, as if it had started under devicewatch.

What it takes: the process's own interpreter (``/proc/PID/exe``), run here to call
``sys.remote_exec`` (the caller's Python must be the target's), and the same right to trace the
process as the stack sampler needs. A process started with ``-X disable-remote-debug`` or
``PYTHON_DISABLE_REMOTE_DEBUG``, or a Python built without remote debugging, refuses: its phases
are then sampled from outside, as on an older Python.

The scripts live in a private folder of their own (``folder``), the FIFO in the recorder's; a
process of another user (when devicewatch runs as root) is given them. A script handed over is
run at the process's next safe point, which may come after devicewatch has gone: its folder is
then left for the process, and the last script it runs removes it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile

from . import inside

# The script is run where the process's main thread next runs Python: JOIN_WAIT seconds with
# no word from it (a thread held in one long call of C code) and the phases are sampled instead.
JOIN_WAIT = 10.0
TIMEOUT = 10.0    # seconds the interpreter may take to start and hand the script over
_VERSION = re.compile(r"^python(\d+)\.(\d+)")
REMOTE_EXEC = (3, 14)
PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # devicewatch, as the process loads it
_ASK = "import sys; print('%d.%d.%d' % sys.version_info[:3], hasattr(sys, 'remote_exec'))"
_SEND = "import sys; sys.remote_exec(int(sys.argv[1]), sys.argv[2])"


def interpreter(pid: int) -> tuple[str | None, str]:
    """The interpreter PID runs, if it can take the hooks by ``sys.remote_exec``, and its
    version; else None and why not (said in the run's header)."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
        other = os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt")
    except OSError as exc:
        return None, f"its executable is not readable ({exc.strerror})"
    if other:   # the script and the FIFO are handed over by path, which means nothing there
        return None, "it runs in another mount namespace (a container): attach from inside it for the hooks"
    if exe.endswith(" (deleted)"):
        return None, "its interpreter was replaced on disk after it started"
    name = os.path.basename(exe)
    if not name.startswith("python"):   # only an interpreter of that name is ever run here
        return None, f"it runs {name}, not a python executable devicewatch can ask"
    numbered = _VERSION.match(name)
    if numbered and (int(numbered[1]), int(numbered[2])) < REMOTE_EXEC:
        return None, f"its Python is {numbered[1]}.{numbered[2]}; sys.remote_exec needs 3.14 or newer"
    try:
        said = subprocess.run([exe, "-I", "-c", _ASK], stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=TIMEOUT)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"its interpreter {exe} did not run ({exc})"
    version, _, has = said.stdout.strip().partition(" ")
    if said.returncode != 0 or has not in ("True", "False"):
        return None, f"its interpreter {exe} did not say its version"
    if has != "True":
        return None, f"its Python is {version}; sys.remote_exec needs 3.14 or newer"
    return exe, version


def folder(uid: int | None) -> str:
    """A private folder for the scripts, given to UID (the process's user) when root."""
    path = tempfile.mkdtemp(prefix="devicewatch-attach-")
    give(uid, path)
    return path


def script(folder: str, request: dict[str, str], name: str) -> str:
    """A script in FOLDER, the file ``sys.remote_exec`` takes: ``inside``'s text, then its
    ``run(REQUEST)`` with the devicewatch package to load."""
    path = os.path.join(folder, f"{name}.py")
    with open(inside.__file__) as source, open(path, "w") as out:
        out.write(source.read())
        out.write(f"\n\nrun({json.dumps({**request, 'package': PACKAGE, 'folder': folder})})\n")
    return path


def give(uid: int | None, *paths: str) -> None:
    """PATHS to the process's user, when devicewatch runs as another (root)."""
    if uid is None or uid == os.geteuid() or os.geteuid() != 0:
        return
    for path in paths:
        os.chown(path, uid, -1)


def send(exe: str, pid: int, path: str) -> str | None:
    """Hand PID the script at PATH by ``sys.remote_exec``: None once handed over (it runs at the
    process's next safe point), else why not, in one line."""
    try:
        done = subprocess.run([exe, "-I", "-c", _SEND, str(pid), path], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=TIMEOUT)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{exe} did not run ({exc})"
    if done.returncode == 0:
        return None
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    return (lines[-1] if lines else f"{exe} exited with {done.returncode}")[:300]
