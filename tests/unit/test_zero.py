"""scaleout.zero: ZeRO's 2Ψ / 3Ψ traffic (Sec. 7.2), its time on a fabric, Table 1 regenerated."""

import math

import numpy as np
import pytest
from scaleout import catalog, collectives, memory, units
from scaleout import zero as Z
from scaleout.collectives import NodeNetwork

PSI = 7.5e9


@pytest.mark.parametrize(("stage", "factor"), [(0, 2), (1, 2), (2, 2), (3, 3)])
def test_traffic_in_the_papers_limit(stage, factor):
    """ZeRO Sec. 7.2: DP, P_os and P_os+g move 2Ψ per GPU and step; P_os+g+p 3Ψ."""
    assert Z.zero_comm_elements(PSI, stage) == factor * PSI
    assert Z.zero_comm_bytes(PSI, stage) == 2 * factor * PSI  # fp16: 2 bytes per element


def test_stage_3_moves_one_and_a_half_times_plain_dp():
    assert Z.zero_comm_elements(PSI, 3) / Z.zero_comm_elements(PSI, 0) == 1.5
    for dp in (2, 8, 1024):
        assert math.isclose(Z.zero_comm_elements(PSI, 3, dp) / Z.zero_comm_elements(PSI, 0, dp),
                            1.5)


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
@pytest.mark.parametrize("dp", [2, 16, 1024])
def test_exact_traffic_is_the_rings_bytes_of_each_collective(stage, dp):
    """Each collective sends its bandwidth lower bound per GPU (Patarasuk & Yuan 2009):
    (N−1)/N·Ψ for reduce-scatter and all-gather, 2(N−1)/N·Ψ for all-reduce."""
    from_collectives = sum(collectives.lower_bound_bytes(op, PSI, dp)
                           for op, _ in Z.stage_collectives(stage))
    assert math.isclose(Z.zero_comm_elements(PSI, stage, dp), from_collectives)
    limit = Z.zero_comm_elements(PSI, stage)
    assert math.isclose(Z.zero_comm_elements(PSI, stage, dp), limit * (dp - 1) / dp)


def test_traffic_is_array_friendly():
    """A number in gives a float out; an array in gives the array of each element's traffic."""
    np.testing.assert_allclose(Z.zero_comm_elements(np.array([1e9, 2e9]), 3), [3e9, 6e9])
    np.testing.assert_allclose(Z.zero_comm_elements(np.array([1e9, 2e9]), 1, 4),
                               [1.5e9, 3e9])  # (4-1)/4 Ψ twice
    np.testing.assert_allclose(Z.zero_comm_bytes(np.array([1e9, 2e9]), 0, 2), [2e9, 4e9])
    np.testing.assert_allclose(Z.zero_comm_bytes(np.array([1e9, 2e9]), 3), [6e9, 12e9])
    for value in (Z.zero_comm_elements(1e9, 3), Z.zero_comm_elements(1e9, 3, 4),
                  Z.zero_comm_bytes(1e9, 3), Z.zero_comm_bytes(1e9, 0, 2)):
        assert type(value) is float


@pytest.mark.parametrize("fabric", [NodeNetwork(), NodeNetwork(hierarchical=False),
                                    NodeNetwork(inter="TCP/IP 100GbE", gpus_per_node=1)])
@pytest.mark.parametrize("dp", [8, 64, 512])
def test_times_on_a_ring_fabric_follow_the_volumes(fabric, dp):
    """On rings a reduce-scatter or an all-gather takes exactly half an all-reduce, so stages
    1-2 cost what plain DP costs and stage 3 exactly 1.5 times as much."""
    t = {s: Z.zero_comm(PSI, s, dp, fabric).total_s for s in range(4)}
    assert math.isclose(t[1], t[0]) and math.isclose(t[2], t[0])
    assert math.isclose(t[3], 1.5 * t[0])
    assert math.isclose(t[0], fabric.time("all_reduce", 2 * PSI, dp))


def test_comm_parts_name_the_collectives():
    parts = Z.zero_comm(PSI, 3, 64).parts_s
    assert list(parts) == ["all-gather (weights)", "all-gather (weights again, backward)",
                           "reduce-scatter (gradients)"]
    assert list(Z.zero_comm(PSI, 0, 64).parts_s) == ["all-reduce (gradients)"]
    assert (Z.zero_comm(PSI, 2, 16).zero_stage, Z.zero_comm(PSI, 2, 16).dp) == (2, 16)
    assert Z.zero_comm(PSI, 2, 64).bytes_sent == Z.zero_comm_bytes(PSI, 2, 64)


def test_bytes_follow_the_recipe():
    """Mixed-precision Adam moves 2-byte gradients and weights (the paper's case); Megatron-LM's
    bf16 recipe reduces fp32 gradients (4 bytes) and gathers bf16 weights (2 bytes)."""
    dp = 64
    assert Z.zero_comm(PSI, 3, dp).bytes_sent == pytest.approx(Z.zero_comm_bytes(PSI, 3, dp))
    bf16 = Z.zero_comm(PSI, 2, dp, recipe="megatron-bf16")
    assert bf16.bytes_sent == pytest.approx((dp - 1) / dp * PSI * (4 + 2))
    fab = NodeNetwork()
    assert bf16.parts_s["reduce-scatter (gradients)"] == fab.time("reduce_scatter", 4 * PSI, dp)
    assert bf16.parts_s["all-gather (weights)"] == fab.time("all_gather", 2 * PSI, dp)


# --------------------------------------------------------------------------- memory
def _decimals(printed: float) -> int:
    text = repr(float(printed)).rstrip("0").rstrip(".")
    return len(text.split(".")[1]) if "." in text else 0


@pytest.mark.parametrize("params_key", ["7.5e9", "128e9", "1e12"])
def test_memory_table_regenerates_zero_table_1(params_key):
    """Every cell as printed: small values rounded, large ones truncated (data/published)."""
    pub = catalog.published("zero_table1")
    table_gb = units.bytes_to_gb(Z.zero_memory_table(float(params_key), pub["dp"], (1, 2, 3)))
    printed = np.array(pub["gb"][params_key]["rows"], dtype=float)
    assert table_gb.shape == printed.shape == (6, 3)
    for got, want in zip(table_gb.ravel(), printed.ravel(), strict=True):
        ulp = 10.0 ** -_decimals(want)
        assert want - ulp / 2 - 1e-9 <= got < want + ulp, (got, want)


def test_memory_table_stage_0_does_not_shrink():
    table = Z.zero_memory_table(PSI, [1, 8, 1024])
    np.testing.assert_allclose(table[:, 0], 16 * PSI)
    np.testing.assert_allclose(table[:, 3], 16 * PSI / np.array([1, 8, 1024]))


def test_memory_table_follows_the_recipe():
    """Megatron-LM's bf16 recipe (its distributed-optimizer docs): 2 + 4 + 12 = 18 bytes per
    parameter, 6 + 12/d with the optimizer sharded; by hand for Ψ = 1e9 and d = 4:
    18, 6 + 3 = 9, 2 + 16/4 = 6 and 18/4 = 4.5 GB."""
    table = Z.zero_memory_table(1e9, [1, 4], recipe="megatron-bf16")
    np.testing.assert_allclose(table, [[18e9] * 4, [18e9, 9e9, 6e9, 4.5e9]])


def test_lowest_fitting_stage_is_the_first_that_fits():
    kw = {"recompute": "full"}
    stage = Z.lowest_fitting_stage("gpt3-175b", "H100", 64, **kw)
    assert stage == 3  # stage 2 still keeps all 2Ψ = 350 GB of fp16 weights on every GPU
    assert memory.training_memory("gpt3-175b", "H100", dp=64, zero_stage=3, **kw).fits
    assert not memory.training_memory("gpt3-175b", "H100", dp=64, zero_stage=2, **kw).fits
    assert Z.lowest_fitting_stage("gpt2-1.5b", "H100", 8, **kw) == 0
    assert Z.lowest_fitting_stage("gpt3-175b", "H100", 1, **kw) is None


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(("call", "pattern"), [
    (lambda: Z.zero_comm_elements(PSI, 4), r"zero_stage must be a whole number from 0 to 3"),
    (lambda: Z.zero_comm_elements(-1, 1), r"params must be a finite number > 0"),
    (lambda: Z.zero_comm_elements(PSI, 1, 0), r"dp must be a whole number >= 1, got 0"),
    (lambda: Z.zero_comm_bytes(PSI, 1, 8, 0), r"bytes_per_element must be a finite number > 0"),
    (lambda: Z.zero_comm(PSI, 3, 12), r"gpus_per_node=8 must divide dp \(GPUs in the group\)=12"),
    (lambda: Z.stage_collectives(-1), r"zero_stage must be a whole number from 0 to 3"),
    (lambda: Z.zero_comm(PSI, 1, 8, recipe="adam"), r"recipe must be one of"),
    (lambda: Z.lowest_fitting_stage("gpt3-175b", "H1000", 8), r"gpu 'H1000' is not in the"),
])
def test_bad_input(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


# --------------------------------------------------------------------------- who holds what
def test_partition_slices_by_hand():
    """ZeRO Sec. 5.1's equal partitions, contiguous; 10 parameters over 4 GPUs: the first
    10 mod 4 = 2 GPUs keep 3, the others 2. Stage 1 shards only the optimizer state; with as
    many GPUs as parameters each keeps one. The slices are read-only."""
    part = Z.partition(10, 3, 4)
    assert (part.params, part.zero_stage, part.dp) == (10, 3, 4)
    for name in Z.STATE_PARTS:
        assert part.ranges[name].tolist() == [[0, 3], [3, 6], [6, 8], [8, 10]]
        assert part.count(name).tolist() == [3, 3, 2, 2] and part.sharded(name)
    one_each = Z.partition(4, 1, 4)
    assert one_each.ranges["optimizer"].tolist() == [[0, 1], [1, 2], [2, 3], [3, 4]]
    assert one_each.ranges["weights"].tolist() == [[0, 4]] * 4
    assert not one_each.sharded("grads") and one_each.sharded("optimizer")
    with pytest.raises(ValueError, match="read-only"):
        part.ranges["weights"][0, 0] = 1
