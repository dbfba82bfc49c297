"""The mechanisms' pictures (scaleout.diagrams) and the library state they draw.

First the state: step-by-step all-reduce schedules, layers on pipeline stages, ZeRO slices,
rail wiring, checked against independent references and against the cost models. Then
the pictures: well-formed SVG, the elements the inputs imply, text inside the viewBox,
bad input as a ValueError naming the parameter.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scaleout import collectives, fabric, memory, pipeline, zero


# =========================================================================== reference ring
def _reference_ring(n: int) -> list[np.ndarray]:
    """The ring all-reduce of Patarasuk & Yuan 2009, on numbers, written out plainly.

    GPU g's input is 2**g in every chunk, so the binary digits of any partial sum name
    the GPUs it includes. Process i sends segment (i - k) mod n in reduce-scatter step k
    and segment (i + 1 - k) mod n in all-gather step k, to process i + 1. Returns the
    number of inputs in every copy before each step and at the end.
    """
    buf = np.array([[2**g] * n for g in range(n)], dtype=np.int64)  # buf[gpu, chunk]
    counts = [np.vectorize(lambda v: bin(v).count("1"))(buf)]
    for k in range(n - 1):
        sent = {(i + 1) % n: ((i - k) % n, buf[i, (i - k) % n]) for i in range(n)}
        for dst, (c, value) in sent.items():
            buf[dst, c] += value
        counts.append(np.vectorize(lambda v: bin(v).count("1"))(buf))
    for k in range(n - 1):
        sent = {(i + 1) % n: ((i + 1 - k) % n, buf[i, (i + 1 - k) % n]) for i in range(n)}
        for dst, (c, value) in sent.items():
            buf[dst, c] = value
        counts.append(np.vectorize(lambda v: bin(v).count("1"))(buf))
    assert (buf == 2**n - 1).all()
    return counts


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 13])
def test_ring_schedule_matches_the_reference_ring_step_by_step(n):
    sched = collectives.ring_schedule(n)
    ref = _reference_ring(n)
    assert sched.steps == len(ref) - 1 == 2 * (n - 1)
    for s, counts in enumerate(ref):
        assert (sched.contributors[s] == counts).all(), f"step {s}"
    # after the reduce-scatter GPU g holds the whole sum of chunk g + 1, and only that one
    done = sched.complete(n - 1)
    assert [list(np.flatnonzero(row)) for row in done] == [[(g + 1) % n] for g in range(n)]
    assert sched.complete(sched.steps).all()
    assert sched.phase == ("reduce-scatter",) * (n - 1) + ("all-gather",) * (n - 1)


@pytest.mark.parametrize("n", [2, 3, 4, 7, 8, 64])
def test_ring_and_halving_doubling_schedules_move_what_the_cost_model_charges(n):
    size = 3.0 * 2**20
    steps, sent = collectives.cost_terms("all_reduce", size, n, "ring")
    ring = collectives.ring_schedule(n)
    assert ring.steps == steps
    assert ring.bytes_per_gpu(size) == pytest.approx(sent)
    assert (ring.chunks_sent() == 2 * (n - 1)).all()  # every GPU equally busy
    if n & (n - 1) == 0:
        hd = collectives.halving_doubling_schedule(n)
        steps, sent = collectives.cost_terms("all_reduce", size, n, "halving_doubling")
        assert hd.steps == steps == 2 * int(math.log2(n))
        assert hd.bytes_per_gpu(size) == pytest.approx(sent)
        assert hd.complete(hd.steps).all()


def test_halving_doubling_halves_the_data_and_ends_the_halving_with_chunk_g_on_gpu_g():
    hd = collectives.halving_doubling_schedule(8)
    # chunks sent per GPU: 4, 2, 1 while halving, then 1, 2, 4 while doubling
    assert [len(step[0][2]) for step in hd.sends] == [4, 2, 1, 1, 2, 4]
    assert [step[0][1] for step in hd.sends] == [4, 2, 1, 1, 2, 4]  # GPU 0's partners
    assert (hd.complete(3) == np.eye(8, dtype=bool)).all()


def test_schedules_reject_bad_sizes_by_name():
    with pytest.raises(ValueError, match="n must be a whole number"):
        collectives.ring_schedule(1)
    with pytest.raises(ValueError, match=r"n must be a power of two.*n=4 or n=8"):
        collectives.halving_doubling_schedule(6)
    with pytest.raises(ValueError, match="step must be"):
        collectives.ring_schedule(4).complete(7)


def test_double_binary_tree_is_nccls_and_each_gpu_is_inner_in_at_most_one_tree():
    t8 = collectives.double_binary_tree(8)
    # NCCL's ncclGetBtree for 8 ranks: 0 -> 4 -> {2, 6} -> {1, 3} and {5, 7}
    assert t8.parents[0] == (-1, 2, 4, 2, 0, 6, 4, 6)
    assert t8.parents[1] == tuple(-1 if p == -1 else 7 - p for p in reversed(t8.parents[0]))
    for n in range(2, 40):
        dt = collectives.double_binary_tree(n)
        steps, _ = collectives.cost_terms("all_reduce", 1.0, n, "tree")
        for t in (0, 1):
            assert sorted(dt.parents[t]).count(-1) == 1
            assert dt.depth(t) <= math.ceil(math.log2(n)) == steps // 2
        inner = [{r for r in range(n) if dt.children(t, r)} for t in (0, 1)]
        if n % 2 == 0:
            assert not inner[0] & inner[1], n


# =========================================================================== pipeline layers
def test_layer_assignment_is_the_order_the_simulator_runs_the_stages():
    for p, v in [(4, 1), (4, 2), (2, 3)]:
        la = pipeline.layer_assignment(24, p, v)
        tl = pipeline.simulate("interleaved" if v > 1 else "1f1b", p=p, m=2 * p, v=v,
                               n_layers=24)
        fwd = (tl.kind == pipeline.F) & (tl.micro_batch == 0)
        order = np.argsort(tl.start_s[fwd], kind="stable")
        visited = list(zip(tl.device[fwd][order], tl.chunk[fwd][order], strict=True))
        blocks = [(int(la.device[k]), int(la.chunk[k]))
                  for k in range(0, 24, la.layers_per_chunk)]
        assert visited == blocks
        assert sorted(x for d in range(p) for r in la.layers_of(d) for x in r) == list(range(24))


def test_layer_assignment_interleaves_blocks_over_devices():
    la = pipeline.layer_assignment(16, 4, 2)
    assert la.layers_of(0) == [range(0, 2), range(8, 10)]
    assert la.device.tolist() == [0, 0, 1, 1, 2, 2, 3, 3] * 2
    with pytest.raises(ValueError, match="p=5 must divide n_layers=16"):
        pipeline.layer_assignment(16, 5)
    with pytest.raises(ValueError, match="v=3 must divide layers per stage=4"):
        pipeline.layer_assignment(16, 4, 3)


# =========================================================================== ZeRO slices
@pytest.mark.parametrize("stage", [0, 1, 2, 3])
@pytest.mark.parametrize("dp", [1, 4, 7])
def test_zero_partition_slices_cover_the_model_and_cost_what_table_1_says(stage, dp):
    psi = 7_000
    part = zero.partition(psi, stage, dp)
    for name in zero.STATE_PARTS:
        r = part.ranges[name]
        if part.sharded(name):
            assert part.count(name).sum() == psi  # the slices add up to the whole
            assert (r[1:, 0] == r[:-1, 1]).all() and r[0, 0] == 0 and r[-1, 1] == psi
        else:
            assert (part.count(name) == psi).all()
    expected = memory.model_state_bytes(psi, stage, dp)
    assert part.bytes_per_gpu().mean() == pytest.approx(expected)
    sharded = [part.sharded(n) for n in zero.STATE_PARTS]
    if dp > 1:
        assert sharded == [stage >= 3, stage >= 2, stage >= 1]


def test_zero_partition_rejects_bad_input_by_name():
    with pytest.raises(ValueError, match="zero_stage"):
        zero.partition(100, 4, 2)
    with pytest.raises(ValueError, match="dp=200 exceeds params=100"):
        zero.partition(100, 3, 200)
    with pytest.raises(ValueError, match="part must be one of"):
        zero.partition(100, 3, 2).sharded("weight")


# =========================================================================== rails
def test_rail_wiring_puts_same_index_gpus_of_a_group_on_one_leaf():
    design = fabric.rail_layout(8, 4, 8)  # radix 8: 4 nodes per group, 2 groups
    wiring = {(n, g): design.leaf_of(n, g) for n in range(8) for g in range(4)}
    assert len(set(wiring.values())) == design.leaves == 8
    for leaf in set(wiring.values()):
        on_it = [k for k, v in wiring.items() if v == leaf]
        assert len({g for _, g in on_it}) == 1  # one rail per leaf
        assert len(on_it) == design.nodes_per_group <= fabric.leaf_split(8)[0]
    with pytest.raises(ValueError, match="gpu must be"):
        design.leaf_of(0, 4)
