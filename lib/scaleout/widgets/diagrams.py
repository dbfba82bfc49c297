"""The ring all-reduce, step by step (notebook 07): a slider and a play button over the picture.

The picture is :func:`scaleout.diagrams.ring_all_reduce` (inline SVG, so it scales to the
page); the schedule behind it is :func:`scaleout.collectives.ring_schedule`. No model logic.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from .. import collectives, diagrams

__all__ = ["RingStepper"]


class RingStepper:
    """A ring all-reduce on ``n`` GPUs that a slider (or the play button) walks step by step.

    Controls: ``n`` (GPUs, 2-8) and ``step`` (0 to ``2(n−1)``; the last is the end). The
    play button runs ``step`` from 0 to the end. ``figure`` holds the SVG, ``readout`` the
    step's phase and how much each GPU has sent so far, ``status`` a bad input's message.
    Tests set ``stepper.controls["step"].value = 3`` and read ``stepper.figure.value``.
    """

    title = "The ring all-reduce, step by step"

    def __init__(self, n: int = 4, step: int = 0, interval_ms: int = 1200) -> None:
        n_ctl = W.IntSlider(value=4, min=2, max=8, description="GPUs", continuous_update=False,
                            style={"description_width": "60px"}, layout=W.Layout(width="260px"))
        # no number beside the slider: the picture's own step bar says where the ring is
        step_ctl = W.IntSlider(value=0, min=0, max=6, description="step", readout=False,
                               style={"description_width": "60px"},
                               layout=W.Layout(width="360px"))
        self.play = W.Play(value=0, min=0, max=6, step=1, interval=interval_ms,
                           description="play", layout=W.Layout(width="auto"))
        W.jslink((self.play, "value"), (step_ctl, "value"))
        self.controls: dict[str, W.IntSlider] = {"n": n_ctl, "step": step_ctl}
        self.status = W.HTML()
        self.readout = W.HTML()
        self.figure = W.HTML(layout=W.Layout(width="100%"))
        self.result: dict[str, Any] | None = None
        self.error: str | None = None
        for name, control in self.controls.items():  # not so-ctl-*: an explorer may share
            control.add_class(f"so-stepper-{name}")    # the notebook (and a control's name)
        self.status.add_class("so-stepper-status")
        self.figure.add_class("so-stepper-figure")
        self.readout.add_class("so-stepper-readout")
        self.view = W.VBox([W.HTML(f"<h3>{html.escape(self.title)}</h3>"),
                            W.HBox([self.play, step_ctl, n_ctl],
                                   layout=W.Layout(flex_flow="row wrap")),
                            self.status, self.readout, self.figure],
                           layout=W.Layout(width="100%"))
        n_ctl.value = n
        self._fit_step_range()
        step_ctl.value = step
        n_ctl.observe(self._on_n, names="value")
        step_ctl.observe(self._on_step, names="value")
        self.refresh()

    def _fit_step_range(self) -> None:
        steps = collectives.ring_schedule(self.controls["n"].value).steps
        self.controls["step"].max = steps
        self.play.max = steps

    def _on_n(self, _change: Any) -> None:
        self._fit_step_range()  # clamps the step slider (which may itself redraw)
        self.refresh()

    def _on_step(self, _change: Any) -> None:
        self.refresh()

    def refresh(self) -> None:
        """Redraw from the controls; a bad input's message goes to the status line."""
        n, step = self.controls["n"].value, self.controls["step"].value
        try:
            sched = collectives.ring_schedule(n)
            svg = diagrams.ring_all_reduce(n, step)
            sent = sched.sent_fraction(step)
        except ValueError as exc:
            self.error = str(exc)
            self.status.value = f'<div class="so-error">⚠ {html.escape(str(exc))}</div>'
            return
        phase = "done" if step == sched.steps else sched.phase[step]
        self.result = {"n": n, "step": step, "steps": sched.steps, "phase": phase,
                       "sent_fraction": sent}
        self.error = None
        self.status.value = ""
        self.figure.value = svg
        total = sched.sent_fraction(sched.steps)
        self.readout.value = (f"<b>{html.escape(phase)}</b> · each GPU has sent {sent:.3g} × "
                              f"the buffer so far, of {total:.3g} in all")

    def _repr_mimebundle_(self, **kwargs):  # pragma: no cover - exercised in notebooks
        return self.view._repr_mimebundle_(**kwargs)
