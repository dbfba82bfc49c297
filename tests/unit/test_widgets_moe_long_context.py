"""The explorers of notebooks 13 and 14 without a browser: set controls, check the numbers
against library calls, and bad input shown in the status line while the widget keeps
working."""

from __future__ import annotations

import pytest
from scaleout import catalog, context_parallel, moe, roofline
from scaleout.widgets.long_context import ContextExplorer, RooflineExplorer
from scaleout.widgets.moe import MoEExplorer, moe_models


def test_moe_explorer_numbers_are_the_library_s():
    e = MoEExplorer()
    assert e.error is None and e.result["ep"] == 64
    c = moe.layer_comm_time("deepseek-v3", 4096, 64, 8, "NVLink 4 (H800)", "InfiniBand NDR",
                            "fp8-deepseek")
    assert e.result["chosen"]["total_s"] == pytest.approx(c["total_s"])
    assert b"<svg" in bytes(e.image.value)
    # a 72-GPU domain keeps EP64 on NVLink: no network bar for that row
    assert e.result["rows"]["72 GPUs"]["all-to-all across the network"] == 0
    assert e.result["rows"]["8 GPUs"]["all-to-all across the network"] > 0


def test_moe_explorer_model_change_fills_experts_and_a_valid_ep():
    e = MoEExplorer()
    e.set_values(model="mixtral-8x7b")
    assert (e.controls["experts"].value, e.controls["top_k"].value) == (8, 2)
    assert e.controls["ep"].value == 8 and e.error is None
    assert set(moe_models()) >= {"deepseek-v3", "mixtral-8x7b", "qwen3-235b-a22b"}


@pytest.mark.parametrize(("changes", "match"), [
    ({"experts": 100}, "ep=64 must divide experts"),
    ({"top_k": 16, "experts": 8, "ep": 8}, "top_k=16 must be from 1 to experts=8"),
    ({"gpu": "A100-SXM4-80GB"}, "no FP8 tensor cores"),
])
def test_moe_explorer_shows_bad_input_and_recovers(changes, match):
    e = MoEExplorer()
    e.set_values(**changes)
    assert e.error is not None and match in e.error
    assert "⚠" in e.status.value and b"<svg" in bytes(e.image.value)  # last good chart stays
    e.set_values(model="deepseek-v3", experts=256, top_k=8, ep=64, gpu="H800-SXM5-80GB")
    assert e.error is None and e.status.value == ""


def test_context_explorer_curves_and_comparison():
    e = ContextExplorer()
    assert e.error is None
    here = context_parallel.activation_bytes_per_gpu("llama3-405b", 131072, tp=8, cp=16)
    assert e.result["here_bytes"] == pytest.approx(here)
    assert e.result["vs"]["cp_s"] < e.result["vs"]["tp_only_s"]
    e.set_values(cp=1)
    assert e.result["vs"] is None and e.error is None


def test_context_explorer_bad_cp_is_shown():
    e = ContextExplorer()
    e.set_values(variant="all-to-all")  # cp 16 > llama3-405b's 8 KV heads
    assert "must divide key/value heads" in e.error
    e.set_values(cp=8)
    assert e.error is None
    e.set_values(recipe="fp8-te", gpu="V100-SXM2-32GB")
    assert "no FP8 tensor cores" in e.error


def test_roofline_explorer_parts_are_roofline_s():
    e = RooflineExplorer()
    parts = roofline.step_parts("llama3-70b", "H100", seq_len=8192, tp=8, dp=64,
                                micro_batches=16)
    assert [p.name for p in e.result["parts"]] == [p.name for p in parts]
    assert "<td>compute</td>" in e.readout.value and "<td>hbm</td>" in e.readout.value
    e.set_values(fmt="fp8", gpu="A100-SXM4-80GB")
    assert "no FP8 tensor cores" in e.error
    e.set_values(gpu="H100-SXM5-80GB", model="deepseek-v3", tp=1, ep=64)
    assert e.error is None and any(p.name == "EP all-to-all" for p in e.result["parts"])
    e.set_values(ep=16, model="mixtral-8x7b")
    assert "ep=16 must divide" in e.error
    assert catalog.model("mixtral-8x7b").experts == 8
