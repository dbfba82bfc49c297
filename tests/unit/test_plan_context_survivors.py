"""Surviving mutants of what the planner's step model is built on (``scaleout.plan.step``'s
``experts_of`` and ``context``, ``Framework.with_switches``, ``plan.network``'s derated links),
killed with expected values worked by hand or properties that must hold.

``experts_of`` is checked against the models' published widths (DeepSeek-V3's released config,
Mixtral 8x7B's) with the parameter counts written out, and its window counts against a plain
loop; ``context`` and ``with_switches`` against what their documentation says a field holds;
the derated links against the α-β model's own bound. See ``tests/MUTATION.md``.
"""

from dataclasses import replace

import pytest
from scaleout import catalog, plan
from scaleout.collectives import AlphaBeta, NodeNetwork
from scaleout.plan import step
from scaleout.plan.calibration import DEFAULT_CALIBRATION
from scaleout.plan.frameworks import FRAMEWORKS

GPU = "H100-SXM5-80GB"


def test_mixtral_nonexpert_parameters_leave_out_exactly_the_routed_experts():
    """Mixtral 8x7B (32 layers, hidden 4096, 32 heads of 128, 8 KV heads, 8 gated experts of
    width 14336, vocabulary 32000, untied, RMSNorm, no biases), counted by hand:

    * routed experts: 32 layers x 8 x 3 x 4096 x 14336 = 45,097,156,608;
    * per layer besides them: Q and O 2 x 4096², K and V 2 x 4096 x 1024, two RMSNorms
      2 x 4096, the router 4096 x 8: 41,984,000; 32 layers: 1,343,488,000;
    * embedding and output 2 x 32000 x 4096 = 262,144,000, final norm 4096.

    The non-expert total is 1,605,636,096 and with the experts 46,702,792,704 (the published
    46.7B). ``Experts.nonexpert`` is the breakdown without the routed experts: its total too.
    """
    ex = step.experts_of(catalog.model("mixtral-8x7b"))
    routed = 8 * 3 * 4096 * 14336
    assert ex.routed_per_layer == routed
    layers = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 2 * 4096 + 4096 * 8)
    assert layers == 1_343_488_000
    want = {"layers": layers, "embedding": 32000 * 4096, "positions": 0, "final_norm": 4096,
            "output": 32000 * 4096}
    want["total"] = sum(want.values())
    assert want["total"] == 1_605_636_096
    assert want["total"] + 32 * routed == 46_702_792_704
    assert ex.nonexpert == want
    # the total is the sum of the parts it keeps, as in memory.param_breakdown
    assert ex.nonexpert["total"] == sum(v for k, v in ex.nonexpert.items() if k != "total")


def test_deepseek_v3_dense_layer_holds_its_mlp_beyond_shared_expert_and_router():
    """DeepSeek-V3 (released config: hidden 7168, dense MLP 18432, 1 shared and 256 routed
    experts of 2048, all gated; the router a 256 x 7168 matrix and a bias per expert, Sec.
    2.1.2): a dense layer's MLP is 3 x 7168 x 18432 = 396,361,728 parameters, where an MoE
    layer holds besides its routed experts the shared one, 3 x 7168 x 2048 = 44,040,192, and
    the router, 256 x 7168 + 256 = 1,835,264. ``dense_extra`` is the difference:
    350,486,272."""
    ex = step.experts_of(catalog.model("deepseek-v3"))
    dense_mlp, shared, router = 3 * 7168 * 18432, 3 * 7168 * 2048, 256 * 7168 + 256
    assert dense_mlp - shared - router == 350_486_272
    assert ex.dense_extra == 350_486_272
    assert ex.routed_per_layer == 256 * shared
    assert ex.moe_share == 58 / 61


@pytest.mark.parametrize("name", ["deepseek-v3", "qwen3-30b-a3b"])
def test_moe_window_of_no_layers_holds_no_moe_layer(name):
    """``moe_window[k]`` is the most MoE layers any ``k`` consecutive layers hold: a plain
    loop over every window, for every ``k`` from 0 (an empty window holds none) to all the
    layers."""
    m = catalog.model(name)
    ex = step.experts_of(m)
    flags = [int(m.layer_is_moe(i)) for i in range(m.n_layers)]
    for k in range(m.n_layers + 1):
        want = max(sum(flags[i:i + k]) for i in range(m.n_layers - k + 1))
        assert ex.moe_window[k] == want, k
    assert ex.moe_window[0] == 0


def test_a_16_bit_recipe_runs_no_share_in_fp8():
    """``Context.fp8_share`` is the share of the layers' weight FLOPs run in FP8: none under
    a 16-bit recipe (``compute.flops_by_format``'s ``"fp8"`` is 0 there), and no FP8 peak;
    under an FP8 recipe the share is the Linear FLOPs over all the weight FLOPs, a number
    between 0 and 1."""
    ctx = step.context("llama3-8b", GPU, None, None, "mixed-adam", None, 8)
    assert ctx.fp8_share == 0.0 and ctx.fp8_flops == 0.0
    assert isinstance(ctx.fp8_share, float) and isinstance(ctx.fp8_flops, float)
    fp8 = step.context("llama3-8b", GPU, None, None, "fp8-te", None, 8)
    assert 0.0 < fp8.fp8_share < 1.0
    assert fp8.fp8_flops == catalog.gpu(GPU).fp8_dense_tflops * 1e12


def test_switched_off_framework_is_the_preset_with_those_switches_false():
    """Turning switches off gives the preset with those fields ``False`` (the same as
    writing it out with ``dataclasses.replace``) and its label followed by each switch named
    ``"... off"``, in the order given, separated by commas; switches left on change
    nothing."""
    core = FRAMEWORKS["megatron-core"]
    assert core.grad_overlap is True and core.tp_overlap is True
    off = core.with_switches({"tp_overlap": False, "p2p_overlap": True, "grad_overlap": False})
    assert off.tp_overlap is False and off.grad_overlap is False
    assert off.p2p_overlap is True and off.param_gather_overlap is True
    assert off.label == "Megatron-Core (2024-25), tp_overlap off, grad_overlap off"
    assert off == replace(core, tp_overlap=False, grad_overlap=False,
                          label="Megatron-Core (2024-25), tp_overlap off, grad_overlap off")
    one = core.with_switches({"hybrid_shard": False})
    assert one.hybrid_shard is False
    assert one.label == "Megatron-Core (2024-25), hybrid_shard off"
    # a search with hybrid sharding off runs (the layout rule reads the switch with ``|``)
    # and shards over the whole data-parallel group only
    res = plan.search("llama3-8b", GPU, 16, 32, framework="pytorch-fsdp",
                      switches={"hybrid_shard": False})
    assert res.n_evaluated > 0
    assert (res.arrays["zero_shard"] == res.arrays["dp"]).all()


def test_a_link_beyond_the_alpha_beta_bound_is_refused_whatever_the_efficiency():
    """A catalog ``Link`` and an ``AlphaBeta`` of the same figures are the same link to the
    planner (``NodeNetwork`` takes either). An ``AlphaBeta`` faster than 10³⁰ B/s cannot be
    made, so a ``Link`` of 2 x 10²¹ GB/s (2 x 10³⁰ B/s) is refused too, even where the
    collectives' efficiency (0.1) would bring the derated rate below the bound."""
    with pytest.raises(ValueError, match="bandwidth_bytes_s"):
        AlphaBeta(5e-7, 2e30)
    fast = replace(catalog.link("NVLink 4"), name="fast", gbytes_s=2e21)
    net = NodeNetwork(intra=fast, inter="InfiniBand NDR")
    cal = replace(DEFAULT_CALIBRATION, collective_efficiency=0.1)
    with pytest.raises(ValueError, match="bandwidth_bytes_s"):
        step.context("llama3-8b", GPU, net, cal, "mixed-adam", None, 8)
    # a link within the bound is derated, latency unchanged
    ok = replace(fast, gbytes_s=900.0)
    ctx = step.context("llama3-8b", GPU, NodeNetwork(intra=ok, inter="InfiniBand NDR"), cal,
                       "mixed-adam", None, 8)
    assert ctx.collectives.links.intra == AlphaBeta(ok.latency_us * 1e-6, 900e9 * 0.1)
