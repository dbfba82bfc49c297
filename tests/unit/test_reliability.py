"""scaleout.reliability against published figures, closed forms and its own Monte Carlo."""

import inspect
import itertools
import math
import re

import numpy as np
import pytest
from scaleout import catalog, memory, reliability, units
from scaleout.catalog import DATA_DIR

MIN, HOUR, DAY = 60.0, 3600.0, 86400.0
LLAMA3_HOURS = 54 * 24  # the 54-day snapshot of arXiv 2407.21783 Sec. 3.3.4


# =========================================================================== data and rates
def test_llama3_table5_counts_add_up_and_shares_match_the_print():
    rows = reliability.failures("llama3-405b")
    assert len(rows) == 18 and sum(f.value for f in rows) == 419
    # every printed share equals count/419 to its printed digit, except the faulty-GPU row
    off = reliability.published_share_mismatches("llama3-405b")
    assert list(off) == ["faulty GPU"] and off["faulty GPU"] == pytest.approx(148 / 419)
    gpu_rows = [f.value for f in rows if f.part in ("GPU", "GPU memory")]
    assert sum(gpu_rows) / 419 == pytest.approx(0.640, abs=5e-4)  # the paper prints 58.7%


def test_rates_are_derived_from_the_printed_counts():
    assert reliability.unit_rate_per_hour("faulty GPU") == pytest.approx(
        148 / (16384 * LLAMA3_HOURS))
    assert reliability.unit_rate_per_hour("SSD") == pytest.approx(3 / (2048 * LLAMA3_HOURS))
    # per month and per 1000 node-days
    hours_per_month = 365.25 / 12 * 24
    assert reliability.unit_rate_per_hour("NIC-ToR link") == pytest.approx(
        0.00057 / hours_per_month)
    assert reliability.unit_rate_per_hour("RSC-1 node failure, all causes") == pytest.approx(
        6.50 / 1000 / 24)


def test_llama3_cluster_reproduces_one_failure_every_three_hours():
    per_day = reliability.failures_per_day(16384)
    assert per_day == pytest.approx(419 / 54)
    assert reliability.mtbf_h(16384) == pytest.approx(LLAMA3_HOURS / 419)  # 3.09 h
    parts = reliability.failure_breakdown_per_h(16384)
    assert sum(parts.values()) * LLAMA3_HOURS == pytest.approx(419)
    assert parts["GPU HBM3 memory"] * LLAMA3_HOURS == pytest.approx(72)


@pytest.mark.parametrize(("gpus", "hours", "half_digit"), [(16384, 1.8, 0.05),
                                                          (131072, 0.23, 0.005)])
def test_kokolis_projected_mttf(gpus, hours, half_digit):
    """Kokolis et al. project 1.8 h at 16,384 GPUs and 0.23 h at 131,072 (RSC-1 rate): equal
    at the printed precision (half a unit of the last digit printed), and exactly the hand
    figure from RSC-1's 6.5 node failures per 1,000 node-days on 8-GPU nodes."""
    mtbf = reliability.mtbf_h(gpus, "meta-rsc1")
    assert mtbf == pytest.approx(hours, abs=half_digit)
    assert mtbf == pytest.approx(24 / (gpus / 8 * 6.5 / 1000), rel=1e-12)


def test_mtbf_falls_as_one_over_n():
    n = np.array([16, 64, 1024, 16384, 131072])
    mtbf = reliability.mtbf_h(n)
    assert np.allclose(mtbf * n, mtbf[0] * n[0])
    # also for rows counted per link and per switch (HPN), and for several studies together
    both = reliability.mtbf_h(n, ["llama3-405b", "alibaba-hpn"], links_per_gpu=2)
    assert np.allclose(both * n, both[0] * n[0]) and np.all(both < mtbf)


def test_mtbf_with_network_rows_counted_per_link_and_per_switch():
    """Llama 3's 419 interruptions in 54 days on 16,384 GPUs plus Alibaba HPN's network rows
    (Qian et al. 2024, Sec. 2.3): 0.057 % of NIC-ToR links and 0.051 % of ToR switches fail
    per month (730.5 h). Dual-homed NICs give 2 links per GPU, 16 GPUs share a ToR: by hand
    0.32330 + 0.02557 + 0.00072 failures per hour, 2.86 h between failures (counting the
    link row per GPU instead of per link would give 2.97 h)."""
    n, month_h = 16384, 365.25 / 12 * 24
    llama3_per_h = 419 / (54 * 24)
    hpn_links_per_h = 2 * n * 0.00057 / month_h
    hpn_tor_per_h = n / 16 * 0.00051 / month_h
    both = reliability.mtbf_h(n, ["llama3-405b", "alibaba-hpn"], links_per_gpu=2,
                              gpus_per_switch=16)
    assert both == pytest.approx(1 / (llama3_per_h + hpn_links_per_h + hpn_tor_per_h), rel=1e-9)
    assert both == pytest.approx(2.8605, abs=5e-5)
    single = reliability.mtbf_h(n, ["llama3-405b", "alibaba-hpn"], links_per_gpu=1)
    assert single == pytest.approx(1 / (llama3_per_h + hpn_links_per_h / 2 + hpn_tor_per_h),
                                   rel=1e-9)


def test_inventory_counts_whole_nodes_and_switches():
    inv = reliability.inventory([8, 9, 16384], gpus_per_node=8, gpus_per_switch=16)
    assert inv.nodes.tolist() == [1, 2, 2048] and inv.switches.tolist() == [1, 1, 1024]
    assert reliability.inventory(100, links_per_gpu=2).links == 200


def test_figures_carry_si_values():
    assert reliability.figure("llama3-storage-sustained").si == 2e12
    assert reliability.figure("kokolis-mttf-1024-gpus").si == pytest.approx(7.9 * HOUR)
    assert reliability.figure("megascale-detect-and-diagnose").si == 600
    assert all(f.source for f in reliability.figures())


def test_idle_gpu_hours_of_a_stall():
    assert reliability.idle_gpu_hours(16384, 10 * MIN) == pytest.approx(16384 / 6)


# =========================================================================== checkpoints
def test_checkpoint_is_weights_plus_optimizer_of_the_memory_module():
    params = memory.param_count("llama3-405b")
    state = memory.model_state_breakdown(params, 0, 1, "mixed-adam")
    assert reliability.checkpoint_bytes("llama3-405b") == state.weights + state.optimizer
    assert reliability.checkpoint_bytes(params) == pytest.approx(14 * params)
    assert reliability.checkpoint_bytes(1e9, "fp32-adam") == pytest.approx(12e9)
    assert reliability.checkpoint_bytes(1e9, optimizer=False) == pytest.approx(2e9)


@pytest.mark.parametrize("recipe", ["mixed-adam", "megatron-bf16", "mixed-adam-8bit"])
def test_checkpoint_shards_equal_memory_model_state(recipe):
    params, n, tp, pp = memory.param_count("llama3-70b"), 1024, 8, 4
    dp = n // (tp * pp)
    sharded = reliability.checkpoint_plan("llama3-70b", n, tp=tp, pp=pp, storage_gbytes_s=100,
                                          recipe=recipe)
    zero3 = memory.model_state_breakdown(params / (tp * pp), 3, dp, recipe)
    assert sharded.writers == n
    assert sharded.per_writer_bytes == pytest.approx(zero3.weights + zero3.optimizer)
    assert sharded.per_writer_bytes * n == pytest.approx(sharded.total_bytes)
    replica = reliability.checkpoint_plan("llama3-70b", n, tp=tp, pp=pp, storage_gbytes_s=100,
                                          layout="replica", recipe=recipe)
    rank = memory.model_state_breakdown(params / (tp * pp), 0, 1, recipe)
    assert replica.writers == tp * pp
    assert replica.per_writer_bytes == pytest.approx(rank.weights + rank.optimizer)


def test_write_time_is_the_slower_of_storage_and_one_writer():
    total = reliability.checkpoint_bytes("llama3-405b")
    args = dict(storage_gbytes_s=2000, tp=8, pp=16, writer_gbytes_s=50)
    sharded = reliability.checkpoint_plan("llama3-405b", 16384, **args)
    rank0 = reliability.checkpoint_plan("llama3-405b", 16384, layout="rank0", **args)
    assert sharded.write_s == pytest.approx(total / 2000e9)  # storage-bound
    assert rank0.write_s == pytest.approx(total / 50e9)  # one 50 GB/s writer
    assert sharded.blocking_s == sharded.write_s == sharded.restore_s
    slow_read = reliability.checkpoint_plan("llama3-405b", 16384, read_gbytes_s=500, **args)
    assert slow_read.restore_s == pytest.approx(total / 500e9)
    # a network rate in Gb/s must be converted: 400 Gb/s is 50 GB/s
    assert units.gbps_to_gbytes_s(400) == args["writer_gbytes_s"]


def test_asynchronous_checkpoint_blocks_only_for_the_snapshot():
    plan = reliability.checkpoint_plan("llama3-405b", 16384, tp=8, pp=16, storage_gbytes_s=2000,
                                       asynchronous=True, snapshot_gbytes_s=64)
    assert plan.blocking_s == plan.snapshot_s == pytest.approx(plan.per_writer_bytes / 64e9)
    assert plan.blocking_s < plan.write_s


# =========================================================================== intervals
def test_young_formula():
    # delta = 5 min, M = 24 h: sqrt(2 x 5 x 1440) = 120 min exactly
    assert reliability.young_interval_s(5 * MIN, DAY) == pytest.approx(120 * MIN)
    assert reliability.young_interval_s(2.0, 3600.0) == pytest.approx(120.0)


DALY = catalog.published("daly2006_figs")


@pytest.mark.parametrize("case", DALY["case"], ids=lambda c: f"Fig. {c['figure']}")
def test_daly_figures_3_to_5(case):
    """Daly 2006, Figs. 3-5: delta = 5 min gives tau_opt = 117, 57 and 9.1 min as printed."""
    tau = reliability.daly_interval_s(DALY["dump_minutes"] * MIN, case["mtbf_minutes"] * MIN)
    assert round(tau / MIN, case["printed_decimals"]) == case["tau_opt_minutes"]


def test_daly_reduces_to_young_for_small_delta_over_m():
    m = 1e6
    gaps = [abs(reliability.daly_interval_s(d, m) / reliability.young_interval_s(d, m) - 1)
            for d in (1e-2, 1.0, 100.0)]
    assert gaps[0] < 1e-4 and gaps[0] < gaps[1] < gaps[2]
    # and beyond delta = 2M Daly says: checkpoint every M
    assert reliability.daly_interval_s(3.0, 1.0) == 1.0


def test_lambert_w0():
    z = np.array([-1 / math.e, -0.3, -1e-3, 0.0, 0.5, math.e, 100.0])
    w = np.asarray(reliability.lambert_w0(z))
    assert np.allclose(w * np.exp(w), z, rtol=1e-12, atol=1e-15)
    assert w[0] == -1 and w[3] == 0 and w[5] == pytest.approx(1.0)


@pytest.mark.parametrize(("delta_s", "mtbf_s"), [(5 * MIN, DAY), (60.0, 3 * HOUR),
                                                 (5 * MIN, 15 * MIN)])
def test_exact_optimum_maximises_goodput_and_daly_is_closer_than_young(delta_s, mtbf_s):
    best = reliability.exact_optimal_interval_s(delta_s, mtbf_s)
    grid = best * np.linspace(0.9, 1.1, 2001)
    g = np.asarray(reliability.goodput(grid, delta_s, mtbf_s, 10 * MIN))
    assert grid[np.argmax(g)] == pytest.approx(best, rel=2e-4)
    daly = reliability.daly_interval_s(delta_s, mtbf_s)
    young = reliability.young_interval_s(delta_s, mtbf_s)
    assert abs(daly - best) < abs(young - best)


def test_first_order_goodput_and_its_optimum():
    delta, m, r = 10.0, 1e6, 100.0
    young = reliability.young_interval_s(delta, m)
    grid = young * np.linspace(0.5, 2, 3001)
    g1 = np.asarray(reliability.goodput_first_order(grid, delta, m, r))
    assert grid[np.argmax(g1)] == pytest.approx(young, rel=1e-3)
    # Young's terms are the first order of Daly's exact model: they agree to second order
    exact = reliability.goodput(young, delta, m, r)
    assert exact == pytest.approx(reliability.goodput_first_order(young, delta, m, r), abs=1e-5)


def test_segment_wall_time_closed_form():
    tau, d, m, r = 600.0, 30.0, 7200.0, 300.0
    assert reliability.segment_wall_time_s(tau, d, m, r) == pytest.approx(
        m * math.exp(r / m) * (math.exp((tau + d) / m) - 1))
    # without failures (M -> infinity) a segment takes tau + delta
    assert reliability.segment_wall_time_s(tau, d, 1e15, r) == pytest.approx(tau + d)


def test_lost_work_tends_to_half_a_segment():
    assert reliability.expected_lost_work_s(100.0, 10.0, 1e9) == pytest.approx(55.0, rel=1e-6)
    assert reliability.expected_lost_work_s(3600.0, 60.0, 3600.0) < 1830.0


@pytest.mark.parametrize(("interval_s", "delta_s"), [(HOUR, 5 * MIN), (100 * HOUR, HOUR)])
def test_daly_expected_run_time_by_hand(interval_s, delta_s):
    """Daly 2006 Eq. 13: T = M e^(R/M) (e^((tau + delta)/M) - 1) W / tau, with the checkpoint
    in the exponent; x = (tau + delta)/M = 0.47 and 33.7 (past the switch to the log form)."""
    w, m, r = 10 * DAY, 3 * HOUR, 10 * MIN
    hand = m * math.exp(r / m) * math.expm1((interval_s + delta_s) / m) * w / interval_s
    got = reliability.expected_run_time_s(w, interval_s, delta_s, m, r)
    assert got == pytest.approx(hand, rel=1e-12)
    assert reliability.log10_expected_run_time_s(w, interval_s, delta_s, m, r) == \
        pytest.approx(math.log10(hand), rel=1e-12)


def test_no_checkpoints_anti_pattern():
    m, r, work = 3 * HOUR, 10 * MIN, 12 * HOUR
    assert reliability.expected_run_time_s(work, work, 0.0, m, r) == pytest.approx(
        m * math.exp(r / m) * math.expm1(work / m))
    assert reliability.log10_expected_run_time_s(work, work, 0.0, m, r) == pytest.approx(
        math.log10(m * math.exp(r / m) * math.expm1(work / m)))
    # 30 days on 16,384 GPUs without a checkpoint: ~10^105 s; 180 days: finite only as a log
    m16k = reliability.mtbf_h(16384) * HOUR
    log_30d = math.log10(m16k) + (r + 30 * DAY) / m16k / math.log(10)  # e^x - 1 ~ e^x
    assert reliability.log10_expected_run_time_s(30 * DAY, 30 * DAY, 0.0, m16k, r) == \
        pytest.approx(log_30d)
    assert math.isinf(reliability.expected_run_time_s(180 * DAY, 180 * DAY, 0.0, m16k, r))
    assert reliability.log10_expected_run_time_s(180 * DAY, 180 * DAY, 0.0, m16k, r) > 600


# =========================================================================== recovery options
def test_restart_times_by_option():
    kw = dict(detect_s=600, restore_s=3, init_s=30, replace_s=4 * HOUR)
    assert reliability.restart_time_s("restart", **kw) == 633 + 4 * HOUR
    assert reliability.restart_time_s("spares", **kw) == reliability.restart_time_s(
        "elastic", **kw) == 633


def test_elastic_capacity_limits_and_first_order():
    tau, d, m, r = 600.0, 10.0, 3 * HOUR, 60.0
    assert reliability.elastic_capacity(tau, d, m, r, repair_s=0.0, dp=64) == 1.0
    # short segments: kept compute sees about M/M + T/M replicas out, i.e. ~T/M (+ a bit);
    # the first-order share 8/64 of replicas out (24 h of repair / 3 h between failures, over
    # 64 replicas) is what is checked, so rel=0.02 leaves room for the higher-order terms
    cap = reliability.elastic_capacity(tau, d, m, r, repair_s=24 * HOUR, dp=64)
    assert 1 - cap == pytest.approx(8 / 64, rel=0.02)
    big = reliability.elastic_capacity(tau, d, m, r, repair_s=24 * HOUR, dp=64_000)
    assert 1 - big == pytest.approx((1 - cap) / 1000)


def test_spares_needed_is_a_poisson_quantile():
    rate_per_h, repair_s, risk = 0.3, 48 * HOUR, 1e-3
    a = rate_per_h * 48
    s = reliability.spares_needed(rate_per_h, repair_s, risk)

    def tail(k):  # P(Poisson(a) > k)
        return 1 - sum(math.exp(-a) * a**j / math.factorial(j) for j in range(k + 1))

    assert tail(s) <= risk < tail(s - 1)
    assert reliability.spares_needed(0.0, repair_s) == 0


def test_compare_recovery():
    m = reliability.mtbf_h(16384) * HOUR
    res = reliability.compare_recovery(
        300, 3.0, m, detect_s=600, restore_s=3, init_s=30, replace_s=4 * HOUR,
        repair_s=48 * HOUR, n_gpus=16384, dp=128, spare_gpus=256)
    assert res["spares"].goodput == pytest.approx(reliability.goodput(300, 3.0, m, 633))
    assert res["spares"].per_owned_gpu == pytest.approx(res["spares"].goodput * 16384 / 16640)
    assert res["restart"].goodput < res["elastic"].goodput < res["spares"].goodput
    assert res["elastic"].capacity == reliability.elastic_capacity(
        300, 3.0, m, 633, repair_s=48 * HOUR, dp=128)


# =========================================================================== Monte Carlo
CASES = {
    "16k GPUs, Daly interval": dict(interval_s=250.0, delta_s=2.84, restart_s=633.0),
    "hourly, slow restart": dict(interval_s=HOUR, delta_s=60.0, restart_s=30 * MIN),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_monte_carlo_mean_matches_the_analytic_goodput(case, seed):
    """Stated tolerance: |mean - exact finite-horizon mean| <= 4 standard errors; the
    long-run (Daly) goodput is within (L + R)/H more (start without restart, cut at the end)."""
    m = reliability.mtbf_h(16384) * HOUR
    c = CASES[case]
    sim = reliability.simulate(90 * DAY, c["interval_s"], c["delta_s"], m, c["restart_s"],
                               reps=1000, seed=seed)
    assert sim.goodput.shape == (1000,) and sim.stderr < 1e-3
    assert abs(sim.error) <= 4 * sim.stderr == sim.tolerance
    edge = (c["interval_s"] + c["delta_s"] + c["restart_s"]) / (90 * DAY)
    assert sim.analytic == reliability.goodput(c["interval_s"], c["delta_s"], m, c["restart_s"])
    assert abs(sim.expected - sim.analytic) <= edge
    assert abs(sim.mean - sim.analytic) <= sim.tolerance + edge
    # about 90 days x 7.76 failures a day
    assert sim.failures.mean() == pytest.approx(90 * DAY / m, rel=0.01)


@pytest.mark.parametrize("seed", [1, 2])
def test_monte_carlo_elastic_matches_the_analytic_capacity(seed):
    m = reliability.mtbf_h(16384) * HOUR
    sim = reliability.simulate(90 * DAY, HOUR, 60.0, m, 633.0, reps=1000, seed=seed, dp=128,
                               repair_s=48 * HOUR)
    cap = reliability.elastic_capacity(HOUR, 60.0, m, 633.0, repair_s=48 * HOUR, dp=128)
    assert cap < 0.9  # ~15.5 of 128 replicas out on average
    assert sim.analytic == pytest.approx(reliability.goodput(HOUR, 60.0, m, 633.0) * cap)
    assert abs(sim.error) <= sim.tolerance


def test_finite_horizon_expectation_tends_to_the_long_run_goodput():
    args = (900.0, 30.0, 2 * HOUR, 300.0)
    longrun = reliability.goodput(*args)
    gaps = [abs(reliability.expected_goodput_finite(h, *args) - longrun)
            for h in (DAY, 10 * DAY, 100 * DAY)]
    assert gaps[0] > gaps[1] > gaps[2] and gaps[2] < 1e-4


def test_monte_carlo_is_deterministic_for_a_seed():
    m = 3 * HOUR
    a = reliability.simulate(10 * DAY, HOUR, 60.0, m, 600.0, reps=50, seed=7)
    b = reliability.simulate(10 * DAY, HOUR, 60.0, m, 600.0, reps=50, seed=7)
    c = reliability.simulate(10 * DAY, HOUR, 60.0, m, 600.0, reps=50, seed=8)
    assert np.array_equal(a.goodput, b.goodput) and np.array_equal(a.failures, b.failures)
    assert not np.array_equal(a.goodput, c.goodput)


def test_timeline_is_one_repetition_of_the_simulation():
    m = 3 * HOUR
    tl = reliability.simulate_timeline(5 * DAY, HOUR, 60.0, m, 600.0, seed=4)
    sim = reliability.simulate(5 * DAY, HOUR, 60.0, m, 600.0, reps=1, seed=4)
    assert tl.total_s("compute") == pytest.approx(sim.kept_s[0])
    assert len(tl.failures_s) == sim.failures[0]
    # the bars tile the run: no gaps, no overlaps, from 0 to the horizon
    order = np.argsort(tl.start_s)
    assert tl.start_s[order][0] == 0 and tl.end_s[order][-1] == pytest.approx(5 * DAY)
    assert np.allclose(tl.start_s[order][1:], tl.end_s[order][:-1])
    assert set(tl.kind) <= {"compute", "checkpoint", "lost", "restart", "unfinished"}


def _timeline_by_hand(failures, horizon, tau, delta, restart):
    """A plain loop over the failure times: after each failure a restart, then whole
    (compute, checkpoint) segments while they fit before the next failure, the rest lost (or
    unfinished at the horizon). Zero-length bars are left out."""
    bars, edges = [], [0.0, *failures, horizon]
    for i, (start, end) in enumerate(itertools.pairwise(edges)):
        t = start
        if i > 0:
            bars.append(("restart", start, min(start + restart, end)))
            t = start + restart
        while t + tau + delta <= end:
            bars += [("compute", t, t + tau), ("checkpoint", t + tau, t + tau + delta)]
            t += tau + delta
        if t < end:
            bars.append(("unfinished" if end == horizon else "lost", t, end))
    return sorted((a, b, k) for k, a, b in bars if b > a)


@pytest.mark.parametrize(("seed", "restart_s"), [(4, 600.0), (11, 0.0), (2, 4 * HOUR)])
def test_timeline_bars_equal_a_plain_loop_over_its_failures(seed, restart_s):
    horizon, m = 2 * DAY, 3 * HOUR
    tl = reliability.simulate_timeline(horizon, HOUR, 60.0, m, restart_s, seed=seed)
    assert len(tl.failures_s) >= 3 and tl.horizon_s == horizon
    got = sorted(zip(tl.start_s.tolist(), tl.end_s.tolist(), tl.kind.tolist(), strict=True))
    want = _timeline_by_hand(tl.failures_s.tolist(), horizon, HOUR, 60.0, restart_s)
    assert [k for *_, k in got] == [k for *_, k in want]
    np.testing.assert_allclose([(a, b) for a, b, _ in got], [(a, b) for a, b, _ in want],
                               rtol=0, atol=1e-6)


def test_timeline_defaults_are_no_restart_time_and_seed_0():
    a = reliability.simulate_timeline(DAY, HOUR, 60.0, 3 * HOUR)
    b = reliability.simulate_timeline(DAY, HOUR, 60.0, 3 * HOUR, 0.0, seed=0)
    assert np.array_equal(a.failures_s, b.failures_s) and np.array_equal(a.end_s, b.end_s)
    assert "restart" not in set(a.kind)


# =========================================================================== stragglers
def test_expected_max_of_normals():
    assert reliability.expected_max_normal(1) == pytest.approx(0.0, abs=1e-9)
    assert reliability.expected_max_normal(2) == pytest.approx(1 / math.sqrt(math.pi), abs=1e-6)
    assert reliability.expected_max_normal(3) == pytest.approx(1.5 / math.sqrt(math.pi),
                                                               abs=1e-6)


def test_harmonic_numbers_and_the_maximum_of_exponentials():
    n = np.array([1, 2, 10, 64, 65, 1000, 16384])
    exact = [sum(1 / k for k in range(1, int(x) + 1)) for x in n]
    assert np.allclose(reliability.harmonic_number(n), exact, rtol=1e-12)
    assert reliability.expected_max_exponential(4, 2.0) == pytest.approx(2 * (1 + 1/2 + 1/3 + 1/4))


@pytest.mark.parametrize("dist", ["exponential", "normal"])
def test_synchronous_step_waits_for_the_slowest(dist):
    n, base, jitter = 512, 1.0, 0.03
    mc = reliability.straggler_step_mc(n, base, jitter, dist, steps=4000, seed=3)
    want = reliability.straggler_step_time_s(n, base, jitter, dist)
    assert abs(mc.mean() - want) <= 4 * mc.std(ddof=1) / math.sqrt(mc.size)
    grows = reliability.straggler_step_time_s(np.array([1, 8, 1024, 131072]), base, jitter, dist)
    assert np.all(np.diff(grows) > 0)


def test_one_slow_host_slows_everyone():
    assert reliability.slow_host_step_factor(1, 0.01, 0.1) == pytest.approx(1.001)
    assert reliability.slow_host_step_factor(10_000, 0.01, 0.1) == pytest.approx(1.1, abs=1e-12)
    # every host slow (p = 1): the step is 1 + slowdown; a share above 1 is no probability
    assert reliability.slow_host_step_factor(4, 1.0, 0.1) == pytest.approx(1.1, rel=1e-15)
    with pytest.raises(ValueError, match="slow_fraction must be a probability from 0 to 1"):
        reliability.slow_host_step_factor(4, 1.5, 0.1)


# =========================================================================== bad input
@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda: reliability.goodput(600, 10, 0), r"mtbf_s must be a finite number > 0, got 0"),
        (lambda: reliability.goodput(600, 10, -5), r"mtbf_s must be a finite number > 0, got -5"),
        (lambda: reliability.young_interval_s(10, 0), r"mtbf_s must be a finite number > 0"),
        (lambda: reliability.daly_interval_s(10, float("nan")), r"mtbf_s must be a finite"),
        (lambda: reliability.goodput(5, 10, 3600),
         r"interval_s = 5 s is shorter than the checkpoint write time delta_s \(10 s\)"),
        (lambda: reliability.goodput(60, 1, 3600, write_s=120),
         r"interval_s = 60 s is shorter than the checkpoint write time delta_s or write_s "
         r"\(120 s\)"),
        (lambda: reliability.goodput(np.array([100.0, 5.0]), 10, 3600),
         r"interval_s = 5 s is shorter"),
        (lambda: reliability.simulate(DAY, 5, 10, 3600), r"interval_s = 5 s is shorter"),
        (lambda: reliability.mtbf_h(0), r"n_gpus must be a whole number >= 1, got 0: an empty"),
        (lambda: reliability.failures_per_day([8, 0]),
         r"n_gpus must be a whole number >= 1, got 0.0: an empty"),
        (lambda: reliability.checkpoint_plan("llama3-8b", 0, storage_gbytes_s=10),
         r"an empty cluster"),
        (lambda: reliability.mtbf_h(64, "llama-3"), r"study_name must be one of .*did you mean"),
        (lambda: reliability.mtbf_h(64, []), r"study_name must name one or more studies"),
        (lambda: reliability.checkpoint_plan("llama3-8b", 64, storage_gbytes_s=0),
         r"storage_gbytes_s must be a finite number > 0, got 0"),
        (lambda: reliability.checkpoint_plan("llama3-8b", 64, storage_gbytes_s=10, tp=3),
         r"tp x pp = 3 must divide n_gpus = 64"),
        (lambda: reliability.checkpoint_plan("llama3-8b", 64, storage_gbytes_s=10,
                                             layout="shard"),
         r"layout must be one of .*did you mean 'sharded'"),
        (lambda: reliability.checkpoint_plan("llama3-8b", 64, storage_gbytes_s=10,
                                             asynchronous=True),
         r"snapshot_gbytes_s: an asynchronous checkpoint needs"),
        (lambda: reliability.checkpoint_bytes(-1), r"params must be a finite number > 0"),
        (lambda: reliability.restart_time_s("reboot", detect_s=1, restore_s=1, init_s=1),
         r"option must be one of 'restart', 'spares', 'elastic'"),
        (lambda: reliability.restart_time_s("spares", detect_s=-1, restore_s=1, init_s=1),
         r"detect_s must be a finite number >= 0, got -1"),
        (lambda: reliability.elastic_capacity(600, 10, HOUR, 60, repair_s=40 * HOUR, dp=64),
         r"on average 40 of dp = 64 replicas would be under repair"),
        (lambda: reliability.simulate(DAY, 600, 10, HOUR, reps=0), r"reps must be a whole number"),
        (lambda: reliability.simulate(DAY, 600, 10, HOUR, dp=8), r"needs both dp and repair_s"),
        (lambda: reliability.spares_needed(1.0, HOUR, risk=1.5), r"risk must be a probability"),
        (lambda: reliability.straggler_step_time_s(8, 1.0, 0.1, "gamma"),
         r"dist must be one of 'exponential', 'normal'"),
        (lambda: reliability.figure("llama3-storage"), r"figure must be one of .*did you mean"),
    ],
)
def test_bad_input_names_parameter_value_and_allowed(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


# =========================================================================== the data file
@pytest.fixture
def data_text():
    return (DATA_DIR / "failures.toml").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('value = 148\n', 'value = 147\n',
         "[[study]] 'llama3-405b': its rows add up to 418 events, field 'events_total' says 419"),
        ('counted_per = "gpu"\nvalue = 148', 'counted_per = "gpus"\nvalue = 148',
         "[[failure]] entry 1 ('faulty GPU'): field 'counted_per' must be one of 'gpu', "
         "'node', 'link', 'switch'; got 'gpus' (did you mean 'gpu'?)"),
        ('study = "llama3-405b"\npart = "GPU"\ncounted_per = "gpu"\nvalue = 148',
         'study = "llama-3"\npart = "GPU"\ncounted_per = "gpu"\nvalue = 148',
         "[[failure]] entry 1 ('faulty GPU'): field 'study' is 'llama-3', not a [[study]]"),
        ('value = 148\nmeaning = "events"', 'value = -148\nmeaning = "events"',
         "[[failure]] entry 1 ('faulty GPU'): field 'value' must be a finite number > 0, got -148"),
        ('value = 148\nmeaning = "events"', 'valeu = 148\nmeaning = "events"',
         "[[failure]] entry 1 ('faulty GPU'): unknown field 'valeu' (did you mean 'value'?)"),
        ('unit = "GB/s"\nsource = "Llama 3 (arXiv 2407.21783) Sec. 3.3.1, Storage: the',
         'unit = "TB/s"\nsource = "Llama 3 (arXiv 2407.21783) Sec. 3.3.1, Storage: the',
         "[[figure]] entry 1 ('llama3-storage-sustained'): field 'unit' must be one of"),
        ('gpu = "H100-SXM5-80GB"', 'gpu = "H1OO"',
         "[[study]] 'llama3-405b': field 'gpu' is 'H1OO', not a GPU of gpus.toml"),
        ('[[figure]]\nname = "llama3-storage-sustained"',
         '[[figures]]\nname = "llama3-storage-sustained"',
         "unknown table 'figures' (did you mean [[figure]]?)"),
    ],
)
def test_bad_data_names_file_entry_and_field(tmp_path, data_text, old, new, message):
    assert old in data_text, old
    path = tmp_path / "failures.toml"
    path.write_text(data_text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(ValueError) as err:
        reliability.load_failures(path)
    assert str(err.value).startswith("failures.toml: "), str(err.value)
    assert message in str(err.value), str(err.value)


def test_events_need_a_cluster_size(tmp_path, data_text):
    text = data_text.replace('gpus = 992\ngpus_per_node = 8\ndays = 60\n', 'gpus = 992\n', 1)
    path = tmp_path / "failures.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(
            "counting 'events' per node needs a study with gpus, days and gpus_per_node; "
            "study 'opt-175b' lacks days, gpus_per_node")):
        reliability.load_failures(path)


def test_loading_the_shipped_file_directly_gives_its_tables(data_dir):
    """load_failures() on data/failures.toml: the five studies, Llama 3's Table 5 rows adding
    up to its 419 interruptions, and the figures (the functions above read a cached copy)."""
    data = reliability.load_failures(data_dir / "failures.toml")
    assert list(data.studies) == ["llama3-405b", "meta-rsc1", "meta-rsc2", "opt-175b",
                                  "alibaba-hpn"]
    llama = [f.value for f in data.failures.values() if f.study == "llama3-405b"]
    assert sum(llama) == 419
    assert data.figures["llama3-storage-sustained"].si == 2e12


def test_harmonic_numbers_against_exact_sums():
    """H_n = 1 + 1/2 + ... + 1/n summed exactly (math.fsum), either side of the switch to the
    asymptotic series at n = 64; the series' first omitted term is below 1e-13 there."""
    for n in (1, 2, 63, 64, 65, 100, 1000, 12_345):
        assert reliability.harmonic_number(n) == pytest.approx(
            math.fsum(1 / k for k in range(1, n + 1)), rel=1e-13), n
    assert reliability.expected_max_exponential(1000) == pytest.approx(
        math.fsum(1 / k for k in range(1, 1001)), rel=1e-13)  # the default mean is 1


def test_straggler_without_jitter_keeps_the_shape_of_n():
    out = reliability.straggler_step_time_s(np.array([[8, 64], [512, 4096]]), 1.5, 0.0)
    np.testing.assert_array_equal(out, np.full((2, 2), 1.5))


def test_straggler_monte_carlo_is_the_max_of_each_steps_draws():
    """By default 2,000 steps from seed 0: each the base time times 1 + the largest of the
    n GPUs' exponential delays, drawn step after step from one generator."""
    draws = np.random.default_rng(0).exponential(0.05, (2000, 64))
    want = 1.5 * (1 + draws.max(axis=1))
    np.testing.assert_array_equal(reliability.straggler_step_mc(64, 1.5, 0.05), want)


# ------------------------------------------------------------------ bad numbers, by name
_GOOD = {"interval_s": 3600.0, "delta_s": 60.0, "mtbf_s": 10800.0, "restart_s": 600.0,
         "repair_s": 7200.0, "dp": 64, "horizon_s": 30 * DAY, "work_s": 10 * DAY,
         "n_gpus": 1024, "stall_s": 600.0, "n": 8, "mean": 1.0, "n_hosts": 100,
         "slow_fraction": 0.01, "slowdown": 0.1, "node_failures_per_h": 0.5, "risk": 1e-3,
         "base_s": 1.0, "jitter": 0.05, "option": "restart", "detect_s": 60.0,
         "restore_s": 120.0, "init_s": 180.0, "replace_s": 3600.0}
_CHECKED = {  # function: the parameters it must refuse by name when negative
    "daly_interval_s": ("delta_s", "mtbf_s"), "young_interval_s": ("delta_s", "mtbf_s"),
    "exact_optimal_interval_s": ("delta_s", "mtbf_s"),
    "elastic_capacity": ("mtbf_s", "restart_s", "repair_s"),
    "elastic_viable": ("mtbf_s", "repair_s"),
    "expected_goodput_finite": ("horizon_s", "mtbf_s", "restart_s"),
    "expected_lost_work_s": ("mtbf_s",), "expected_max_exponential": ("mean",),
    "expected_run_time_s": ("work_s",), "goodput_first_order": ("mtbf_s", "restart_s"),
    "idle_gpu_hours": ("stall_s",),
    "log10_expected_run_time_s": ("work_s", "mtbf_s", "restart_s"),
    "segment_wall_time_s": ("interval_s", "delta_s", "mtbf_s", "restart_s"),
    "slow_host_step_factor": ("slow_fraction", "slowdown"),
    "spares_needed": ("node_failures_per_h", "repair_s", "risk"),
    "straggler_step_mc": ("base_s", "jitter"), "straggler_step_time_s": ("base_s", "jitter"),
    "restart_time_s": ("detect_s", "restore_s", "init_s", "replace_s"),
}


@pytest.mark.parametrize("name", sorted(_CHECKED))
def test_a_negative_number_is_refused_naming_its_parameter(name):
    """Every duration, rate or share below zero is a ValueError that names the parameter
    (and, for a mean time between failures, says what one is)."""
    func = getattr(reliability, name)
    params = inspect.signature(func).parameters
    good = {p: _GOOD[p] for p in params if p in _GOOD}
    func(**good)  # the good values are accepted
    for bad in _CHECKED[name]:
        with pytest.raises(ValueError, match=rf"(^|\W){bad}\b") as exc:
            func(**{**good, bad: -1.0})
        if bad == "mtbf_s":
            assert str(exc.value).endswith("a mean time between failures is a positive duration")


def test_recovery_options_count_spares_only_where_they_are_kept():
    """1,024 GPUs with 16 idle spares: only the spares option pays for them, so its goodput
    per owned GPU is goodput x 1024/1040; restart and elastic own just the 1,024. Each option's
    restart time is its own sum (detect + wait + restore + init; spares and elastic skip the
    wait), and Daly's goodput at that restart time."""
    kw = dict(detect_s=60.0, restore_s=120.0, init_s=180.0, replace_s=3600.0,
              repair_s=4 * HOUR, n_gpus=1024, dp=64)
    out = reliability.compare_recovery(HOUR, 60.0, 3 * HOUR, spare_gpus=16, **kw)
    assert list(out) == ["restart", "spares", "elastic"]
    assert [r.option for r in out.values()] == list(out)
    assert [r.restart_s for r in out.values()] == [3960.0, 360.0, 360.0]
    assert [r.spare_gpus for r in out.values()] == [0, 16, 0]
    for option, result in out.items():
        assert result.goodput == pytest.approx(
            reliability.goodput(HOUR, 60.0, 3 * HOUR, result.restart_s) * result.capacity)
        share = 1024 / 1040 if option == "spares" else 1.0
        assert result.per_owned_gpu == pytest.approx(result.goodput * share, rel=1e-12)
    no_spares = reliability.compare_recovery(HOUR, 60.0, 3 * HOUR, **kw)["spares"]
    assert no_spares.spare_gpus == 0 and no_spares.per_owned_gpu == no_spares.goodput


def test_young_first_order_goodput_by_hand_without_a_restart_by_default():
    """1 - delta/tau - tau/(2M) - R/M: an hourly checkpoint of 60 s against a 10 h MTBF keeps
    1 - 1/60 - 1/20 = 0.9333...; a 10-minute restart takes another 1/60."""
    assert reliability.goodput_first_order(HOUR, 60.0, 10 * HOUR) == pytest.approx(
        1 - 1 / 60 - 1 / 20, rel=1e-15)
    assert reliability.goodput_first_order(HOUR, 60.0, 10 * HOUR, 10 * MIN) == pytest.approx(
        1 - 1 / 60 - 1 / 20 - 1 / 60, rel=1e-15)
    assert reliability.expected_goodput_finite(30 * DAY, HOUR, 60.0, 10 * HOUR) == \
        reliability.expected_goodput_finite(30 * DAY, HOUR, 60.0, 10 * HOUR, 0.0)


def _elastic_by_segments(tau, delta, m, restart, repair, dp):
    """The model of elastic_capacity summed segment by segment: segment s after a failure
    (compute from R + sL to R + sL + tau, L = tau + delta) is kept with probability
    e^{-(R + (s+1)L)/M}; while the failed replica is out (age a < T) the replicas out average
    1 + (T - a)/M; the mean over kept compute, over dp, is what is lost."""
    length, lost, kept = tau + delta, 0.0, 0.0
    for s in range(100_000):
        lo = restart + s * length
        weight = math.exp(-(restart + (s + 1) * length) / m)
        kept += weight * tau
        if lo < repair:
            hi = min(lo + tau, repair)
            lost += weight * ((hi - lo) * (1 + repair / m) - (hi**2 - lo**2) / (2 * m))
        if weight < 1e-300:
            break
    return 1 - lost / kept / dp


@pytest.mark.parametrize(("tau", "delta", "restart", "repair"), [
    (HOUR, 60.0, 600.0, 24 * HOUR), (HOUR, 10 * MIN, 0.0, 5 * HOUR),
    (4 * HOUR, 60.0, HOUR, 0.5 * HOUR)])
def test_elastic_capacity_by_segments(tau, delta, restart, repair):
    m, dp = 3 * HOUR, 64
    assert reliability.elastic_capacity(tau, delta, m, restart, repair_s=repair, dp=dp) == \
        pytest.approx(_elastic_by_segments(tau, delta, m, restart, repair, dp), rel=1e-12)


def test_elastic_shrink_needs_fewer_than_half_the_replicas_out():
    """repair_s / MTBF replicas out on average: 1 of dp = 2 is refused, 1 of dp = 3 is not."""
    with pytest.raises(ValueError, match="it must stay below dp / 2"):
        reliability.elastic_capacity(HOUR, 60.0, 3 * HOUR, 0.0, repair_s=3 * HOUR, dp=2)
    assert 0 < reliability.elastic_capacity(HOUR, 60.0, 3 * HOUR, 0.0, repair_s=3 * HOUR,
                                            dp=3) < 1


def test_lambert_w0_solves_w_e_to_the_w():
    """The principal branch: W(z) e^{W(z)} = z for z >= -1/e, W(-1/e) = -1, W(0) = 0,
    W(e) = 1, near the branch point too; anything else is refused."""
    z = np.array([-1 / math.e, -1 / math.e + 1e-12, -0.35, -0.2, 0.0, 0.5, 1.0, math.e, 10.0,
                  1e3, 1e9])
    w = reliability.lambert_w0(z)
    np.testing.assert_allclose(w * np.exp(w), z, rtol=1e-12, atol=1e-15)
    assert reliability.lambert_w0(-1 / math.e) == pytest.approx(-1.0, abs=1e-7)
    assert (reliability.lambert_w0(0.0), reliability.lambert_w0(math.e)) == (0.0, 1.0)
    for bad in (-0.37, float("nan"), float("inf"), "1"):
        with pytest.raises(ValueError):
            reliability.lambert_w0(bad)


@pytest.mark.parametrize("seed", [1, 4, 9])
def test_simulation_keeps_what_its_timeline_computes(seed):
    """One repetition of simulate() and simulate_timeline() with the same seed: the same
    failures, and the kept compute equals the timeline's compute bars, with a restart long
    enough (2 h) to matter after every failure. The defaults: no restart, 1,000 runs, seed 0."""
    args = (3 * DAY, HOUR, 5 * MIN, 3 * HOUR, 2 * HOUR)
    sim = reliability.simulate(*args, reps=1, seed=seed)
    tl = reliability.simulate_timeline(*args, seed=seed)
    assert sim.failures[0] == len(tl.failures_s) >= 5
    assert sim.kept_s[0] == pytest.approx(tl.total_s("compute"), rel=1e-12)
    default = reliability.simulate(3 * DAY, HOUR, 5 * MIN, 3 * HOUR)
    explicit = reliability.simulate(3 * DAY, HOUR, 5 * MIN, 3 * HOUR, 0.0, reps=1000, seed=0)
    assert default.goodput.shape == (1000,)
    assert np.array_equal(default.goodput, explicit.goodput)


def test_checkpoint_plan_by_hand_with_default_parallelism():
    """Llama 3 8B's 8,030,261,248 parameters, 14 bytes each (fp16 weights + fp32 Adam
    state) on 64 GPUs without model parallelism: 64 writers of 1/64 each; at 10 GB/s of
    storage the write takes 112.4 GB / 10 GB/s, reading back the same."""
    plan = reliability.checkpoint_plan("llama3-8b", 64, storage_gbytes_s=10)
    total = 14 * 8_030_261_248
    assert plan.total_bytes == total and plan.writers == 64
    assert plan.per_writer_bytes == pytest.approx(total / 64, rel=1e-15)
    assert plan.write_s == pytest.approx(total / 10e9, rel=1e-12)
    assert plan.restore_s == pytest.approx(total / 10e9, rel=1e-12)


@pytest.mark.parametrize(("hours", "segments"), [(10.5, 10), (10.0, 10), (2.0, 2)])
def test_finite_horizon_goodput_without_failures_counts_whole_segments(hours, segments):
    """With an MTBF of 300,000 years nothing fails: a run of H keeps the compute of the
    segments (59 min of work + 1 min of checkpoint) that end by H, so goodput is
    floor(H / L) x tau / H, to one part in 10^8."""
    horizon = hours * HOUR
    got = reliability.expected_goodput_finite(horizon, HOUR - 60, 60.0, 1e13)
    assert got == pytest.approx(segments * (HOUR - 60) / horizon, rel=1e-8)


def test_defaults_one_link_per_gpu_and_nodes_of_eight():
    """By default a GPU has one network link, 8 GPUs share a node and 16 a leaf switch. Llama
    3's Table 5 counts 46 of its 419 interruptions per node (host maintenance 32, SSD 3, power
    supply 3, chassis 2, IO board 2, CPU 2, memory 2): with 4-GPU nodes, twice the nodes fail
    those twice as often, 373 + 2 x 46 = 465 in 54 days, 1,296 h / 465 between failures."""
    inv = reliability.inventory(100)
    assert (inv.nodes, inv.switches, inv.links) == (13, 7, 100)
    n, month_h = 16384, 365.25 / 12 * 24
    one_link = 1 / (419 / 1296 + n * 0.00057 / month_h + n / 16 * 0.00051 / month_h)
    assert reliability.mtbf_h(n, ["llama3-405b", "alibaba-hpn"]) == pytest.approx(one_link,
                                                                                rel=1e-9)
    assert reliability.mtbf_h(n, gpus_per_node=4) == pytest.approx(1296 / 465, rel=1e-9)


# ================================================================ Monte Carlo, by a plain loop
def _kept_by_loop(starts, offsets, segments, tau, length, t):
    """Kept compute from 0 to ``t`` of one run, summed segment by segment: interval ``i``
    keeps work during the first ``tau`` of each of its ``segments[i]`` segments, which begin
    ``offsets[i]`` after its start, one every ``length``."""
    total = 0.0
    for s, o, n in zip(starts, offsets, segments, strict=True):
        for k in range(int(n)):
            a = s + o + k * length
            total += min(max(t - a, 0.0), tau)
    return total


def _intervals(fail, horizon, restart, length):
    """The intervals a run's failure times make: starts, restart offsets, whole segments."""
    starts = [0.0, *fail]
    ends = [*fail, horizon]
    offsets = [0.0] + [restart] * len(fail)
    segments = [max(e - s - o, 0.0) // length for s, e, o in zip(starts, ends, offsets,
                                                                  strict=True)]
    return starts, offsets, segments


@pytest.mark.parametrize("seed", [0, 3])
def test_cumulative_kept_compute_equals_a_plain_loop(seed):
    """K(t), the kept compute up to ``t`` that the elastic Monte Carlo integrates, against a
    segment-by-segment loop: rows with different numbers of failures (padded with inf), times
    before 0 and after the horizon, inside compute, inside checkpoints and inside restarts."""
    from scaleout.reliability.montecarlo import _cumulative_kept
    rng = np.random.default_rng(seed)
    horizon, tau, delta, restart = 50_000.0, 900.0, 100.0, 1_500.0
    length = tau + delta
    rows = [np.sort(rng.uniform(0, horizon, size=k)) for k in (0, 3, 9, 1)]
    cols = 1 + max(len(r) for r in rows)
    starts = np.full((len(rows), cols), np.inf)
    offsets = np.zeros_like(starts)
    segments = np.zeros_like(starts)
    for i, fail in enumerate(rows):
        s, o, n = _intervals(list(fail), horizon, restart, length)
        starts[i, :len(s)], offsets[i, :len(s)], segments[i, :len(s)] = s, o, n
    cum = _cumulative_kept(starts, offsets, segments, tau, length, horizon)
    t = np.concatenate([[-5.0, 0.0, 450.0, 950.0, horizon, horizon + 7_000.0],
                        rng.uniform(0, horizon, size=40)])
    got = cum(np.broadcast_to(t, (len(rows), t.size)))
    for i, fail in enumerate(rows):
        s, o, n = _intervals(list(fail), horizon, restart, length)
        want = [_kept_by_loop(s, o, n, tau, length, min(max(x, 0.0), horizon)) for x in t]
        assert got[i] == pytest.approx(want, rel=1e-12, abs=1e-9)
    # by hand: 450 s into the first segment, 450 s kept; at 950 s the segment's 900 s
    assert got[1, 2] == 450.0 and got[1, 3] == 900.0 and got[1, 0] == 0.0


def test_kept_compute_after_a_restart_by_hand():
    """``_kept_compute(v, n, tau, L)``: 2 whole segments of tau = 900 s in L = 1,000 s, then
    part of the third up to tau; never more than the n segments the interval has."""
    from scaleout.reliability.montecarlo import _kept_compute
    v = np.array([-10.0, 0.0, 500.0, 950.0, 2_300.0, 2_950.0, 9_999.0])
    got = _kept_compute(v, np.full(v.size, 3.0), 900.0, 1_000.0)
    assert list(got) == [0.0, 0.0, 500.0, 900.0, 2_100.0, 2_700.0, 2_700.0]
    assert list(_kept_compute(v, np.full(v.size, 2.0), 900.0, 1_000.0)) == [
        0.0, 0.0, 500.0, 900.0, 1_800.0, 1_800.0, 1_800.0]


@pytest.mark.parametrize(("seed", "repair_h", "dp"), [(0, 6.0, 4), (5, 30.0, 16)])
def test_elastic_simulation_equals_a_plain_loop_over_its_failures(seed, repair_h, dp):
    """simulate(dp=..., repair_s=...) per run against a loop over the same failure times
    (drawn as simulate draws them: the run's failures in [0, H), then those of the repair
    window before 0, mirrored): each failure at ``w`` takes one of ``dp`` replicas away for
    the repair, so the work kept in ``[w, w + repair]`` (clipped to ``[0, H]``) counts
    ``1/dp`` less. The failure count, the kept work, the goodput, the analytic and finite-
    horizon expectations and the edge term ``(M + T_repair)/(H dp)`` of the tolerance."""
    from scaleout.reliability.montecarlo import _failure_times
    horizon, tau, delta, m, restart = 4 * DAY, HOUR, 5 * MIN, 5 * HOUR, 20 * MIN
    repair, reps = repair_h * HOUR, 6
    sim = reliability.simulate(horizon, tau, delta, m, restart, reps=reps, seed=seed, dp=dp,
                               repair_s=repair)
    rng = np.random.default_rng(seed)
    fail = _failure_times(rng, reps, 0.0, horizon, m)
    pre = -_failure_times(rng, reps, 0.0, repair, m)
    length = tau + delta
    for i in range(reps):
        run = [x for x in fail[i] if np.isfinite(x)]
        s, o, n = _intervals(run, horizon, restart, length)
        kept = sum(n) * tau
        windows = [x for x in pre[i] if np.isfinite(x)] + run
        assert len(windows) >= 1
        lost = sum(_kept_by_loop(s, o, n, tau, length, min(w + repair, horizon))
                   - _kept_by_loop(s, o, n, tau, length, max(w, 0.0)) for w in windows)
        assert sim.failures[i] == len(run)
        assert sim.kept_s[i] == pytest.approx(kept - lost / dp, rel=1e-12)
        assert sim.goodput[i] == pytest.approx((kept - lost / dp) / horizon, rel=1e-12)
    cap = reliability.elastic_capacity(tau, delta, m, restart, repair_s=repair, dp=dp)
    assert sim.analytic == pytest.approx(reliability.goodput(tau, delta, m, restart) * cap,
                                         rel=1e-14)
    assert sim.expected == pytest.approx(
        reliability.expected_goodput_finite(horizon, tau, delta, m, restart) * cap, rel=1e-14)
    assert sim.edge == pytest.approx((m + repair) / (horizon * dp), rel=1e-14)
    assert sim.tolerance == pytest.approx(4 * sim.stderr + sim.edge, rel=1e-14)


def test_simulation_without_failures_keeps_whole_segments():
    """An MTBF of 300,000 years: no failure in 10.5 h, so every run keeps the 10 whole
    segments' 59 min of work (floor(10.5 h / 1 h) x 59 min), exactly; elastic or not."""
    horizon = 10.5 * HOUR
    plain = reliability.simulate(horizon, HOUR - 60, 60.0, 1e13, 300.0, reps=3)
    assert list(plain.kept_s) == [10 * (HOUR - 60)] * 3 and list(plain.failures) == [0] * 3
    assert plain.edge == 0.0 and plain.stderr < 1e-15
    shrink = reliability.simulate(horizon, HOUR - 60, 60.0, 1e13, 300.0, reps=3, dp=8,
                                  repair_s=HOUR)
    assert list(shrink.kept_s) == [10 * (HOUR - 60)] * 3


def test_checkpoint_plan_layouts_fields_and_floors_by_hand():
    """A 1e9-parameter model, 14 GB per checkpoint (10 GB weights-only is 2 GB: 2 bytes each,
    exactly). On 64 GPUs at 100 GB/s of storage without a writer limit the write takes
    14 GB / 100 GB/s = 0.14 s (nothing else bounds it) and blocks for that; rank 0 writes
    alone, a replica with the default tp = pp = 1 is one GPU; an asynchronous plan blocks for
    its snapshot, 14 GB / 64 over 2 GB/s of host copy."""
    assert reliability.checkpoint_bytes(1e9, optimizer=False) == 2e9
    plan = reliability.checkpoint_plan(1e9, 64, storage_gbytes_s=100)
    assert plan.write_s == pytest.approx(0.14, rel=1e-12) == plan.blocking_s == plan.restore_s
    assert plan.snapshot_s == 0.0 and plan.layout == "sharded" and plan.asynchronous is False
    rank0 = reliability.checkpoint_plan(1e9, 64, storage_gbytes_s=100, layout="rank0")
    assert rank0.writers == 1 and rank0.per_writer_bytes == 14e9 and rank0.layout == "rank0"
    replica = reliability.checkpoint_plan(1e9, 64, storage_gbytes_s=100, layout="replica")
    assert replica.writers == 1 and replica.per_writer_bytes == pytest.approx(14e9, rel=1e-15)
    slow = reliability.checkpoint_plan(1e9, 64, storage_gbytes_s=100, layout="replica",
                                       tp=2, pp=4, writer_gbytes_s=1.0)
    assert slow.writers == 8 and slow.write_s == pytest.approx(14e9 / 8 / 1e9, rel=1e-12)
    snap = reliability.checkpoint_plan(1e9, 64, storage_gbytes_s=100, asynchronous=True,
                                       snapshot_gbytes_s=2)
    assert snap.asynchronous is True
    assert snap.blocking_s == snap.snapshot_s == pytest.approx(14e9 / 64 / 2e9, rel=1e-12)


@pytest.mark.parametrize(("kw", "message"), [
    (dict(writer_gbytes_s=0), "writer_gbytes_s must be"),
    (dict(read_gbytes_s=-1), "read_gbytes_s must be"),
    (dict(asynchronous=True, snapshot_gbytes_s=0), "snapshot_gbytes_s must be"),
    (dict(tp=4, pp=32), "tp x pp = 128 must divide n_gpus = 64"),
    (dict(storage_gbytes_s=None), "storage_gbytes_s must be a finite number > 0, got None"),
    (dict(asynchronous=True), "snapshot_gbytes_s: an asynchronous checkpoint needs"),
])
def test_checkpoint_plan_names_a_bad_bandwidth_or_layout(kw, message):
    """Bad or missing bandwidths are named; the storage bandwidth is required, the others
    may be None (not limiting), except the snapshot's for an asynchronous checkpoint."""
    with pytest.raises(ValueError, match=re.escape(message)):
        reliability.checkpoint_plan(1e9, 64, **({"storage_gbytes_s": 100} | kw))


def _poisson_quantile(a, risk):
    """Smallest S with P(Poisson(a) > S) <= risk, summing the probabilities in logarithms
    one term at a time (exp(-a) alone underflows past a ~ 745)."""
    cdf, k = 0.0, 0
    while True:
        cdf += math.exp(k * math.log(a) - a - math.lgamma(k + 1))
        if 1 - cdf <= risk:
            return k
        k += 1


@pytest.mark.parametrize(("rate_per_h", "repair_h", "risk"), [
    (0.1, 3.0, 1e-9), (0.3, 48.0, 1e-3), (2.0, 100.0, 1e-6), (40.0, 50.0, 1e-9),
])
def test_spares_needed_far_into_the_tail(rate_per_h, repair_h, risk):
    """From 0.3 to 2,000 nodes under repair on average, down to a risk of 1e-9: the quantile
    lies about 6 standard deviations out, which the sum must reach. A risk of 1 (every
    failure may find no spare) is refused."""
    a = rate_per_h * repair_h
    assert reliability.spares_needed(rate_per_h, repair_h * HOUR, risk) == \
        _poisson_quantile(a, risk)
    with pytest.raises(ValueError, match=re.escape("risk must be a probability below 1, got 1.0")):
        reliability.spares_needed(rate_per_h, repair_h * HOUR, 1.0)


def test_exact_optimum_uses_dalys_expansion_only_below_one_part_in_a_billion():
    """Where delta/M < 1e-9 the exact optimum is Daly's expansion (the Lambert W form cancels
    there); at 1e-6 it is the Lambert W form, which differs from Daly's in the 13th digit but
    satisfies the optimality condition (tau/M - 1) e^(tau/M - 1) = -e^(-delta/M - 1). Arrays
    mixing both are handled element by element."""
    m = 1e7
    delta = np.array([1e-4, 1e-3, 10.0, 1e3])  # delta/M = 1e-11, 1e-10, 1e-6, 1e-4
    best = reliability.exact_optimal_interval_s(delta, m)
    daly = reliability.daly_interval_s(delta, m)
    assert best[0] == daly[0] and best[1] == daly[1]
    for d, tau in zip(delta[2:], best[2:], strict=True):
        x = tau / m - 1
        assert x * math.exp(x) == pytest.approx(-math.exp(-d / m - 1), rel=1e-14)
    assert best[2] != daly[2]
    assert reliability.exact_optimal_interval_s(1e-3, m) == daly[1]


def test_simulation_size_checks_count_failures_and_segments_by_hand():
    """The refusal before a simulation too big to hold: a horizon of 100 MTBFs draws room for
    100 + 6 sqrt(100) + 16 = 176 failures per run, 4 arrays of them: 30,000 runs are 21.1
    million elements, over the 20 million allowed. A horizon of 10^8 s in segments of 2 s
    is 5 x 10^7 segments. A timeline is one run: 10^7 MTBFs are refused as 1 run of about
    10^7 failures."""
    m = 1_000.0
    with pytest.raises(ValueError, match=re.escape(
            "reps=30,000 runs of 176 failures each (horizon_s / mtbf_s) would need about "
            "2.11e+07 elements")):
        reliability.simulate(100 * m, 5_000.0, 0.0, m, reps=30_000)
    with pytest.raises(ValueError, match=re.escape(  # a timeline is one run
            "reps=1 runs of 1e+07 failures each (horizon_s / mtbf_s) would need about "
            "4.01e+07 elements")):
        reliability.simulate_timeline(1e7 * m, 5_000.0, 0.0, m)
    with pytest.raises(ValueError, match=re.escape(
            "a run of 5e+07 segments (horizon_s / (interval_s + delta_s)) would need about")):
        reliability.simulate_timeline(1e8, 1.0, 1.0, 1e12)


def test_an_interval_may_equal_but_not_undercut_the_write_time():
    """interval_s = delta_s is allowed (the next checkpoint starts as the last ends); the first
    interval shorter than the write time is named, with the write time it undercuts."""
    m = 3 * HOUR
    assert reliability.goodput(60.0, 60.0, m) > 0
    assert reliability.goodput(90.0, 30.0, m, write_s=90.0) > 0
    with pytest.raises(ValueError, match=re.escape(
            "interval_s = 30 s is shorter than the checkpoint write time delta_s (60 s)")):
        reliability.goodput(np.array([100.0, 30.0, 20.0]), 60.0, m)
    with pytest.raises(ValueError, match=re.escape(
            "interval_s = 80 s is shorter than the checkpoint write time delta_s or write_s "
            "(150 s)")):
        reliability.goodput(np.array([200.0, 80.0]), 10.0, m, write_s=np.array([100.0, 150.0]))


@pytest.mark.parametrize("seed", [0, 7])
def test_timeline_draws_the_failures_simulate_draws(seed):
    """simulate_timeline's failures are the first row of simulate's draw for the same seed:
    Poisson times from 0 (not shifted), finite ones only."""
    from scaleout.reliability.montecarlo import _failure_times
    horizon, m = 2 * DAY, 2 * HOUR
    tl = reliability.simulate_timeline(horizon, HOUR, 60.0, m, 300.0, seed=seed)
    want = _failure_times(np.random.default_rng(seed), 1, 0.0, horizon, m)[0]
    assert np.array_equal(tl.failures_s, want[np.isfinite(want)])
    assert tl.horizon_s == horizon and len(tl.failures_s) >= 10


@pytest.mark.parametrize("x", [0.5, 29.0, 30.5, 45.0])
def test_log10_run_time_on_both_sides_of_the_stable_form(x):
    """log10 of (W/tau) M (e^x - 1), x = (tau + delta)/M, by math.expm1 (finite here), on both
    sides of x = 30 where the function switches to x + log(1 - e^-x); no restart by default."""
    m = 1_000.0
    tau = x * m
    want = math.log10(1.0 * m * math.expm1(x))
    assert reliability.log10_expected_run_time_s(tau, tau, 0.0, m) == pytest.approx(want,
                                                                                rel=1e-13)


def test_studies_are_the_file_order():
    assert [s.name for s in reliability.studies()] == reliability.study_names() == [
        "llama3-405b", "meta-rsc1", "meta-rsc2", "opt-175b", "alibaba-hpn"]


_SMALL_FAILURES = '''
[[study]]
name = "tiny"
title = "a made-up study"
source = "none"
gpus = 64
days = 10
events_total = 3

[[failure]]
name = "GPU fell off the bus"
study = "tiny"
part = "GPU"
counted_per = "gpu"
value = 3
meaning = "events"
source = "none"

[[figure]]
name = "a figure"
value = 1.0
unit = "s"
source = "none"
'''


def test_a_study_counted_per_gpu_needs_no_node_size(tmp_path):
    """A study without gpus_per_node loads when every row is counted per GPU (only rows
    counted per node need it): 3 events on 64 GPUs in 10 days."""
    path = tmp_path / "small.toml"
    path.write_text(_SMALL_FAILURES, encoding="utf-8")
    data = reliability.load_failures(path)
    assert list(data.studies) == ["tiny"] and data.studies["tiny"].gpus_per_node is None
    assert data.failures["GPU fell off the bus"].value == 3


def test_failure_file_missing_or_with_an_unrelated_table(tmp_path):
    """A missing file is named as the failure data file; a table like no known one gets no
    guess, just the three expected."""
    with pytest.raises(ValueError, match=re.escape("nowhere.toml: failure data file not found")):
        reliability.load_failures(tmp_path / "nowhere.toml")
    path = tmp_path / "odd.toml"
    path.write_text(_SMALL_FAILURES + "\n[[zzz]]\nq = 1\n", encoding="utf-8")
    with pytest.raises(ValueError) as err:
        reliability.load_failures(path)
    assert str(err.value) == ("odd.toml: unknown table 'zzz'; expected [[study]], [[failure]], "
                              "[[figure]]")


def test_elastic_capacity_with_sub_second_segments():
    """Segments shorter than a second (0.5 s of work, 0.1 s of checkpoint) and a 1-minute
    MTBF: the repair of 20 s spans about 32 segments after the 1 s restart, all of which the
    sum must reach (the segment-by-segment model as above)."""
    got = reliability.elastic_capacity(0.5, 0.1, 60.0, 1.0, repair_s=20.0, dp=8)
    assert got == pytest.approx(_elastic_by_segments(0.5, 0.1, 60.0, 1.0, 20.0, 8), rel=1e-12)
    assert got < 0.97


def test_simulation_with_sub_second_segments_equals_a_plain_loop():
    """Segments of 0.4 s of work and 0.1 s of checkpoint, a 3 s restart and a failure every
    20 s on average: many restarts are cut short by the next failure (no segment then), and
    every run's kept work is the whole segments of its intervals, counted by a loop."""
    from scaleout.reliability.montecarlo import _failure_times
    horizon, tau, delta, m, restart, reps = 600.0, 0.4, 0.1, 20.0, 3.0, 8
    sim = reliability.simulate(horizon, tau, delta, m, restart, reps=reps, seed=2)
    fail = _failure_times(np.random.default_rng(2), reps, 0.0, horizon, m)
    for i in range(reps):
        run = [x for x in fail[i] if np.isfinite(x)]
        _, _, n = _intervals(run, horizon, restart, tau + delta)
        assert sim.kept_s[i] == pytest.approx(sum(n) * tau, rel=1e-12)
        assert sim.failures[i] == len(run)
    assert sim.horizon_s == horizon


@pytest.mark.parametrize(("repair", "mtbf"), [(0.0, 50.0), (1.0, 2.0)])
def test_elastic_simulation_with_short_or_no_repairs(repair, mtbf):
    """A repair of 0 s loses nothing (capacity 1, the same runs as without elastic shrink);
    a repair of 1 s with a 2 s MTBF has failures in the second before the run that reach
    into it, counted by the plain loop over the same draws."""
    from scaleout.reliability.montecarlo import _failure_times
    horizon, tau, delta, restart, reps, dp = 60.0, 0.4, 0.1, 0.2, 6, 4
    sim = reliability.simulate(horizon, tau, delta, mtbf, restart, reps=reps, seed=1, dp=dp,
                               repair_s=repair)
    if repair == 0:
        plain = reliability.simulate(horizon, tau, delta, mtbf, restart, reps=reps, seed=1)
        assert np.array_equal(sim.kept_s, plain.kept_s) and sim.analytic == plain.analytic
        return
    rng = np.random.default_rng(1)
    fail = _failure_times(rng, reps, 0.0, horizon, mtbf)
    pre = -_failure_times(rng, reps, 0.0, repair, mtbf)
    assert np.isfinite(pre).any()
    length = tau + delta
    for i in range(reps):
        run = [x for x in fail[i] if np.isfinite(x)]
        s, o, n = _intervals(run, horizon, restart, length)
        windows = [x for x in pre[i] if np.isfinite(x)] + run
        lost = sum(_kept_by_loop(s, o, n, tau, length, min(w + repair, horizon))
                   - _kept_by_loop(s, o, n, tau, length, max(w, 0.0)) for w in windows)
        assert sim.kept_s[i] == pytest.approx(sum(n) * tau - lost / dp, rel=1e-12)


def test_a_study_with_a_total_but_no_rows_is_refused(tmp_path):
    """A study whose report counts 1 event but that has no rows in the file: its rows add up
    to 0, not 1."""
    extra = ('\n[[study]]\nname = "empty"\ntitle = "a made-up study"\nsource = "none"\n'
             'events_total = 1\n')
    path = tmp_path / "small.toml"
    path.write_text(_SMALL_FAILURES + extra, encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(
            "[[study]] 'empty': its rows add up to 0 events, field 'events_total' says 1")):
        reliability.load_failures(path)


def test_failures_per_day_passes_the_study_and_the_counts_on():
    """Per day is 24 x per hour for the study and inventory asked: Llama 3's rates with
    4-GPU nodes (465 failures in 1,296 h, by hand in the test of the defaults above), and
    two studies together; a step without jitter takes its base time at every size."""
    assert reliability.failures_per_day(16384, gpus_per_node=4) == pytest.approx(
        24 * 465 / 1296, rel=1e-9)
    both = ["llama3-405b", "alibaba-hpn"]
    assert reliability.failures_per_day(16384, both) == pytest.approx(
        24 / reliability.mtbf_h(16384, both), rel=1e-12)
    assert reliability.failures_per_day(16384, both) > reliability.failures_per_day(16384)
    steps = reliability.straggler_step_time_s(np.array([1, 8, 1024]), 2.0, 0.0)
    assert steps.shape == (3,) and list(steps) == [2.0, 2.0, 2.0]


def test_a_row_part_like_no_known_one_gets_no_guess(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text(_SMALL_FAILURES.replace('part = "GPU"', 'part = "qqqq"'), encoding="utf-8")
    with pytest.raises(ValueError) as err:
        reliability.load_failures(path)
    assert str(err.value).endswith("field 'part' must be one of " + ", ".join(
        map(repr, reliability.PARTS)) + "; got 'qqqq'"), str(err.value)


def test_daly_by_hand_and_its_cap_at_two_mtbfs():
    """Daly 2006, eq. 20: sqrt(2 delta M) [1 + sqrt(x)/3 + x/9] - delta with x = delta/(2M),
    for delta < 2M; from delta = 2M on the interval is M. delta = 5 min, M = 15 min:
    x = 1/6, sqrt(540,000 s^2) x 1.154598... - 300 s."""
    x = 300 / 1800
    want = math.sqrt(2 * 300 * 900) * (1 + math.sqrt(x) / 3 + x / 9) - 300
    assert reliability.daly_interval_s(300.0, 900.0) == pytest.approx(want, rel=1e-14)
    assert reliability.daly_interval_s(1800.0, 900.0) == 900.0
    assert reliability.daly_interval_s(2250.0, 900.0) == 900.0


def test_default_restart_and_replacement_are_zero():
    """Without a restart time goodput and run time are those of restart_s = 0; without a
    replacement wait a restart is detect + restore + init (30 + 600 + 120 s)."""
    args = (HOUR, 60.0, 3 * HOUR)
    assert reliability.goodput(*args) == reliability.goodput(*args, 0.0)
    assert reliability.expected_run_time_s(DAY, *args) == reliability.expected_run_time_s(
        DAY, *args, 0.0)
    assert reliability.restart_time_s("restart", detect_s=30.0, restore_s=600.0,
                                      init_s=120.0) == 750.0


def test_cluster_rate_passes_the_switch_size_on():
    """With 32 GPUs per leaf switch the cluster has half the switches: Llama 3's 419
    interruptions in 1,296 h plus the Alibaba HPN rates (per link 0.00057 and per switch
    0.00051 a month), 16,384 links and 512 switches."""
    n, month_h = 16384, 365.25 / 12 * 24
    want = 419 / 1296 + n * 0.00057 / month_h + n / 32 * 0.00051 / month_h
    both = ["llama3-405b", "alibaba-hpn"]
    assert reliability.cluster_failure_rate_per_h(n, both, gpus_per_switch=32) == \
        pytest.approx(want, rel=1e-9)
    parts = reliability.failure_breakdown_per_h(n, both)
    assert sum(float(v) for v in parts.values()) == pytest.approx(
        419 / 1296 + n * 0.00057 / month_h + n / 16 * 0.00051 / month_h, rel=1e-9)


def test_a_bad_write_time_is_named():
    with pytest.raises(ValueError, match=re.escape("write_s must be a finite number >= 0")):
        reliability.goodput(HOUR, 60.0, 3 * HOUR, write_s=-1.0)


# ================================================ types, the branch point, studies as objects
def test_lambert_w0_refuses_what_is_not_a_real_number():
    """W0 is a function of real z >= -1/e: booleans, complex numbers, objects, strings and
    bytes are refused by name (not read as 0 or 1, or by their real part). A z below -1/e by
    at most 1e-15 (the rounding of a computed -1/e) is the branch point, where W0 = -1; the
    next float below it is refused."""
    for bad in (True, np.array([True, False]), 0.5 + 0j, np.array([None]), [0.5, "x"], b"1"):
        with pytest.raises(ValueError, match="lambert_w0 needs numbers"):
            reliability.lambert_w0(bad)
    edge = -1 / math.e - 1e-15
    assert reliability.lambert_w0(edge) == -1.0
    with pytest.raises(ValueError, match=re.escape("lambert_w0 needs z >= -1/e")):
        reliability.lambert_w0(np.nextafter(edge, -1.0))


def test_one_number_in_gives_a_python_float_and_an_array_stays_an_array():
    """A scalar argument gives a plain ``float`` (not a numpy scalar or a 0-d array); an array
    of one element gives an array of one element. Llama 3 alone at its own size (16,384 GPUs,
    2,048 nodes) fails 419 times in 1,296 h; with Alibaba HPN's rows and the default inventory
    (one link per GPU, 16 GPUs per leaf switch) 16,384 links fail 0.00057 and 1,024 switches
    0.00051 times a month each. Daly's segment time at R = 0: M (e^{(tau+delta)/M} - 1)."""
    n, month_h = 16384, 365.25 / 12 * 24
    both = ["llama3-405b", "alibaba-hpn"]
    with_hpn = 419 / 1296 + n * 0.00057 / month_h + n / 16 * 0.00051 / month_h
    seg = 10800 * math.expm1(3660 / 10800)
    scalars = {
        "rate": (reliability.cluster_failure_rate_per_h(n), 419 / 1296),
        "rate, two studies": (reliability.cluster_failure_rate_per_h(n, both), with_hpn),
        "mtbf": (reliability.mtbf_h(n), 1296 / 419),
        "segment": (reliability.segment_wall_time_s(3600.0, 60.0, 10800.0), seg),
        "goodput": (reliability.goodput(3600.0, 60.0, 10800.0), 3600 / seg),
    }
    for what, (got, want) in scalars.items():
        assert type(got) is float, (what, type(got))
        assert got == pytest.approx(want, rel=1e-12), what
    arrays = {
        "rate": reliability.cluster_failure_rate_per_h(np.array([n])),
        "mtbf": reliability.mtbf_h(np.array([n])),
        "segment": reliability.segment_wall_time_s(np.array([3600.0]), 60.0, 10800.0),
        "goodput": reliability.goodput(np.array([3600.0]), 60.0, 10800.0),
    }
    for what, got in arrays.items():
        assert isinstance(got, np.ndarray) and got.shape == (1,), (what, got)
        assert float(got[0]) == pytest.approx(scalars[what][1], rel=1e-12), what


def test_segment_wall_time_with_and_without_a_restart_by_hand():
    """Daly 2006, the complete model: E = M e^{R/M} (e^{(tau+delta)/M} - 1). tau = 1 h,
    delta = 1 min, M = 3 h: 10,800 s x (e^{3,660/10,800} - 1) = 4,356.6 s without a restart
    (the default), e^{600/10,800} times that with a 10-minute one."""
    bare = 10800 * (math.exp(3660 / 10800) - 1)
    assert bare == pytest.approx(4356.6, abs=0.05)
    assert reliability.segment_wall_time_s(3600.0, 60.0, 10800.0) == pytest.approx(bare,
                                                                                  rel=1e-14)
    assert reliability.segment_wall_time_s(3600.0, 60.0, 10800.0, 600.0) == pytest.approx(
        bare * math.exp(600 / 10800), rel=1e-14)


def test_a_bad_mtbf_is_explained_and_other_bad_numbers_say_only_the_rule():
    """Every function that takes ``mtbf_s`` says what an MTBF is when it is not positive; a
    bad interval's message is the shared rule alone, with nothing appended."""
    hint = ": a mean time between failures is a positive duration"
    calls = {
        "segment_wall_time_s": lambda m: reliability.segment_wall_time_s(3600.0, 60.0, m),
        "goodput": lambda m: reliability.goodput(3600.0, 60.0, m),
        "exact_optimal_interval_s": lambda m: reliability.exact_optimal_interval_s(60.0, m),
        "simulate": lambda m: reliability.simulate(DAY, 3600.0, 60.0, m, reps=2),
        "simulate_timeline": lambda m: reliability.simulate_timeline(DAY, 3600.0, 60.0, m),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError) as err:
            call(0.0)
        assert str(err.value) == "mtbf_s must be a finite number > 0, got 0.0" + hint, name
    with pytest.raises(ValueError) as err:
        reliability.segment_wall_time_s(0.0, 60.0, 10800.0)
    assert str(err.value) == "interval_s must be a finite number > 0, got 0.0"


def test_a_study_may_be_passed_as_itself_and_counts_only_gpus_and_nodes():
    """A :class:`Study` object stands for its name, alone or in a list; a study counts its
    GPUs (Llama 3: 16,384) and nodes (16,384 / 8 = 2,048) and refuses any other unit, and a
    study without a GPU count (Alibaba HPN) has neither."""
    n = 16384
    llama = reliability.study("llama3-405b")
    assert reliability.cluster_failure_rate_per_h(n, llama) == pytest.approx(419 / 1296,
                                                                             rel=1e-12)
    both = [llama, "alibaba-hpn"]
    assert reliability.cluster_failure_rate_per_h(n, both) == pytest.approx(
        reliability.cluster_failure_rate_per_h(n, ["llama3-405b", "alibaba-hpn"]), rel=1e-12)
    assert (llama.units("gpu"), llama.units("node")) == (16384.0, 2048.0)
    for unit in ("link", "switch"):
        with pytest.raises(ValueError, match=f"does not say how many {unit}s it had"):
            llama.units(unit)
    hpn = reliability.study("alibaba-hpn")
    for unit in ("gpu", "node"):
        with pytest.raises(ValueError, match=f"does not say how many {unit}s it had"):
            hpn.units(unit)
