"""What ``devicewatch attach`` runs inside the process it joins, by ``sys.remote_exec`` (Python
3.14 or newer): ``run({"do": "join", "fifo": …})`` arms the zero-code instrumentation's hooks
(``instrument.join``), ``run({"do": "leave"})`` takes them out again (``instrument.leave``).

At the leave, the package it loaded is dropped from ``sys.modules`` with its state, so that the
next attach joins afresh, and the folder of the scripts is removed: a script the process runs
after devicewatch has gone must still be there (else Python says so on the process's stderr).

``remote.script`` writes this file's text and the call, with the request, into one script: the
process reads nothing of devicewatch's until it loads the package (``request["package"]``), as
the start-up hook loads it (the process need not have devicewatch installed, and its sys.path is
left as it was). It runs on the process's main thread, between two of its own bytecodes, in a
namespace of its own. Standard library only; nothing it does may raise into the process: a
failure is one ``instrument`` event (state "error") on the FIFO, written as ``devicewatch.events``
would.
"""

import importlib
import importlib.util
import json
import os
import shutil
import sys
import time

_INSTRUMENT = "devicewatch.integrations.zero_code.instrument"
_OURS = "_loaded_by_devicewatch_attach"   # on the package this script loaded, not one the process had


def run(request):
    """``join``; ``leave``, then the scripts' folder removed; ``nothing`` (a join devicewatch gave
    up waiting for, run after it had gone), the folder removed."""
    try:
        if request.get("do") == "join":
            _instrumentation(request["package"]).join(request["fifo"])
        elif request.get("do") == "leave":
            instrument = sys.modules.get(_INSTRUMENT)
            if instrument is not None:
                instrument.leave()
            if getattr(sys.modules.get("devicewatch"), _OURS, False):   # a later attach loads it afresh
                for name in [n for n in sys.modules if n == "devicewatch" or n.startswith("devicewatch.")]:
                    del sys.modules[name]
    except Exception as exc:
        _say_error(request.get("fifo"), request.get("do"), exc)
    if request.get("do") != "join":
        shutil.rmtree(request.get("folder") or "/nonexistent", ignore_errors=True)


def _instrumentation(package):
    if "devicewatch" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "devicewatch", os.path.join(package, "__init__.py"), submodule_search_locations=[package])
        loaded = importlib.util.module_from_spec(spec)
        setattr(loaded, _OURS, True)
        sys.modules["devicewatch"] = loaded
        try:
            spec.loader.exec_module(loaded)
        except BaseException:
            del sys.modules["devicewatch"]
            raise
    return importlib.import_module(_INSTRUMENT)


def _say_error(fifo, doing, exc):
    if not fifo:
        return
    try:
        line = json.dumps({"kind": "instrument", "mono": time.monotonic(), "pid": os.getpid(),
                           "state": "error", "framework": "devicewatch",
                           "detail": f"{doing}: {type(exc).__name__}: {exc}"[:300]})
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)
    except Exception:
        pass
