"""The Textual internals the dashboard imports or replaces, named one by one, with the signatures
and attributes its code relies on; and Textual's version inside the range they were tested on.

``tui/chops.py``, ``strips.py``, ``kept_lines.py`` and ``driver.py`` replace or call private parts
of Textual for speed (each tested byte for byte against Textual's own elsewhere). An upgrade that
moves one of them must fail here, naming it, rather than somewhere in a frame: this is the list
to read, and the range in ``pyproject.toml`` (``textual>=8.2.8,<8.3``) the one to widen once
every row below holds on a newer Textual.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textual")

from devicewatch.tui import chops, kept_lines, strips  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TESTED = ((8, 2, 8), (8, 3))   # the Textuals the internals below were tested on: from, up to (not included)


@dataclass(frozen=True)
class Internal:
    """``module``.``name`` (a dotted path inside it), what of it devicewatch uses (``by``), and
    the parameters it relies on (None: only that it exists), or a check of its own."""

    module: str
    name: str
    by: str
    parameters: tuple[str, ...] | None = None
    check: Callable[[Any], bool] | None = None

    def problem(self) -> str | None:
        where = f"{self.module}.{self.name} (used by {self.by})"
        try:
            found: Any = importlib.import_module(self.module)
            for part in self.name.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError) as exc:
            return f"{where}: gone ({exc})"
        if self.parameters is not None:
            names = tuple(inspect.signature(found).parameters)
            if names != self.parameters:
                return f"{where}: takes {names}, devicewatch passes {self.parameters}"
        if self.check is not None and not self.check(found):
            return f"{where}: no longer as devicewatch reads it"
        return None


def _has(*attributes: str) -> Callable[[Any], bool]:
    return lambda obj: all(hasattr(obj, name) for name in attributes)


def _compositor_state(compositor_class: Any) -> bool:
    return _has("_dirty_regions", "cuts", "visible_widgets", "size", "_regions_to_spans")(compositor_class())


def _parser_deadline(parser_class: Any) -> bool:
    return _has("_timeout_time", "feed", "tick")(parser_class(False))


INTERNALS = (
    # chops.py: the compositor's cutting of changed lines, replaced
    Internal("textual._compositor", "Compositor._render_chops", "chops.render_chops, installed in its place",
             ("self", "crop", "is_rendered_line")),
    Internal("textual._compositor", "Compositor.render_partial_update",
             "chops.render_partial_update, installed in its place", ("self",)),
    Internal("textual._compositor", "Compositor", "chops: a compositor's _dirty_regions, cuts, visible_widgets, "
             "_regions_to_spans", check=_compositor_state),
    Internal("textual._compositor", "ChopsUpdate.__init__", "chops.render_partial_update builds one",
             ("self", "chops", "spans", "chop_ends")),
    # strips.py: Strip's caches, replaced
    Internal("textual.strip", "Strip.divide", "strips._divide, installed in its place", ("self", "cuts")),
    Internal("textual.strip", "Strip.crop_extend", "strips._crop_extend, installed in its place",
             ("self", "start", "end", "style")),
    Internal("textual.strip", "Strip.__init__", "strips._light_init, installed in its place",
             ("self", "segments", "cell_length")),
    Internal("textual.strip", "Strip.__slots__", "strips._caches_of_a_new_strip (the caches made when first used)",
             check=lambda slots: strips._CACHES is not None and set(slots) == {"_segments", "_cell_length"}
             | strips._LEFT_NONE | set(strips._CACHES)),
    Internal("textual.cache", "FIFOCache", "strips: a cache's _maxsize", check=lambda c: _has("_maxsize")(c(4))),
    # kept_lines.py: the styles cache, the footer's keys, the scrollbars, dirty regions
    Internal("textual._styles_cache", "StylesCache.render", "kept_lines.RowsByContent overrides it",
             ("self", *kept_lines._RENDER)),
    Internal("textual._styles_cache", "StylesCache.render_line", "kept_lines.RowsByContent overrides it",
             ("self", *kept_lines._RENDER_LINE)),
    Internal("textual.widgets._footer", "FooterKey", "kept_lines.KeptFooter shows whole keys only"),
    Internal("textual.widget", "Widget._set_dirty", "kept_lines.KeptLines overrides it", ("self", "regions")),
    Internal("textual.widget", "Widget.render_lines", "kept_lines.KeptLines overrides it", ("self", "crop")),
    Internal("textual.widget", "Widget", "kept_lines: a widget's _styles_cache, _vertical_scrollbar, "
             "_horizontal_scrollbar, _scrollbar_corner",
             check=lambda w: _has("_styles_cache", "_vertical_scrollbar", "_horizontal_scrollbar",
                                  "_scrollbar_corner")(w())),
    Internal("textual.app", "App._start_widget", "kept_lines.KeptScrollbars starts its bars",
             ("self", "parent", "widget")),
    Internal("textual.scrollbar", "ScrollBarRender", "kept_lines.KeptScrollBar draws through it"),
    # driver.py: the input thread, replaced; the way out from a signal handler
    Internal("textual.drivers.linux_driver", "LinuxDriver.run_input_thread", "driver.QuietLinuxDriver overrides it",
             ("self",)),
    Internal("textual.drivers.linux_driver", "LinuxDriver.stop_application_mode",
             "driver.QuietLinuxDriver.give_back_now", ("self",)),
    Internal("textual._xterm_parser", "XTermParser", "driver: its feed, tick and _timeout_time",
             check=_parser_deadline),
    Internal("textual._parser", "ParseError", "driver: the parser's end"),
    Internal("textual._loop", "loop_last", "driver: the last of the terminal's events", ("values",)),
    Internal("textual._time", "get_time", "driver: the parser's clock", check=lambda f: isinstance(f(), float)),
)

# Textual's own, kept by the modules that install theirs in its place (what Textual had before).
ORIGINALS = {
    "Compositor._render_chops": chops._textual_render_chops,
    "Compositor.render_partial_update": chops._textual_render_partial_update,
    "Strip.divide": strips._textual_divide,
    "Strip.crop_extend": strips._textual_crop_extend,
    "Strip.__init__": strips._textual_init,
}


def problems(internals: tuple[Internal, ...]) -> list[str]:
    found = []
    for internal in internals:
        original = ORIGINALS.get(internal.name)
        if original is not None:   # installed by now: check Textual's own, kept aside
            names = tuple(inspect.signature(original).parameters)
            if internal.parameters is not None and names != internal.parameters:
                found.append(f"{internal.module}.{internal.name} (used by {internal.by}): takes {names}, "
                             f"devicewatch passes {internal.parameters}")
            continue
        problem = internal.problem()
        if problem is not None:
            found.append(problem)
    return found


def test_every_internal_devicewatch_replaces_or_imports_is_as_it_was_written_against():
    found = problems(INTERNALS)
    if found:
        pytest.fail("Textual's internals that devicewatch replaces or imports changed "
                    f"(Textual {version('textual')}):\n  " + "\n  ".join(found), pytrace=False)


def test_a_changed_or_missing_internal_is_named():
    changed = (Internal("textual.widget", "Widget.render_lines", "a test", ("self", "crop", "extra")),
               Internal("textual._compositor", "Compositor._cut_lines_gone", "a test"),
               Internal("textual.strip", "Strip.divide", "a test", ("self", "where")))
    found = problems(changed)
    assert len(found) == 3
    assert "textual.widget.Widget.render_lines" in found[0] and "('self', 'crop')" in found[0]
    assert "textual._compositor.Compositor._cut_lines_gone" in found[1] and "gone" in found[1]
    assert "textual.strip.Strip.divide" in found[2]


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def test_textual_is_a_version_the_internals_were_tested_on():
    installed = _release(version("textual"))
    low, high = TESTED
    if not low <= installed < high:
        pytest.fail(f"Textual {version('textual')} is outside {low}–{high} (not included), the range the "
                    "internals in tests/tui/test_textual_internals.py were tested on: check each, then widen "
                    "TESTED and pyproject.toml's textual range", pytrace=False)


def test_the_package_asks_for_the_range_tested_and_the_constraints_pin_one_inside_it():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'"textual>=8\.2\.8,<8\.3"', pyproject), "pyproject.toml: textual>=8.2.8,<8.3"
    pinned = re.search(r"^textual==([\d.]+)$", (ROOT / "constraints.txt").read_text(), re.M)
    assert pinned is not None and TESTED[0] <= _release(pinned.group(1)) < TESTED[1]
