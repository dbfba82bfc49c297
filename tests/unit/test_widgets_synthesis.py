"""The scale-up vs scale-out explorer without a browser: set controls, read numbers, chart."""

import pytest
from scaleout import formatting, synthesis
from scaleout.widgets.synthesis import COMPARED_SIZES, DomainExplorer


def svg(explorer) -> str:
    assert explorer.image.format == "svg+xml"
    return bytes(explorer.image.value).decode()


@pytest.fixture
def explorer():
    return DomainExplorer()


def test_initial_state_is_the_library_cluster_plan(explorer):
    assert explorer.error is None
    want = synthesis.cluster_plan("gpt3-175b", "GB200", 1152, 1536, 300e9, gpus_per_node=72,
                                  domain_sizes=COMPARED_SIZES, optics_choice="dsp")
    got = explorer.result
    assert got.domains.options == want.domains.options
    assert (got.fabric, got.reliability, got.wall_days) == (want.fabric, want.reliability,
                                                            want.wall_days)
    assert got.domains.sizes == (8, 72)
    text = explorer.readout.value
    assert "★ 72" in text and want.chosen.label in text
    assert f"{want.wall_days:,.1f}" in text
    chart = svg(explorer)
    assert chart.startswith("<svg") and "8 GPUs/domain" in chart and "72 GPUs/domain" in chart


def test_domain_and_optics_change_the_design(explorer):
    image = explorer.image.value
    explorer.controls["domain"].value = 36
    r = explorer.result
    assert explorer.error is None and r.gpus_per_node == 36 and r.domains.sizes == (8, 36, 72)
    assert r.chosen.plan == synthesis.compare_domains("gpt3-175b", "GB200", 1152, 1536,
                                                      (36,)).option(36).plan
    assert "★ 36" in explorer.readout.value and explorer.image.value != image
    dsp_w = r.fabric.optics_power_w
    explorer.controls["optics"].value = "cpo"  # 400G ports as breakouts of co-packaged optics
    bill = explorer.result.fabric.bill
    assert bill.group("leaf-spine").module.technology == "cpo" and bill.power_w < dsp_w
    assert f"{formatting.power(bill.power_w)}," in explorer.readout.value


def test_model_gpu_and_budget_move_the_numbers(explorer):
    days = explorer.result.wall_days
    explorer.controls["tokens_b"].value = 600.0
    assert explorer.result.wall_days == pytest.approx(2 * days, rel=1e-6)
    explorer.set_values(model="llama3-70b", gpu="H100-SXM5-80GB", n_gpus=576,
                        global_batch=1152, domain=8)
    r = explorer.result
    assert explorer.error is None and r.model == "llama3-70b" and r.domains.sizes == (8, 72)
    assert "llama3-70b on 576 × H100-SXM5-80GB" in svg(explorer)


def test_bad_values_show_a_status_and_the_explorer_recovers(explorer):
    good = explorer.readout.value
    explorer.controls["n_gpus"].value = 0
    assert "n_gpus must be a whole number >= 1" in explorer.error
    assert "⚠" in explorer.status.value and explorer.readout.value == good
    explorer.controls["n_gpus"].value = 1152
    assert explorer.error is None and explorer.status.value == ""
    explorer.controls["tokens_b"].value = -1.0
    assert "tokens must be a finite number > 0" in explorer.error
    explorer.controls["tokens_b"].value = 300.0
    explorer.controls["domain"].value = 256  # 1,152 GPUs are 4.5 domains of 256
    assert "do not fill whole 256-GPU domains" in explorer.error
    explorer.controls["domain"].value = 72
    assert explorer.error is None and explorer.readout.value == good
