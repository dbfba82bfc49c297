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

from .. import catalog

__all__ = ["Explorer", "admit", "answer", "figure_png", "gpu_menu", "model_menu"]

_STYLE = """
<style>
.so-explorer {max-width:100%}
.so-explorer h3 {margin:4px 0 8px}
.so-controls {gap:2px 18px}
.so-controls > * {width:auto !important; min-width:0; max-width:100%; margin-left:0}
.so-controls .widget-label {white-space:nowrap}
.so-body {gap:10px 22px; min-width:0}
.so-body > .so-figure {flex:0 1 auto; max-width:100%; height:auto; min-width:0}
.so-body > .so-readout-box {flex:1 1 340px; min-width:300px; max-width:720px}
.so-body.so-stacked {flex-direction:column !important; align-items:stretch !important}
.so-body.so-stacked > .so-figure {align-self:flex-start}
.so-body.so-stacked > .so-readout-box {max-width:none; width:auto; flex:1 1 auto}
@media (max-width: 1024px) {
  .so-body {flex-direction:column !important; align-items:stretch !important}
  .so-body > .so-figure {align-self:flex-start}
  .so-body > .so-readout-box {max-width:none; width:auto; flex:1 1 auto}
}
.so-status:empty {display:none}
.so-status-ok {color:#1b5e20;font-weight:600}
.so-status-bad {color:#b00020;font-weight:600}
.so-error {color:#b00020;background:#fdecea;border-left:4px solid #b00020;padding:4px 8px;
  line-height:1.4;white-space:normal}
.so-readout {line-height:1.4}
.so-readout p {margin:4px 0 8px}
.so-readout table, table.so-table {border-collapse:collapse; font-variant-numeric:tabular-nums;
  line-height:1.35; margin:4px 0 8px; max-width:100%}
.so-readout td, .so-readout th, table.so-table td, table.so-table th {padding:3px 9px;
  text-align:right; vertical-align:top; border-bottom:1px solid #e4e4e4}
.so-readout th, table.so-table th {text-align:left}
.so-readout tr:first-child th, table.so-table tr:first-child th {border-bottom:1px solid #999}
.so-readout td.so-num, table.so-table td.so-num {white-space:nowrap}
table.so-table td.so-text {text-align:left; overflow-wrap:normal; word-break:keep-all}
</style>
"""


def _tidy_float(value: float) -> float:
    """A value for a typed number box, to 4 significant figures: ``10.547349562026666`` shows
    as ``10.55``, not as sixteen digits (a box shows its value's full ``repr``)."""
    return float(f"{value:.4g}") if math.isfinite(value) and value != 0 else value


def _option_texts(control: W.Widget) -> list[str]:
    """The texts a control shows: its options' labels (menus), else its current value."""
    labels = getattr(control, "_options_labels", None)
    if labels:
        return [str(x) for x in labels]
    value = getattr(control, "value", "")
    return [f"{value:,}" if isinstance(value, int | float) and not isinstance(value, bool)
            else str(value)]


def _text_px(text: str) -> float:
    """A generous width estimate of ``text`` in the widgets' 13 px sans-serif font."""
    from ..svgchart import text_width

    return text_width(text, 13.0)


def control_column_px(controls: Mapping[str, W.Widget]) -> tuple[int, int]:
    """``(description width, grid column width)`` in pixels that show every control whole.

    The description column fits the longest description; the column fits it plus the
    widest value a control can show (the longest option of a menu, a slider with its
    readout, a number box), so no label or menu entry is cut off.
    """
    desc = 0.0
    value = 120.0
    for c in controls.values():
        text = getattr(c, "description", "") or ""
        if isinstance(c, W.Checkbox):
            value = max(value, _text_px(text) + 40 - 140)  # drawn beside the box, no column
            continue
        desc = max(desc, _text_px(text))
        if isinstance(c, W.SelectMultiple):
            value = max(value, max(map(_text_px, _option_texts(c)), default=0) + 34)
        elif isinstance(c, W.Dropdown | W.Combobox):
            value = max(value, max(map(_text_px, _option_texts(c)), default=0) + 42)
        elif isinstance(c, W.Text):
            value = max(value, 170.0)
        elif isinstance(c, W.FloatLogSlider | W.FloatSlider | W.IntSlider
                        | W.SelectionSlider):
            readout = max(map(_text_px, _option_texts(c)), default=0) + 16
            value = max(value, 110.0 + readout)
    desc_px = math.ceil(min(desc, 190.0) + 12)
    return desc_px, math.ceil(desc_px + value + 8)


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
    #: "svg+xml" for :mod:`scaleout.svgchart` (every explorer's), "png" for a matplotlib
    #: figure (:func:`figure_png`, much slower).
    image_format: str = "svg+xml"

    #: Put the readout under the chart at every width (for wide readouts, e.g. tables of text).
    readout_below: bool = False

    def __init__(self, **initial: Any) -> None:
        self.controls: dict[str, W.ValueWidget] = self._build_controls()
        self._fit_controls()
        self.set_values(**initial)
        self.status = W.HTML()
        self.readout = W.HTML()
        self.image = W.Image(format=self.image_format,
                             layout=W.Layout(max_width="100%", height="auto"))
        self.result: Any = None
        self.error: str | None = None
        # readout beside the chart where there is room, under it on narrow screens
        self.body = W.Box([self.image, self.readout],
                          layout=W.Layout(display="flex", flex_flow="row wrap",
                                          align_items="flex-start", width="100%"))
        self.view = W.VBox(
            [W.HTML(_STYLE + (f"<h3>{html.escape(self.title)}</h3>" if self.title else "")),
             self._layout_controls(), self.status, self.body],
        )
        # stable CSS hooks for the browser tests and for lecture styling
        self.view.add_class("so-explorer")
        self.body.add_class("so-body")
        if self.readout_below:
            self.body.add_class("so-stacked")
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

    def _fit_controls(self) -> None:
        """One description width for all controls, each as wide as its grid cell."""
        desc_px, self._column_px = control_column_px(self.controls)
        for c in self.controls.values():
            if isinstance(c, W.Checkbox):
                c.layout.width = "auto"
                continue
            c.style.description_width = f"{desc_px}px"
            c.layout.width = "auto"

    def _layout_controls(self) -> W.Widget:
        """The controls in as many columns as fit the width (one on a phone, three or more
        on a projector), each column wide enough for its longest label and menu entry."""
        grid = W.GridBox(
            list(self.controls.values()),
            layout=W.Layout(grid_template_columns=(
                f"repeat(auto-fill, minmax(min({self._column_px}px, 100%), 1fr))"),
                width="100%"),
        )
        grid.add_class("so-controls")
        return grid

    # -- machinery --------------------------------------------------------------------
    def set_values(self, **values: Any) -> None:
        """Set controls by name; an unknown name is a ``ValueError`` listing the controls.

        Floats typed into number boxes are shown to 4 significant figures.
        """
        for name in values:
            if name not in self.controls:
                raise ValueError(
                    f"{type(self).__name__} has no control {name!r}; "
                    f"controls: {', '.join(self.controls)}"
                )
        for name, value in values.items():
            control = self.controls[name]
            if isinstance(control, W.FloatText | W.BoundedFloatText) and isinstance(value, float):
                value = _tidy_float(value)
            admit(control, value)
            try:
                control.value = value
            except TraitError as exc:
                raise ValueError(f"{name}={value!r} cannot be shown by its control "
                                 f"({type(control).__name__}): {exc}") from None

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


def model_menu(value: str, wide: Mapping[str, Any]) -> W.Dropdown:
    """The ``model`` control: a Dropdown of the catalog's models with ``value`` chosen.

    ``wide`` holds the explorer's ``style`` and ``layout`` keywords.
    """
    return W.Dropdown(options=catalog.model_names(), value=value, description="model", **wide)


def gpu_menu(value: str, wide: Mapping[str, Any]) -> W.Dropdown:
    """The ``gpu`` control: a Dropdown of the catalog's GPUs with ``value`` chosen.

    ``wide`` holds the explorer's ``style`` and ``layout`` keywords.
    """
    return W.Dropdown(options=catalog.gpu_names(), value=value, description="GPU", **wide)


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
