"""The planner's parts that mutation testing found unguarded, through its public API only
(``plan.evaluate``, ``plan.search``, ``layout.RULES``); the planner's own tests are test_plan.py.
"""

import pytest
from scaleout import memory, pipeline, plan

#: A100 80GB SXM: 2,039 GB/s of HBM2e (NVIDIA A100 datasheet, 2021).
A100_HBM_BYTES_S = 2039e9
#: One Adam step with mixed precision reads the fp32 weight, momentum, variance and the fp16
#: gradient (4 + 4 + 4 + 2 bytes) and writes the three states and the fp16 weight (12 + 2):
#: 28 bytes of HBM traffic per parameter it updates (ZeRO Sec. 3.1's 16 bytes of state).
ADAM_BYTES_PER_PARAM = 4 + 4 + 4 + 2 + 12 + 2


def _optimizer_s(model: str, tp: int, pp: int, dp: int, zero_stage: int) -> tuple[float, float]:
    """(optimizer seconds, parameters per GPU) of one plan on A100s."""
    # DeepSpeed 2021 offers every ZeRO stage (1 at most with pipelining)
    result = plan.evaluate(model, "A100", plan.Plan(tp=tp, pp=pp, dp=dp, micro_batch=1,
                                                    global_batch=64 * dp, zero_stage=zero_stage),
                           framework="deepspeed-2021")
    # fp16 weights, 2 bytes each: unsharded below stage 3
    params_per_gpu = result.memory["weights"] / 2 if zero_stage < 3 else float("nan")
    return result.step["optimizer"], params_per_gpu


@pytest.mark.parametrize(("model", "tp", "pp", "stages"), [
    ("gpt3-175b", 8, 8, (0, 1)),        # ZeRO 2 and 3 exclude pipeline stages
    ("megatron-7.5b", 8, 1, (0, 1, 2, 3)),
])
def test_optimizer_step_is_28_bytes_per_param_over_hbm_sharded_by_zero(model, tp, pp, stages):
    """Without ZeRO every replica updates all its parameters: 28 B/param / HBM bandwidth,
    whatever dp is. From stage 1 on each of the dp replicas updates 1/dp of them."""
    seconds0, params = _optimizer_s(model, tp, pp, 2, 0)
    hand = params * ADAM_BYTES_PER_PARAM / A100_HBM_BYTES_S
    assert seconds0 == pytest.approx(hand, rel=1e-12)
    for dp in (2, 4, 16):
        assert _optimizer_s(model, tp, pp, dp, 0)[0] == pytest.approx(hand, rel=1e-12)
        for stage in stages[1:]:
            assert _optimizer_s(model, tp, pp, dp, stage)[0] == pytest.approx(hand / dp,
                                                                               rel=1e-12)


def test_uneven_stages_hold_the_rounded_up_layer_count():
    """Llama 3 70B's 80 layers on 3 stages (uneven_layers=True): the balanced split gives the
    last stage, which also runs the output layer, one layer fewer (26 + output + final norm),
    and the first two stages ceil(54/2) = 27 layers each; the first stage also holds the input
    embedding (untied, the output layer's size), so it is the heaviest: 27 layers + embedding.
    fp16 weights are 2 bytes per parameter over tp."""
    parts = memory.param_breakdown("llama3-70b")
    first = parts["layers"] * 27 / 80 + parts["embedding"] + parts["positions"]
    last = parts["layers"] * 26 / 80 + parts["final_norm"] + parts["output"]
    assert first > last
    result = plan.evaluate("llama3-70b", "H100", plan.Plan(tp=8, pp=3, dp=2, micro_batch=1,
                                                           global_batch=64), uneven_layers=True)
    assert result.memory["weights"] == pytest.approx(2 * first / 8, rel=1e-12)
    assert result.stage_memory_bytes["first"] > result.stage_memory_bytes["last"]


@pytest.mark.parametrize("interleave", [1, 2])
def test_first_stage_activations_are_the_simulated_micro_batches_in_flight(interleave):
    """GPT-3 on 8 stages, 16 micro-batches: the first stage holds its 12 layers' activations
    (Korthikanti Table 2, t = 8, SP, selective) for as many micro-batches as the pipeline
    simulator finds in flight there at its peak: 8 under 1F1B, 11.5 interleaved (v = 2)."""
    result = plan.evaluate("gpt3-175b", "A100", plan.Plan(
        tp=8, pp=8, dp=1, micro_batch=1, global_batch=16, interleave=interleave, sp=True,
        recompute="selective"))
    schedule = "interleaved" if interleave > 1 else "1f1b"
    peak = pipeline.simulate(schedule, 8, 16, interleave).peak_in_flight_mb[0]
    assert peak == (11.5 if interleave > 1 else 8)
    layer = 2048 * 12288 * 34 / 8  # sbh · 34/t bytes
    assert result.memory["activations"] == pytest.approx(12 * layer * peak, rel=1e-12)
