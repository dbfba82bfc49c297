"""scaleout.pipeline: the simulated schedules against the papers' closed forms and their rules.

* bubble fractions: Narayanan et al. 2021 Sec. 2.2.1-2.2.2, Huang et al. 2019 Sec. 2.3,
  Qi et al. 2023 Sec. 3.1; activations in flight: Narayanan Sec. 2.2.1, Korthikanti et
  al. 2022 Sec. 4.2.3;
* every timeline obeys the rules of a pipeline: one pass at a time per device, each pass
  after its input (plus the transfer), every pass exactly once, and as early as allowed.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scaleout import compute, memory, pipeline
from scaleout.pipeline import B, F

# (schedule, p, m, v): the distinct non-trivial cases of the closed forms, free transfers and
# uniform stages. One stage (no bubble), interleaving with v = 1 (1F1B's makespan) and other
# backward times (the fraction does not depend on them) are checked once each, below.
GRID = (
    [("gpipe", p, m, 1) for p in (2, 3, 4, 8) for m in (1, 2, 3, 5, 8, 16)]
    + [("1f1b", p, m, 1) for p in (2, 3, 4, 8) for m in (1, 2, 3, 5, 8, 16, 33)]
    + [("interleaved", p, k * p, v) for p in (2, 3, 4, 8) for k in (1, 2, 3, 4)
       for v in (2, 3, 4)]
)


def _ids(case):
    return "-".join(map(str, case))


def _index(t: pipeline.PipelineTimeline) -> dict[tuple[int, int, int], int]:
    """``(kind, virtual stage, micro-batch) -> task index``."""
    stage = t.chunk.astype(int) * t.p + t.device
    return {(int(k), int(s), int(j)): i
            for i, (k, s, j) in enumerate(zip(t.kind, stage, t.micro_batch, strict=True))}


# =========================================================================== closed forms
@pytest.mark.parametrize(("schedule", "p", "m", "v"), GRID, ids=map(_ids, GRID))
def test_bubble_equals_closed_form(schedule, p, m, v):
    """Free sends, equal stages: (p - 1)/m, and (p - 1)/(v m) interleaved (Narayanan 2.2)."""
    t = pipeline.simulate(schedule, p, m, v, forward_s=1.0, backward_s=2.0)
    want = (p - 1) / (v * m)
    assert t.bubble_fraction == pytest.approx(want, abs=1e-12)
    assert t.bubble_closed_form == pytest.approx(want, abs=1e-15)
    assert t.ideal_s == pytest.approx(m * 3.0)


@pytest.mark.parametrize(("schedule", "v"), [("gpipe", 1), ("1f1b", 1), ("interleaved", 2)])
def test_bubble_fraction_does_not_depend_on_the_backward_time(schedule, v):
    """The bubble is (p - 1) passes of each kind, the ideal m of each: their ratio keeps
    (p - 1)/(v m) for a backward pass as long as, or three times, the forward one."""
    for backward in (1.0, 3.0):
        t = pipeline.simulate(schedule, 4, 8, v, forward_s=1.0, backward_s=backward)
        assert t.bubble_fraction == pytest.approx(3 / (v * 8), abs=1e-12)
        assert t.ideal_s == pytest.approx(8 * (1.0 + backward))


def test_one_stage_has_no_bubble_and_v1_interleaving_is_1f1b():
    """p = 1: nothing waits. Interleaving with one chunk per device finishes when 1F1B does."""
    for schedule, v in (("gpipe", 1), ("1f1b", 1), ("interleaved", 1), ("interleaved", 3)):
        for m in (1, 5):
            t = pipeline.simulate(schedule, 1, m, v, forward_s=1.0, backward_s=2.0)
            assert t.bubble_fraction == pytest.approx(0, abs=1e-12)
            assert t.makespan_s == pytest.approx(m * 3.0)
    for p in (2, 3, 4, 8):
        for k in (1, 2, 3, 4):
            assert pipeline.simulate("interleaved", p, k * p, 1).makespan_s == pytest.approx(
                pipeline.simulate("1f1b", p, k * p).makespan_s)
            assert pipeline.simulate("1f1b", p, k * p).makespan_s == pytest.approx(
                (k * p + p - 1) * 3.0)


@pytest.mark.parametrize("p", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("m_over_p", [1, 2, 5])
@pytest.mark.parametrize(("backward", "share"), [(2.0, 0.5), (1.0, 0.5), (2.0, 0.25),
                                                 (1.5, 1 / 3), (1.0, 0.2)])
def test_zb_h1_bubble_equals_qi_et_al(p, m_over_p, backward, share):
    """ZB-H1: (p - 1)(T_F + T_B - T_W) over m (T_F + T_B + T_W) when T_W <= min(T_F, T_B)."""
    m = m_over_p * p
    t_f, t_b, t_w = 1.0, backward * (1 - share), backward * share
    t = pipeline.simulate("zb-h1", p, m, forward_s=t_f, backward_s=backward,
                          weight_grad_share=share)
    want = (p - 1) * (t_f + t_b - t_w) / (m * (t_f + t_b + t_w))
    assert t.bubble_fraction == pytest.approx(want, abs=1e-12)
    assert t.bubble_closed_form == pytest.approx(want, abs=1e-12)


def test_zb_h1_has_a_third_of_1f1bs_bubble_with_equal_passes():
    """Qi et al.: with T_F = T_B = T_W the bubble drops from 3(p - 1) T_F to (p - 1) T_F."""
    one = pipeline.simulate("1f1b", 8, 32, forward_s=1.0, backward_s=2.0)
    zb = pipeline.simulate("zb-h1", 8, 32, forward_s=1.0, backward_s=2.0)
    assert one.bubble_s == pytest.approx(3 * 7 * 1.0)
    assert zb.bubble_s == pytest.approx(7 * 1.0)


def test_megatron_figure_examples():
    """Narayanan et al. Figs. 3-4 (p = 4, m = 8): 1F1B bubble 3/8, interleaved (v = 2) 3/16."""
    assert pipeline.simulate("1f1b", 4, 8).bubble_fraction == pytest.approx(3 / 8)
    assert pipeline.simulate("interleaved", 4, 8, 2).bubble_fraction == pytest.approx(3 / 16)
    assert pipeline.bubble_fraction("1f1b", 4, 8) == 3 / 8
    assert pipeline.bubble_fraction("interleaved", 4, 8, 2) == 3 / 16


@pytest.mark.parametrize(("p", "m"), [(2, 1), (4, 4), (4, 16), (8, 3)])
def test_gpipe_idle_share_of_total_time(p, m):
    """GPipe Sec. 2.3 states the bubble as a share of the whole: (K - 1)/(M + K - 1)."""
    t = pipeline.simulate("gpipe", p, m)
    assert np.allclose(t.idle_fraction, (p - 1) / (m + p - 1))


def test_gpipe_with_uneven_stages_and_sends():
    """All-forward-then-all-backward is a flow shop of identical jobs: each phase takes
    the sum of its stage times plus (m - 1) times the slowest, and each of the 2 (p - 1)
    hops adds its send once: sum f + (m-1) max f + sum b + (m-1) max b + 2 (p-1) t."""
    f = np.array([1.0, 3.0, 2.0, 1.5])
    b = np.array([2.5, 4.0, 5.0, 3.0])
    p, m, send = 4, 6, 0.25
    t = pipeline.simulate("gpipe", p, m, forward_s=f, backward_s=b, transfer_s=send)
    want = f.sum() + (m - 1) * f.max() + b.sum() + (m - 1) * b.max() + 2 * (p - 1) * send
    assert t.makespan_s == pytest.approx(want)
    assert t.ideal_s == pytest.approx(m * (f + b).max())


@pytest.mark.parametrize("p", [2, 3, 4, 5, 8])
@pytest.mark.parametrize("send", [0.01, 0.3, 2.0])
def test_1f1b_pays_sends_on_every_round_trip(p, send):
    """1F1B keeps p micro-batches in flight; each round trip takes p (t_f + t_b) + 2 (p - 1) t,
    so (Little's law) p more micro-batches cost exactly that much more time."""
    for m in (p, 2 * p + 1):
        a = pipeline.simulate("1f1b", p, m, forward_s=1.0, transfer_s=send).makespan_s
        b = pipeline.simulate("1f1b", p, m + p, forward_s=1.0, transfer_s=send).makespan_s
        assert b - a == pytest.approx(p * 3.0 + 2 * (p - 1) * send)
        assert pipeline.one_f_one_b_period_s(p, 1.0, transfer_s=send) * p == \
            pytest.approx(b - a)


@pytest.mark.parametrize("schedule", pipeline.SCHEDULES)
def test_sends_never_shorten_an_iteration(schedule):
    v = 2 if schedule == "interleaved" else 1
    spans = [pipeline.simulate(schedule, 4, 8, v, transfer_s=s).makespan_s
             for s in (0.0, 0.05, 0.2, 1.0)]
    assert spans == sorted(spans) and spans[-1] > spans[0]


# =========================================================================== activations
@pytest.mark.parametrize(("p", "m"), [(4, 4), (4, 12), (8, 8), (8, 33)])
def test_1f1b_stage_i_holds_p_minus_i(p, m):
    t = pipeline.simulate("1f1b", p, m)
    assert list(t.peak_in_flight) == [p - i for i in range(p)]
    assert list(pipeline.in_flight_closed_form("1f1b", p, m)) == [p - i for i in range(p)]


@pytest.mark.parametrize(("p", "m"), [(4, 2), (4, 12), (8, 5)])
def test_gpipe_holds_every_micro_batch(p, m):
    assert list(pipeline.simulate("gpipe", p, m).peak_in_flight) == [m] * p


@pytest.mark.parametrize(("p", "m", "v"), [(4, 8, 2), (4, 16, 4), (8, 16, 3), (2, 8, 2)])
def test_interleaved_first_stage_holds_korthikanti_amount(p, m, v):
    """Korthikanti et al. Sec. 4.2.3: the first stage holds p (1 + (p - 1)/(p v)) micro-batches."""
    t = pipeline.simulate("interleaved", p, m, v)
    assert t.peak_in_flight_mb[0] == pytest.approx(p * (1 + (p - 1) / (p * v)))
    assert np.allclose(t.peak_in_flight_mb, pipeline.in_flight_closed_form("interleaved", p, m, v))


@pytest.mark.parametrize(("p", "m"), [(4, 4), (4, 9), (8, 16)])
def test_zb_h1_never_holds_more_than_1f1b(p, m):
    zb = pipeline.simulate("zb-h1", p, m)
    assert zb.peak_in_flight.max() == pipeline.simulate("1f1b", p, m).peak_in_flight.max() == p


@pytest.mark.parametrize(("schedule", "p", "m", "v"), GRID[::7], ids=map(_ids, GRID[::7]))
def test_in_flight_closed_form_matches_simulation(schedule, p, m, v):
    t = pipeline.simulate(schedule, p, m, v)
    assert np.allclose(t.peak_in_flight_mb, pipeline.in_flight_closed_form(schedule, p, m, v))


def test_activation_memory_per_stage_uses_korthikanti_per_layer():
    """1F1B's first stage holds p micro-batches of l/p layers: all l layers' worth, as
    memory.training_memory assumes; GPipe holds m micro-batches on every stage."""
    kw = dict(micro_batch=1, seq_len=2048, tp=8, sp=True, recompute="selective")
    one = pipeline.simulate("1f1b", 8, 16)
    per_stage = pipeline.activation_bytes_per_stage(one, "gpt3-175b", **kw)
    layer = memory.activation_bytes_per_layer("gpt3-175b", 1, 2048, 8, True, "selective")
    assert per_stage[0] == pytest.approx(96 * layer)
    assert per_stage[0] == pytest.approx(memory.training_memory(
        "gpt3-175b", pp=8, **kw).activations)
    assert np.allclose(per_stage, [(8 - i) * 12 * layer for i in range(8)])
    gpipe = pipeline.activation_bytes_per_stage(pipeline.simulate("gpipe", 8, 16),
                                                "gpt3-175b", **kw)
    assert np.allclose(gpipe, 16 * 12 * layer)


# =========================================================================== rules of a pipeline
CASES = [("gpipe", 4, 6, 1), ("1f1b", 4, 6, 1), ("1f1b", 5, 3, 1), ("interleaved", 4, 8, 2),
         ("interleaved", 3, 6, 3), ("zb-h1", 4, 7, 1), ("zb-h1", 1, 3, 1), ("1f1b", 1, 4, 1)]


@pytest.fixture(params=CASES, ids=map(_ids, CASES))
def uneven(request):
    """A timeline with uneven stages and a send time, so no rule holds by symmetry."""
    schedule, p, m, v = request.param
    rng = np.random.default_rng(sum(map(ord, schedule)) + 10 * p + m)
    return pipeline.simulate(schedule, p, m, v, forward_s=rng.uniform(0.5, 2.0, p),
                             backward_s=rng.uniform(1.0, 4.0, p), transfer_s=0.3,
                             weight_grad_share=0.4)


def test_every_pass_appears_exactly_once(uneven):
    t = uneven
    keys = _index(t)
    n_kinds = 3 if t.schedule == "zb-h1" else 2
    assert len(keys) == t.n_tasks == n_kinds * t.v * t.m * t.p
    stage = t.chunk.astype(int) * t.p + t.device
    for kind in range(n_kinds):
        sel = t.kind == kind
        assert sorted(zip(stage[sel].tolist(), t.micro_batch[sel].tolist(), strict=True)) == \
            [(s, j) for s in range(t.v * t.p) for j in range(t.m)]


def test_no_device_runs_two_passes_at_once(uneven):
    t = uneven
    for d in range(t.p):
        sl = t.tasks_of(d)
        starts, ends = t.start_s[sl], t.end_s[sl]
        assert np.all(ends > starts)
        assert np.all(starts[1:] >= ends[:-1] - 1e-12)
        assert np.all(t.device[sl] == d)


def test_passes_wait_for_their_inputs_and_no_longer(uneven):
    """F(j) after F(j) of the previous stage + send; B(j) after B(j) of the next stage + send
    (the last stage: after its own F(j)); W(j) after B(j); F before B on every stage. And
    every pass starts exactly when its device and its input are both ready."""
    t = uneven
    at = _index(t)
    n_stages, send = t.v * t.p, t.transfer_s if t.p > 1 else 0.0
    stage = t.chunk.astype(int) * t.p + t.device
    for i in range(t.n_tasks):
        kind, s, j = int(t.kind[i]), int(stage[i]), int(t.micro_batch[i])
        if kind == F:
            ready = t.end_s[at[F, s - 1, j]] + send if s > 0 else 0.0
        elif kind == B:
            ready = (t.end_s[at[B, s + 1, j]] + send if s < n_stages - 1
                     else t.end_s[at[F, s, j]])
            assert t.start_s[i] >= t.end_s[at[F, s, j]]
        else:
            ready = t.end_s[at[B, s, j]]
        first = i == t.tasks_of(int(t.device[i])).start
        free = 0.0 if first else t.end_s[i - 1]
        assert t.start_s[i] >= ready - 1e-12
        assert t.start_s[i] == pytest.approx(max(free, ready), abs=1e-12)


def test_timeline_matches_a_plain_event_loop(uneven):
    """The vectorised rounds give the same times as a one-pass-at-a-time reference loop."""
    t = uneven
    at = _index(t)
    n_stages, send = t.v * t.p, t.transfer_s if t.p > 1 else 0.0
    stage = (t.chunk.astype(int) * t.p + t.device).tolist()
    dur = (t.end_s - t.start_s).tolist()
    end: dict[int, float] = {}
    nxt = {d: t.tasks_of(d).start for d in range(t.p)}
    while len(end) < t.n_tasks:
        progressed = False
        for d in range(t.p):
            i = nxt[d]
            if i == t.tasks_of(d).stop:
                continue
            kind, s, j = int(t.kind[i]), stage[i], int(t.micro_batch[i])
            if kind == F:
                dep, lag = (at[F, s - 1, j], send) if s > 0 else (None, 0.0)
            elif kind == B:
                dep, lag = (at[B, s + 1, j], send) if s < n_stages - 1 else (at[F, s, j], 0.0)
            else:
                dep, lag = at[B, s, j], 0.0
            if dep is not None and dep not in end:
                continue
            free = end[i - 1] if i > t.tasks_of(d).start else 0.0
            end[i] = max(free, end[dep] + lag if dep is not None else 0.0) + dur[i]
            nxt[d] += 1
            progressed = True
        assert progressed, "the reference loop deadlocked"
    assert np.allclose([end[i] for i in range(t.n_tasks)], t.end_s)


def test_task_arrays_are_compact_and_read_only():
    t = pipeline.simulate("interleaved", 4, 8, 2)
    for name in ("device", "kind", "micro_batch", "chunk", "start_s", "end_s"):
        array = getattr(t, name)
        assert isinstance(array, np.ndarray) and array.shape == (t.n_tasks,)
        assert not array.flags.writeable
    assert t.kind.dtype == np.int8


def test_one_stage_is_just_sequential_work():
    t = pipeline.simulate("1f1b", 1, 5, forward_s=2.0, backward_s=3.0, transfer_s=9.0)
    assert t.makespan_s == t.ideal_s == 25.0 and t.bubble_fraction == 0.0


# =========================================================================== traffic and time
def test_p2p_bytes_is_bsh_per_boundary():
    """Narayanan et al. Sec. 3.2: b s h values per micro-batch per boundary; 16-bit values.
    GPT-3 (h = 12288, s = 2048): 50,331,648 bytes; scatter/gather (Sec. 4.1) sends 1/t."""
    assert pipeline.p2p_bytes("gpt3-175b", 1) == 2 * 2048 * 12288 == 50_331_648
    assert pipeline.p2p_bytes("gpt3-175b", 4, 1024) == 4 * 1024 * 12288 * 2
    assert pipeline.p2p_bytes("gpt3-175b", 1, tp=8, scatter_gather=True) == 50_331_648 / 8
    assert pipeline.p2p_bytes("gpt3-175b", 1, tp=8) == 50_331_648
    assert pipeline.p2p_seconds(50e6, 25.0) == pytest.approx(2e-3)
    assert pipeline.p2p_seconds(0, 25.0, latency_s=5e-6) == 5e-6


@pytest.mark.parametrize(("schedule", "p", "m", "v"), [("1f1b", 4, 8, 1), ("interleaved", 4, 8, 3),
                                                 ("gpipe", 1, 2, 1)])
def test_sends_per_micro_batch_counts_the_simulated_hops(schedule, p, m, v):
    """Every pass whose input comes from another GPU is one message."""
    t = pipeline.simulate(schedule, p, m, v, transfer_s=1.0)
    at = _index(t)
    stage = t.chunk.astype(int) * t.p + t.device
    hops = sum(1 for k, s, j in zip(t.kind.tolist(), stage.tolist(), t.micro_batch.tolist(),
                                    strict=True)
               if (k == F and s > 0) or (k == B and s < t.v * t.p - 1))
    assert len(at) == t.n_tasks
    assert hops == m * pipeline.sends_per_micro_batch(p, v) == m * 2 * (v * p - 1)


def test_stage_forward_time_agrees_with_model_flops():
    """A third of the model FLOPs without recomputation (Korthikanti et al. 2022, App. A:
    72 B s l h^2 (...)) over p t GPUs at the achieved rate; PaLM's count differs from it by
    under 1 % for GPT-3."""
    p, tp, rate = 8, 8, 150.0
    got = pipeline.stage_forward_s("gpt3-175b", 1, p, tp, achieved_tflops=rate)
    eq3 = compute.megatron_iteration_flops("gpt3-175b", 1, recompute=False) / 3
    assert got == pytest.approx(eq3 / (p * tp * rate * 1e12), rel=0.01)
    assert math.isclose(pipeline.stage_forward_s("gpt3-175b", 2, p, tp, achieved_tflops=rate),
                        2 * got)


# =========================================================================== bad input
@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda: pipeline.simulate("1F1B"), r"schedule must be one of .*did you mean '1f1b'"),
        (lambda: pipeline.simulate("1f1b", p=0), r"p must be a whole number >= 1, got 0"),
        (lambda: pipeline.simulate("1f1b", m=0), r"m must be a whole number >= 1, got 0"),
        (lambda: pipeline.simulate("interleaved", 4, 8, v=0),
         r"v must be a whole number >= 1, got 0"),
        (lambda: pipeline.simulate("1f1b", 4, 8, v=2),
         r"v=2 model chunks per device needs schedule 'interleaved'"),
        (lambda: pipeline.simulate("interleaved", 4, 6, 2),
         r"m=6 must be a multiple of p=4 for the interleaved schedule .*try m=4 or m=8"),
        (lambda: pipeline.simulate("interleaved", 4, 3, 2), r"m=3 must be .* try m=4$"),
        (lambda: pipeline.simulate(forward_s=0), r"forward_s must be a finite number > 0, got 0"),
        (lambda: pipeline.simulate(p=2, forward_s=[1.0, -1.0]),
         r"forward_s\[1\] must be a finite number > 0, got -1.0"),
        (lambda: pipeline.simulate(p=3, backward_s=[1.0, 2.0]),
         r"backward_s must be one number or 3 numbers \(one per stage\), got 2"),
        (lambda: pipeline.simulate(transfer_s=-0.1),
         r"transfer_s must be a finite number >= 0, got -0.1"),
        (lambda: pipeline.simulate("zb-h1", weight_grad_share=1.0),
         r"weight_grad_share must be strictly between 0 and 1, got 1.0"),
        (lambda: pipeline.simulate(p=5, n_layers=96), r"p=5 must divide n_layers=96"),
        (lambda: pipeline.simulate("interleaved", 8, 8, 5, n_layers=96),
         r"v=5 must divide layers per stage=12; allowed: 1, 2, 3, 4, 6, 12"),
        (lambda: pipeline.bubble_fraction("gpipe", 4, 8, 3), r"v=3 model chunks"),
        (lambda: pipeline.activation_bytes_per_stage(pipeline.simulate(p=5), "gpt3-175b"),
         r"pp=5 must divide n_layers=96"),
        (lambda: pipeline.p2p_bytes("gpt3-175b", 0), r"micro_batch must be a whole number"),
        (lambda: pipeline.p2p_seconds(1e6, 0), r"link_gbytes_s must be a finite number > 0"),
        (lambda: pipeline.stage_forward_s("gpt3-175b", 1, 8, achieved_tflops=-1),
         r"achieved_tflops must be a finite number > 0"),
        (lambda: pipeline.simulate().tasks_of(4), r"device must be a whole number from 0 to 3"),
    ],
)
def test_bad_input_names_parameter_value_and_allowed(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


# =========================================================================== utilisation
def test_utilisation_is_m_over_m_plus_p_minus_1():
    """GPipe's idle share (p-1)/(m+p-1) (Huang et al. 2019, Sec. 2.3), complemented."""
    for p in (2, 4, 8, 16):
        for m in (1, 4, 9, 64):
            assert pipeline.utilisation("1f1b", p, m) == pytest.approx(m / (m + p - 1))
            assert pipeline.utilisation("interleaved", p, m * p, 2) == pytest.approx(
                2 * m * p / (2 * m * p + p - 1))
            t = pipeline.simulate("1f1b", p, m)
            assert t.ideal_s / t.makespan_s == pytest.approx(m / (m + p - 1))


def test_ninety_percent_needs_nine_times_p_minus_one_micro_batches():
    """The claim that micro-batches and 1F1B give > 90 % utilisation, in numbers."""
    for p in (2, 4, 8, 12, 16, 64):
        m = pipeline.micro_batches_for_utilisation(0.9, p)
        assert m == 9 * (p - 1)
        assert pipeline.utilisation("1f1b", p, m) >= 0.9 - 1e-12
        assert pipeline.utilisation("1f1b", p, m - 1) < 0.9
    assert pipeline.micro_batches_for_utilisation(0.9, 1) == 1
    # interleaving with v chunks divides the need by v, rounded up to a multiple of p
    m4 = pipeline.micro_batches_for_utilisation(0.9, 8, v=4)
    assert m4 % 8 == 0 and pipeline.utilisation("interleaved", 8, m4, 4) >= 0.9
    assert pipeline.utilisation("interleaved", 8, m4 - 8, 4) < 0.9
    with pytest.raises(ValueError, match="target must be"):
        pipeline.micro_batches_for_utilisation(1.0, 8)


@pytest.mark.parametrize(("p", "m"), [(4, 8), (4, 2), (3, 9), (8, 16)])
def test_zb_h1_in_flight_closed_form_matches_simulation(p, m):
    """ZB-H1 (Qi et al. 2023) delays the weight-gradient passes: every stage holds
    min(p, m) micro-batches at its peak, in the simulation as in the closed form."""
    t = pipeline.simulate("zb-h1", p, m)
    assert np.array_equal(t.peak_in_flight_mb, pipeline.in_flight_closed_form("zb-h1", p, m))
    assert np.array_equal(t.peak_in_flight_mb, np.full(p, float(min(p, m))))


def test_defaults_and_pass_through_by_hand():
    """One chunk per device by default: 2(p - 1) sends per micro-batch, 24 of GPT-3's 96
    layers per stage on 4 stages. A stage's activations under 1F1B (4, 8) with flash
    attention at s = 4096: (4 - i) micro-batches of 24 layers of 34sbh (no score term)."""
    assert pipeline.sends_per_micro_batch(4) == 6
    assert pipeline.layer_assignment(96, 4).device.tolist() == [i // 24 for i in range(96)]
    t = pipeline.simulate("1f1b", 4, 8)
    got = pipeline.activation_bytes_per_stage(t, "gpt3-175b", 1, 4096, flash_attention=True)
    np.testing.assert_allclose(got, [(4 - i) * 24 * 34 * 4096 * 12288 for i in range(4)],
                               rtol=1e-12)


def test_gpipe_runs_backward_passes_last_in_first_back():
    """GPipe (Huang et al. 2019): after all forwards, each stage takes the backward passes in
    reverse order, the last micro-batch first."""
    t = pipeline.simulate("gpipe", 3, 4)
    for device in range(3):
        sel = (t.device == device) & (t.kind == B)
        assert t.micro_batch[sel][np.argsort(t.start_s[sel])].tolist() == [3, 2, 1, 0]


def test_stage_costs_by_hand_with_their_defaults():
    """One sequence of GPT-3 (s = 2048, h = 12288) sends b·s·h 16-bit values between stages:
    50,331,648 bytes. A stage's forward pass: a third of PaLM's 6N + 12lhs per token, over p
    stages, at 150 TFLOP/s and tp = 1 by default; s = 4096 when asked. 1F1B without sends
    costs t_f + 2 t_f per micro-batch."""
    assert pipeline.p2p_bytes("gpt3-175b") == 2048 * 12288 * 2
    n = memory.param_count("gpt3-175b")
    for s in (2048, 4096):
        want = (2 * n + 4 * 96 * 12288 * s) * s / 8 / 150e12
        got = pipeline.stage_forward_s("gpt3-175b", 1, 8, seq_len=None if s == 2048 else s)
        assert got == pytest.approx(want, rel=1e-12)
    assert pipeline.one_f_one_b_period_s(4, 1.0) == 3.0


def test_stage_activations_by_default_are_one_sequence_without_flash_attention():
    """Korthikanti Table 2's first row, sbh(34 + 5as/h), for one sequence of GPT-3 on each of
    the 24 layers of a stage, times the micro-batches 1F1B (4 stages, 8 micro-batches) holds."""
    s, h, a = 2048, 12288, 96
    layer = s * h * (34 + 5 * a * s / h)
    got = pipeline.activation_bytes_per_stage(pipeline.simulate("1f1b", 4, 8), "gpt3-175b")
    np.testing.assert_allclose(got, [(4 - i) * 24 * layer for i in range(4)], rtol=1e-12)


def test_simulate_defaults_are_1f1b_over_4_stages_and_8_micro_batches():
    """With its defaults (1F1B, p = 4, m = 8, v = 1, t_f = 1 s, t_b = 2 t_f, free sends) one
    iteration is (m + p - 1)(t_f + t_b) = 11 × 3 = 33 s of 2 v m p = 64 passes: Narayanan
    et al. 2021 Sec. 2.2.1's bubble (p - 1)/m on top of the ideal m (t_f + t_b)."""
    t = pipeline.simulate()
    assert (t.schedule, t.p, t.m, t.v) == ("1f1b", 4, 8, 1)
    assert t.n_tasks == 64
    assert t.makespan_s == pytest.approx(33.0, rel=1e-12)


def test_zb_h1_bubble_with_its_default_weight_gradient_share():
    """ZB-H1's bubble (Qi et al. 2023 Sec. 3.1), (p - 1)(T_F + T_B - T_W) / (m T), with the
    default split of the backward pass in halves: T_F = 1, T_B = T_W = 1 (a backward of 2),
    p = 4, m = 8: 3 × 1 / (8 × 3) = 1/8."""
    assert pipeline.bubble_fraction("zb-h1", 4, 8) == pytest.approx(1 / 8, rel=1e-12)
    assert pipeline.bubble_fraction("zb-h1", 4, 8, forward_s=2.0) == pytest.approx(1 / 8,
                                                                                 rel=1e-12)


def test_zb_h1_bubble_is_never_negative():
    """When the weight-gradient passes are longer than the forward and input-gradient passes
    together (T_W = 9 > T_F + T_B = 1 + 1), they fill the whole cool-down: the closed form's
    idle time is 0, not negative; just below that balance it is small and positive."""
    assert pipeline.bubble_fraction("zb-h1", 4, 8, forward_s=1.0, backward_s=10.0,
                                    weight_grad_share=0.9) == 0.0
    # T_F = 1, T_B = 2, T_W = 8: 1 + 2 - 8 < 0 again
    assert pipeline.bubble_fraction("zb-h1", 4, 8, forward_s=1.0, backward_s=10.0,
                                    weight_grad_share=0.8) == 0.0
    # T_F = 1, T_B = 0.6, T_W = 1.4: (p - 1)(1 + 0.6 - 1.4) / (m × 3) = 3 × 0.2 / 24
    assert pipeline.bubble_fraction("zb-h1", 4, 8, forward_s=1.0, backward_s=2.0,
                                    weight_grad_share=0.7) == pytest.approx(0.6 / 24, rel=1e-9)


def _zb_h1_reference_order(p: int, m: int, d: int) -> list[tuple[int, int]]:
    """ZB-H1's order on device ``d`` (Qi et al. 2023 Sec. 3.1, Fig. 3), written out as a plain
    loop: 1F1B's min(p - d - 1, m) warm-up forwards; then at step t the next forward (if any
    is left), B(t), and the weight-gradient pass W(t - d) of the backward d steps earlier;
    the W passes still owed at the end, in micro-batch order."""
    warmup = min(p - d - 1, m)
    order = [(F, j) for j in range(warmup)]
    for t in range(m):
        if t + warmup < m:
            order.append((F, t + warmup))
        order.append((B, t))
        if t - d >= 0:
            order.append((pipeline.W, t - d))
    order += [(pipeline.W, j) for j in range(max(m - d, 0), m)]
    return order


@pytest.mark.parametrize(("p", "m"), [(4, 8), (4, 3), (3, 5), (5, 5)])
def test_zb_h1_order_follows_the_paper_pass_by_pass(p, m):
    """Every device's sequence of F, B and W passes equals the reference loop's."""
    t = pipeline.simulate("zb-h1", p, m)
    for d in range(p):
        sl = t.tasks_of(d)
        got = list(zip(t.kind[sl].tolist(), t.micro_batch[sl].tolist(), strict=True))
        assert got == _zb_h1_reference_order(p, m, d)


@pytest.mark.parametrize(("schedule", "v"), [("gpipe", 1), ("1f1b", 1), ("interleaved", 2)])
def test_forward_passes_take_micro_batches_in_order(schedule, v):
    """Micro-batches enter the pipeline in order on every device: GPipe (Huang et al. 2019
    Fig. 2) and 1F1B run F0, F1, ... on each stage; the interleaved schedule (Narayanan et
    al. 2021 Fig. 4) runs chunk 0 of micro-batches 0..p-1, then chunk 1 of the same ones."""
    p, m = 3, 6
    t = pipeline.simulate(schedule, p, m, v)
    for d in range(p):
        sl = t.tasks_of(d)
        fwd = t.kind[sl] == F
        got = list(zip(t.chunk[sl][fwd].tolist(), t.micro_batch[sl][fwd].tolist(),
                       strict=True))
        if v == 1:
            assert got == [(0, j) for j in range(m)]
        else:
            assert got == [(c, g * p + j) for g in range(m // p) for c in range(v)
                           for j in range(p)]


def test_layer_assignment_arrays_are_read_only():
    """The assignment is a result, not a buffer: its arrays refuse writes, as a timeline's do."""
    a = pipeline.layer_assignment(8, 2, 2)
    for name in ("virtual_stage", "device", "chunk"):
        with pytest.raises(ValueError, match="read-only"):
            getattr(a, name)[0] = 1


def test_size_limit_counts_the_passes_to_simulate():
    """The refusal happens before any work and counts what the simulation would time: 1F1B
    runs 2 passes per micro-batch per device (2 × 8,192 × 128 = 2,097,152 > 2 × 10⁶ in all);
    ZB-H1 3 (3 × 66,667 + 1 stage = 200,002 rounds on one device > 200,000); one device of
    1F1B with 100,000 micro-batches needs 200,000 passes + 1 round."""
    hint = "; use fewer stages (p), micro-batches (m) or chunks (v); bubble_fraction()"
    with pytest.raises(ValueError, match=r"about 2\.1e\+06 elements.*" + re.escape(hint)):
        pipeline.simulate("1f1b", 128, 8192)
    # interleaved: 2 v m passes per device, 2 × 4 × 2,048 × 128 devices = 2,097,152
    with pytest.raises(ValueError, match=r"about 2\.1e\+06 elements"):
        pipeline.simulate("interleaved", 128, 2048, 4)
    with pytest.raises(ValueError, match=r"passes per device\) would need about 2e\+05"):
        pipeline.simulate("zb-h1", 1, 66_667)
    with pytest.raises(ValueError, match=r"passes per device\) would need about 2e\+05"):
        pipeline.simulate("1f1b", 1, 100_000)


def test_dualpipe_bubble_and_in_flight_by_hand():
    """DeepSeek-V3 report (arXiv 2412.19437) Table 2: DualPipe's bubble (p/2 - 1)(F&B + B - 3W)
    with B = 2F, W = F and F&B = F + B is (p/2 - 1)(3F + 2F - 3F) = (p/2 - 1) 2F: none for one
    or two stages, 3 s for p = 8 and F = 0.5 s, 14 s for p = 16 and F = 1 s; each GPU holds
    p + 1 micro-batches of activations."""
    np.testing.assert_allclose(pipeline.dualpipe_bubble_s(np.array([1, 2, 8, 16]),
                                                          np.array([1.0, 1.0, 0.5, 1.0])),
                               [0.0, 0.0, 3.0, 14.0], rtol=1e-12)
    np.testing.assert_allclose(pipeline.dualpipe_in_flight(np.array([2, 8, 16])),
                               [3.0, 9.0, 17.0], rtol=1e-12)


def test_layer_assignment_chunks_by_hand():
    """16 layers, p = 4, v = 2 (Narayanan et al. 2021 Fig. 4): eight blocks of two layers;
    blocks 0-3 are every device's chunk 0, blocks 4-7 its chunk 1."""
    a = pipeline.layer_assignment(16, 4, 2)
    assert a.virtual_stage.tolist() == [i // 2 for i in range(16)]
    assert a.chunk.tolist() == [0] * 8 + [1] * 8
    assert a.device.tolist() == [0, 0, 1, 1, 2, 2, 3, 3] * 2


def test_zb_h1_task_arrays_are_compact_too():
    """ZB-H1's orders are built apart from the other schedules': one byte per pass kind there
    as well, four per micro-batch index."""
    t = pipeline.simulate("zb-h1", 4, 8)
    assert t.kind.dtype == np.int8 and t.micro_batch.dtype == np.int32
    assert t.device.dtype == np.int32 and t.chunk.dtype == np.int16
    assert pipeline.simulate("interleaved", 4, 8, 2).chunk.dtype == np.int16


def test_backward_defaults_to_twice_the_forward_of_any_length():
    """With t_f = 0.5 s and no backward time given, t_b = 2 t_f = 1 s: 1F1B over p = 2 stages
    and m = 2 micro-batches takes (m + p - 1)(t_f + t_b) = 3 × 1.5 = 4.5 s. ZB-H1's closed
    form, kept on the timeline, uses the forward time given: T_F = 2, T_B = T_W = 2 gives
    (p - 1)(T_F + T_B - T_W) / (m (T_F + 2 T_B)) = 3 × 2 / (8 × 6) = 1/8 for p = 4, m = 8."""
    assert pipeline.simulate("1f1b", 2, 2, forward_s=0.5).makespan_s == pytest.approx(4.5,
                                                                                   rel=1e-12)
    t = pipeline.simulate("zb-h1", 4, 8, forward_s=2.0)
    assert t.bubble_closed_form == pytest.approx(1 / 8, rel=1e-12)
