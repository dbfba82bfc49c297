"""Widget events: how long one control change (recompute + redraw) takes, per explorer.

Every :class:`~scaleout.widgets.common.Explorer` subclass of every ``scaleout.widgets``
submodule is found by import, built once with its defaults, then one of its controls is
toggled between two valid values, in this process (as in the kernel, without a browser).
Target: median under 50 ms per event, so a slider feels live in a lecture.
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import pkgutil
from collections.abc import Callable
from typing import Any

import ipywidgets as W
import pytest
import scaleout.widgets
from scaleout.widgets.common import Explorer

TARGET_MS = 50.0
# Controls tried first: the kinds a lecturer moves most (a slider, a menu, a tick box)
PREFERRED_KINDS = (W.IntSlider, W.FloatSlider, W.Dropdown, W.Checkbox)


def discover_explorers() -> list[type[Explorer]]:
    """Explorer subclasses defined in the submodules of ``scaleout.widgets``."""
    found: list[type[Explorer]] = []
    for info in pkgutil.iter_modules(scaleout.widgets.__path__):
        module = importlib.import_module(f"scaleout.widgets.{info.name}")
        found += [cls for _, cls in inspect.getmembers(module, inspect.isclass)
                  if issubclass(cls, Explorer) and cls is not Explorer
                  and cls.__module__ == module.__name__]
    return sorted(found, key=lambda cls: cls.__name__)


def alternatives(control: W.ValueWidget) -> list[Any]:
    """Values, other than the current one, that the control can take."""
    value = control.value
    if isinstance(value, bool):
        return [not value]
    if isinstance(control, W.Dropdown):
        values = [o[1] if isinstance(o, tuple) else o for o in control.options]
        return [v for v in values if v != value]
    if isinstance(value, int) and hasattr(control, "min") and hasattr(control, "max"):
        step = getattr(control, "step", 1) or 1
        wanted = [value + step, value - step, value * 2, value // 2]
        return [v for v in wanted if control.min <= v <= control.max and v != value]
    return []


def controls_in_order(explorer: Explorer) -> list[tuple[str, W.ValueWidget]]:
    """The explorer's controls by kind (``PREFERRED_KINDS`` order, then any other kind),
    each kind in the explorer's own order."""

    def rank(item: tuple[str, W.ValueWidget]) -> int:
        kinds = [i for i, kind in enumerate(PREFERRED_KINDS) if isinstance(item[1], kind)]
        return kinds[0] if kinds else len(PREFERRED_KINDS)

    return sorted(explorer.controls.items(), key=rank)  # sorted() is stable


def pick_toggle(explorer: Explorer) -> tuple[str, Any, Any]:
    """``(control name, current value, other value)``: both valid, and the redraw differs."""
    for name, control in controls_in_order(explorer):
        original, before = control.value, (explorer.image.value, explorer.readout.value)
        for other in alternatives(control):
            control.value = other
            changed = (explorer.image.value, explorer.readout.value) != before
            ok = explorer.error is None and changed
            control.value = original
            if ok:
                return name, original, other
    pytest.fail(f"{type(explorer).__name__}: no control has a second valid value to toggle")


def toggler(control: W.ValueWidget, a: Any, b: Any) -> Callable[[], None]:
    """A function that moves ``control`` to the other of ``a`` and ``b`` on every call."""
    values = itertools.cycle([b, a])

    def toggle() -> None:
        control.value = next(values)

    return toggle


@pytest.mark.parametrize("explorer_cls", discover_explorers(), ids=lambda cls: cls.__name__)
def test_control_change(benchmark, explorer_cls: type[Explorer], results_table) -> None:
    explorer = explorer_cls()
    assert explorer.error is None, f"{explorer_cls.__name__}() starts with: {explorer.error}"
    name, a, b = pick_toggle(explorer)
    benchmark.extra_info["control"] = f"{name}: {a!r} <-> {b!r}"
    benchmark(toggler(explorer.controls[name], a, b))
    assert explorer.error is None, explorer.error
    median_ms = benchmark.stats.stats.median * 1e3
    table = results_table("Widget events: one control change (recompute + redraw)",
                          ("explorer", "control toggled", "median ms", "rounds", "target"))
    verdict = "ok" if median_ms < TARGET_MS else "TOO SLOW"
    table.rows.append((explorer_cls.__name__, benchmark.extra_info["control"],
                       f"{median_ms:.2f}", str(benchmark.stats.stats.rounds),
                       f"< {TARGET_MS:.0f} ms {verdict}"))
    assert median_ms < TARGET_MS, f"median {median_ms:.1f} ms per event (target {TARGET_MS} ms)"


def test_scale_up_model_changes(benchmark, results_table) -> None:
    """Notebook 01's explorer through four catalog models of very different sizes (8B to 1T):
    each change recomputes the holding plan and redraws the chart. Same target per event."""
    from scaleout.widgets.scale_up import ScaleUpExplorer

    explorer = ScaleUpExplorer(model="gpt3-175b", gpu="A100-SXM4-80GB", recipe="mixed-adam")
    models = ("llama3-8b", "megatron-1t", "gpt3-175b", "llama3-405b")

    def four_changes() -> None:
        for name in models:
            explorer.controls["model"].value = name

    benchmark(four_changes)
    assert explorer.error is None, explorer.error
    per_event_ms = benchmark.stats.stats.median * 1e3 / len(models)
    table = results_table("Widget events: one control change (recompute + redraw)",
                          ("explorer", "control toggled", "median ms", "rounds", "target"))
    verdict = "ok" if per_event_ms < TARGET_MS else "TOO SLOW"
    table.rows.append(("ScaleUpExplorer", f"model: {', '.join(models)} (per change)",
                       f"{per_event_ms:.2f}", str(benchmark.stats.stats.rounds),
                       f"< {TARGET_MS:.0f} ms {verdict}"))
    assert per_event_ms < TARGET_MS, f"{per_event_ms:.1f} ms per event (target {TARGET_MS} ms)"
