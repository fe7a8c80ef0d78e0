"""devicewatch's zero-code instrumentation, which Python starts in every process of a workload.

The recorder puts this folder (which holds nothing else) first on the workload's PYTHONPATH,
so ``site`` imports this file as ``sitecustomize``. It takes its folder off ``sys.path`` again,
runs the ``sitecustomize`` the environment already had, and, under a devicewatch recorder on
Python 3.9 or newer, adds one import hook: nothing else happens until a module of devicewatch's
table of frameworks is imported (or at once, for one a ``.pth`` file or the environment's own
sitecustomize imported before this file ran). Then devicewatch is loaded from where this file
lives (the workload's interpreter need not have it installed, and nothing else of
devicewatch's environment joins its sys.path) and arms that framework
(``zero_code.instrument.arm``).

The modules it watches, and the framework each arms, are the table's
(``zero_code.frameworks``), handed in by the recorder in the environment (``_WATCHED_VAR``):
importing the table here would cost every Python process of the workload.

Written to parse on any Python, old ones included, where it only runs the environment's own
``sitecustomize``.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(_HERE)))  # the devicewatch package
# The same names and values as events.ENV_VAR and zero_code.WATCHED_VAR, SWITCH_VAR and
# SWITCHED_OFF (a test holds them together): importing those here would cost every Python
# process of the workload.
_EVENTS_VAR = "DEVICEWATCH_EVENTS"
_WATCHED_VAR = "DEVICEWATCH_WATCHED"
_SWITCH_VAR = "DEVICEWATCH_INSTRUMENT"
_SWITCHED_OFF = ("0", "off", "false", "no")


def _watched():
    """Each watched module and the framework it arms, from ``module=framework,...``."""
    pairs = [item.split("=", 1) for item in os.environ.get(_WATCHED_VAR, "").split(",") if "=" in item]
    return dict((module.strip(), name.strip()) for module, name in pairs if module.strip() and name.strip())


def _wanted():
    return (sys.version_info >= (3, 9) and bool(os.environ.get(_EVENTS_VAR))
            and os.environ.get(_SWITCH_VAR, "").strip().lower() not in _SWITCHED_OFF)


class _Watcher(object):
    """An import hook that finds nothing itself: when a watched module is about to be
    imported, the other finders find it, and its loader is wrapped so that the framework is
    armed once the module has run. A name is done only when its module has really been
    executed: a look-up without an import (``importlib.util.find_spec("torch")``, which
    transformers, Lightning and Keras make to learn what is installed) hands out a spec that
    is never run and leaves the name watched. Gone from sys.meta_path once every name is armed."""

    def __init__(self, watched):
        self.watched = watched
        self.pending = set(watched)

    def find_spec(self, name, path=None, target=None):
        if name not in self.pending:
            return None
        spec = None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Arming(spec.loader, name, self)
        return spec

    def executed(self, name, module):
        """NAME's module has run: arm its framework, once."""
        if name not in self.pending:
            return
        self.pending.discard(name)
        if not self.pending and self in sys.meta_path:
            sys.meta_path.remove(self)
        _arm(name, self.watched[name], module)

    def already_imported(self):
        """Frameworks imported before this hook could see them (by a ``.pth`` file or the
        environment's own sitecustomize): armed now."""
        for name in list(self.watched):
            module = sys.modules.get(name)
            if module is not None and getattr(module, "__spec__", None) is not None:
                self.executed(name, module)


class _Arming(object):
    """The module's own loader, which then arms the framework. The module gets its own loader
    back before it runs, so nothing in it can tell."""

    def __init__(self, loader, name, watcher):
        self.loader = loader
        self.name = name
        self.watcher = watcher

    def __getattr__(self, attribute):
        return getattr(self.loader, attribute)

    def exec_module(self, module):
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.loader is self:
            spec.loader = self.loader
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = self.loader
        self.loader.exec_module(module)
        self.watcher.executed(self.name, sys.modules.get(self.name, module))


def _arm(name, framework, module):
    try:
        _instrumentation().arm(name, module)
    except Exception as exc:  # devicewatch itself could not be loaded: say so, change nothing
        _say_error(framework, exc)


def _instrumentation():
    """devicewatch's instrumentation module, loaded from the package this file belongs to
    unless the process has imported devicewatch already."""
    import importlib

    if "devicewatch" not in sys.modules:
        import importlib.util

        spec = importlib.util.spec_from_file_location(
            "devicewatch", os.path.join(_PACKAGE, "__init__.py"), submodule_search_locations=[_PACKAGE])
        package = importlib.util.module_from_spec(spec)
        sys.modules["devicewatch"] = package
        try:
            spec.loader.exec_module(package)
        except BaseException:
            del sys.modules["devicewatch"]
            raise
    return importlib.import_module("devicewatch.integrations.zero_code.instrument")


def _say_error(framework, exc):
    """One instrument event, written as devicewatch.events would, without devicewatch."""
    try:
        import json
        import time

        line = json.dumps({"kind": "instrument", "mono": time.monotonic(), "pid": os.getpid(),
                           "state": "error", "framework": framework,
                           "detail": ("loading devicewatch: %s: %s" % (type(exc).__name__, exc))[:300]})
        fd = os.open(os.environ[_EVENTS_VAR], os.O_WRONLY | os.O_NONBLOCK)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)
    except Exception:
        pass


def _chain():
    """Run the sitecustomize the environment had before this one, as site would have: it is
    the next one on sys.path, now that this folder is off it. Its errors are site's to show."""
    ours = sys.modules.get("sitecustomize")
    sys.path[:] = [entry for entry in sys.path if not entry or os.path.abspath(entry) != _HERE]
    sys.modules.pop("sitecustomize", None)
    try:
        import sitecustomize  # noqa: F401 - the environment's own
    except ImportError as exc:
        if getattr(exc, "name", "sitecustomize") != "sitecustomize":
            raise
        sys.modules["sitecustomize"] = ours


_WATCHER = _Watcher(_watched()) if _wanted() else None
if _WATCHER is not None and _WATCHER.pending:
    sys.meta_path.insert(0, _WATCHER)
    _chain()
    _WATCHER.already_imported()
else:
    _chain()
