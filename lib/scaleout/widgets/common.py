"""The shared shape of every explorer widget: controls, a status line, a figure, a readout."""

from __future__ import annotations

import html
import io
import math
from collections.abc import Mapping
from typing import Any

import ipywidgets as W
from IPython.display import HTML
from matplotlib.figure import Figure
from traitlets import TraitError

__all__ = ["Explorer", "admit", "answer", "figure_png"]

_STYLE = """
<style>
.so-status-ok {color:#1b5e20;font-weight:600}
.so-status-bad {color:#b00020;font-weight:600}
.so-error {color:#b00020;background:#fdecea;border-left:4px solid #b00020;padding:4px 8px}
.so-readout table {border-collapse:collapse;font-family:monospace}
.so-readout td, .so-readout th {padding:2px 10px;text-align:right}
.so-readout th {text-align:left}
</style>
"""


def figure_png(fig: Figure, dpi: int = 90) -> bytes:
    """Render a matplotlib ``Figure`` (not pyplot) to PNG bytes for an ``ipywidgets.Image``."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()


class Explorer:
    """Base class: subclasses define ``_build_controls`` and ``_compute``/``_render``.

    * ``_compute(values) -> result`` calls the library (and nothing else);
    * ``_render(result)`` updates the figure and returns the readout HTML.

    A ``ValueError`` from the library is shown in ``status`` as a sentence; any
    other exception is shown too, so a live class never sees a traceback. The
    previous figure stays on screen until a valid input arrives.
    """

    title: str = ""
    #: "png" for matplotlib figures, "svg+xml" for :mod:`scaleout.svgchart` (much faster).
    image_format: str = "png"

    def __init__(self, **initial: Any) -> None:
        self.controls: dict[str, W.ValueWidget] = self._build_controls()
        self.set_values(**initial)
        self.status = W.HTML()
        self.readout = W.HTML()
        self.image = W.Image(format=self.image_format, layout=W.Layout(max_width="100%"))
        self.result: Any = None
        self.error: str | None = None
        self.view = W.VBox(
            [W.HTML(_STYLE + (f"<h3>{html.escape(self.title)}</h3>" if self.title else "")),
             self._layout_controls(), self.status,
             # side by side when the page is wide enough, the readout below the figure if not
             W.HBox([self.image, self.readout], layout=W.Layout(flex_flow="row wrap"))],
        )
        # stable CSS hooks for the browser tests and for lecture styling
        self.status.add_class("so-status")
        self.readout.add_class("so-readout-box")
        self.image.add_class("so-figure")
        for name, control in self.controls.items():
            control.add_class(f"so-ctl-{name}")
            control.observe(self._on_change, names="value")
        self.refresh()

    # -- to override ------------------------------------------------------------------
    def _build_controls(self) -> dict[str, W.ValueWidget]:
        raise NotImplementedError

    def _compute(self, values: Mapping[str, Any]) -> Any:
        raise NotImplementedError

    def _render(self, result: Any) -> str:
        raise NotImplementedError

    def _layout_controls(self) -> W.Widget:
        return W.GridBox(
            list(self.controls.values()),
            layout=W.Layout(grid_template_columns="repeat(3, minmax(220px, 1fr))"),
        )

    # -- machinery --------------------------------------------------------------------
    def set_values(self, **values: Any) -> None:
        """Set controls by name; an unknown name is a ``ValueError`` listing the controls."""
        for name in values:
            if name not in self.controls:
                raise ValueError(
                    f"{type(self).__name__} has no control {name!r}; "
                    f"controls: {', '.join(self.controls)}"
                )
        for name, value in values.items():
            admit(self.controls[name], value)
            try:
                self.controls[name].value = value
            except TraitError as exc:
                raise ValueError(f"{name}={value!r} cannot be shown by its control "
                                 f"({type(self.controls[name]).__name__}): {exc}") from None

    def values(self) -> dict[str, Any]:
        """Current control values by name."""
        return {name: c.value for name, c in self.controls.items()}

    def _on_change(self, _change: Mapping[str, Any]) -> None:
        self.refresh()

    def refresh(self) -> None:
        """Recompute from the controls and redraw; show a bad input's message instead of failing."""
        try:
            result = self._compute(self.values())
            readout = self._render(result)
        except ValueError as exc:
            self._fail(str(exc))
            return
        except Exception as exc:  # a live lecture must never show a traceback
            self._fail(f"unexpected {type(exc).__name__}: {exc}")
            return
        self.result, self.error = result, None
        self.readout.value = f'<div class="so-readout">{readout}</div>'
        self.status.value = ""

    def _fail(self, message: str) -> None:
        self.error = message
        self.status.value = f'<div class="so-error">⚠ {html.escape(message)}</div>'

    def _repr_mimebundle_(self, **kwargs):  # pragma: no cover - exercised in notebooks
        return self.view._repr_mimebundle_(**kwargs)


def admit(control: W.ValueWidget, value: Any) -> None:
    """Widen ``control`` so that it can hold ``value``: a menu gains it, a range stretches.

    A notebook's parameters may hold values its explorer's menus do not list (a sequence
    of 3,000 tokens, a micro-batch of 64); the explorer then shows that value, instead of
    failing or silently clamping it. Values of the wrong type are left for the control to
    refuse.
    """
    if isinstance(control, W.widgets.widget_selection._Selection):
        options = list(control.options)
        present = [o[1] if isinstance(o, tuple) else o for o in options]
        if value in present or value is None:
            return
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            return
        current = control.value
        pairs = options and isinstance(options[0], tuple)
        new = (str(value), value) if pairs else value
        options.append(new)
        if all(isinstance(v, int | float) and not isinstance(v, bool)
               for v in [*present, value]):
            options.sort(key=lambda o: o[1] if isinstance(o, tuple) else o)
        control.options = options
        control.value = current
    elif hasattr(control, "min") and hasattr(control, "max"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return
        if isinstance(control, W.FloatLogSlider):  # its min and max are exponents
            if value <= 0:
                return
            value = math.log(value, control.base)
        if value > control.max:
            control.max = value
        if value < control.min:
            control.min = value


def answer(body_html: str, title: str = "Show the answer") -> HTML:
    """A collapsed answer for an exercise: ``<details>`` that the reader opens by clicking.

    Compute ``body_html``'s numbers with the library in the same cell, so the
    answer is never typed by hand and the notebook's self-checks can assert on it.
    """
    return HTML(
        f'<details class="so-answer"><summary><b>{html.escape(title)}</b></summary>'
        f'<div style="margin:6px 0 6px 18px">{body_html}</div></details>'
    )
