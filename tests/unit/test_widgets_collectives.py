"""The collective-cost explorer without a browser: set controls, read numbers and the chart."""

import pytest
from scaleout import calibration, catalog
from scaleout import collectives as C
from scaleout.widgets.collectives import FIT_PREFIX, CollectiveExplorer, size_text


@pytest.fixture
def explorer():
    return CollectiveExplorer(op="all_reduce", algorithms=("ring", "tree"),
                              link="InfiniBand NDR", n=1024, size_bytes=2.0**28)


def test_initial_state_matches_library(explorer):
    assert explorer.error is None
    r = explorer.result
    for algo in ("ring", "tree"):
        assert r["time_s"][algo] == pytest.approx(
            C.collective_time("all_reduce", 2**28, 1024, "InfiniBand NDR", algo))
    assert r["bound_s"] == pytest.approx(C.lower_bound_bytes("all_reduce", 2**28, 1024) / 50e9)
    assert r["best"] == min(r["time_s"], key=r["time_s"].get)
    assert r["crossover_bytes"]["ring"] == pytest.approx(1024 * 1e-6 * 50e9)
    assert r["busbw_gbytes_s"]["ring"] < 50.0
    assert explorer.image.format == "svg+xml" and bytes(explorer.image.value).startswith(b"<svg")
    assert "256 MiB" in explorer.readout.value and "★" in explorer.readout.value


def test_controls_change_numbers_and_chart(explorer):
    before = explorer.image.value
    ring_before = explorer.result["time_s"]["ring"]
    explorer.controls["size_bytes"].value = 2.0**10
    assert explorer.result["time_s"]["ring"] < ring_before
    assert explorer.result["latency_share"]["ring"] > 0.99  # 1 KiB on 1024 GPUs: all latency
    assert explorer.image.value != before
    explorer.controls["link"].value = "TCP/IP 400GbE"
    assert explorer.result["time_s"]["ring"] == pytest.approx(
        C.collective_time("all_reduce", 2**10, 1024, "TCP/IP 400GbE"))
    explorer.controls["algorithms"].value = ("ring", "tree", "halving_doubling", "sharp")
    assert explorer.result["best"] == "sharp"


def test_fitted_link_from_a_real_log(explorer):
    name = "nvidia_h100_8gpu_1node_nvswitch_all_reduce"
    explorer.set_values(link=FIT_PREFIX + name, n=8, size_bytes=2.0**30)
    fit = calibration.fit_log(calibration.load_log(name))
    assert explorer.error is None
    assert explorer.result["link"] == fit.link
    assert explorer.result["time_s"]["ring"] == pytest.approx(fit.predict(2**30))
    assert "8 × NVIDIA H100 80GB HBM3" in bytes(explorer.image.value).decode()


def test_algorithms_that_do_not_model_the_op_are_skipped(explorer):
    explorer.controls["op"].value = "all_gather"
    assert explorer.error is None
    assert explorer.result["algorithms"] == ("ring",) and explorer.result["skipped"] == ("tree",)
    assert "Not modelled for all-gather: double binary tree" in explorer.readout.value
    explorer.controls["algorithms"].value = ("tree", "sharp")
    assert explorer.error == ("algorithms 'tree', 'sharp' do not model op='all_gather'; "
                              "ring models every collective")


def test_bad_input_shows_message_and_recovers(explorer):
    good = explorer.result
    explorer.controls["n"].value = 0
    assert explorer.error == "n must be a whole number >= 1, got 0"
    assert "⚠" in explorer.status.value and "n must be" in explorer.status.value
    assert explorer.result is good
    explorer.controls["algorithms"].value = ()
    assert explorer.error.startswith("algorithms: choose at least one")
    explorer.set_values(algorithms=("ring",), n=64)
    assert explorer.error is None and explorer.status.value == ""
    assert explorer.result["time_s"]["ring"] == pytest.approx(
        C.collective_time("all_reduce", 2**28, 64, catalog.link("InfiniBand NDR")))


def test_every_link_of_the_menu_works(explorer):
    for name in explorer.controls["link"].options:
        explorer.controls["link"].value = name
        assert explorer.error is None, (name, explorer.error)


def test_size_text():
    assert size_text(2**28) == "256 MiB" and size_text(1536) == "1.5 KiB"
    assert size_text(8) == "8 B" and size_text(float("inf")) == "none"


def test_unknown_control_is_a_clear_error():
    with pytest.raises(ValueError, match="no control 'gpus'"):
        CollectiveExplorer(gpus=8)
