"""The ring all-reduce stepper without a browser: set the sliders, read the picture."""

import re

import pytest
from scaleout import collectives
from scaleout.widgets.diagrams import RingStepper


def _cells(svg: str) -> list[str]:
    return re.findall(r">(own only|sum of \d|full sum)</text>", svg)


def test_stepper_walks_the_ring_and_the_play_button_covers_every_step():
    s = RingStepper(n=4)
    assert s.error is None and s.result["steps"] == 6
    assert s.controls["step"].max == s.play.max == 6
    sched = collectives.ring_schedule(4)
    for step in range(7):
        s.controls["step"].value = step
        assert s.result["step"] == step
        assert s.result["phase"] == (sched.phase[step] if step < 6 else "done")
        full = _cells(s.figure.value)[:16].count("full sum")
        assert full == int(sched.complete(step).sum())
        assert s.result["sent_fraction"] == pytest.approx(sched.sent_fraction(step))
    assert s.result["sent_fraction"] == pytest.approx(1.5)  # 2(n-1)/n
    assert "1.5 × the buffer so far" in s.readout.value


def test_changing_the_gpu_count_resizes_the_step_range_and_keeps_working():
    s = RingStepper(n=4, step=6)
    s.controls["n"].value = 2
    assert s.controls["step"].max == s.play.max == 2
    assert s.controls["step"].value == 2 and s.result["phase"] == "done"
    assert len(re.findall(r">GPU \d</text>", s.figure.value)) == 2
    s.controls["n"].value = 8
    s.controls["step"].value = 7
    assert s.result["phase"] == "all-gather" and s.status.value == ""
    assert 'width="100%"' in s.figure.value
