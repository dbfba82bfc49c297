"""The incast explorer without a browser: set controls, read numbers, break it, recover."""

import pytest
from scaleout import congestion
from scaleout.widgets.congestion import IncastExplorer


@pytest.fixture
def explorer():
    return IncastExplorer()


def test_initial_state_matches_the_library(explorer):
    assert explorer.error is None and set(explorer.result) == set(congestion.MECHANISMS)
    want = congestion.simulate_incast(16, "pfc", message_bytes=2e6, victim_bytes=32e6,
                                      xoff_bytes=1e6)
    got = explorer.result["pfc"]
    assert got.victim_s == want.victim_s and got.pauses == want.pauses
    assert f"{want.victim_s * 1e6:,.0f}" in explorer.readout.value
    assert explorer.image.format == "svg+xml" and bytes(explorer.image.value).startswith(b"<svg")
    assert "so-explorer-incast" in explorer.view._dom_classes


def test_more_senders_block_the_victim_longer_under_pfc_only(explorer):
    before = explorer.result["pfc"].victim_slowdown
    image = explorer.image.value
    explorer.controls["senders"].value = 64
    after = explorer.result
    assert after["pfc"].victim_slowdown > before
    assert after["credits"].victim_slowdown == pytest.approx(1.0)
    assert explorer.image.value != image


def test_a_bad_threshold_shows_a_status_and_a_good_one_clears_it(explorer):
    readout = explorer.readout.value
    explorer.controls["xoff_kb"].value = -1.0
    assert "xoff_bytes must be a finite number > 0" in explorer.error
    assert explorer.status.value.startswith('<div class="so-error">⚠')
    assert explorer.readout.value == readout
    explorer.controls["xoff_kb"].value = 1000.0
    assert explorer.error is None and explorer.status.value == ""
    assert explorer.readout.value == readout
