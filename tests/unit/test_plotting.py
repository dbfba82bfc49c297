"""scaleout.plotting's figures print numbers as people write them: no offsets, no exponents."""

from __future__ import annotations

import io

import numpy as np
import pytest
from matplotlib.colors import to_hex
from scaleout import plotting
from scaleout.congestion import IncastResult


def _drawn(fig) -> None:
    fig.savefig(io.BytesIO(), format="png")


def test_linear_axes_have_no_offset_and_no_exponent():
    fig, ax = plotting.new_figure()
    ax.plot([0, 1, 2], [0, 1.5e6, 3e6])
    _drawn(fig)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "1.5M" in labels and "3M" in labels
    assert ax.yaxis.get_offset_text().get_text() == ""  # no "1e6" above the axis
    assert not any("e" in label for label in labels)


def test_log_axes_read_as_numbers_and_years_stay_years():
    fig, ax = plotting.new_figure()
    ax.loglog([1, 10, 1e5], [1e-3, 1, 1e6])
    _drawn(fig)
    assert {"1", "100", "10k", "1M"} <= {t.get_text() for t in ax.get_yticklabels()}
    fig, ax = plotting.new_figure()
    ax.plot([2018, 2020, 2024], [1, 2, 3])
    ax.set_xticks([2018, 2020, 2024])
    _drawn(fig)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2018", "2020", "2024"]


def test_labels_set_by_hand_are_kept():
    fig, ax = plotting.new_figure()
    ax.barh([0, 1], [3e6, 4e6])
    ax.set_yticks([0, 1], ["one", "two"])
    _drawn(fig)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["one", "two"]


# ----------------------------------------------------------------- the notebooks' line figures
# Each helper draws what it is given: these tests hand it small arrays and read the axes back.

def _legend(ax) -> list[str]:
    legend = ax.get_legend()
    assert legend is not None, "no legend drawn"
    return [t.get_text() for t in legend.get_texts()]


def _ticks(fig, axis) -> list[str]:
    _drawn(fig)
    return [t.get_text() for t in axis.get_ticklabels() if t.get_text()]


def test_new_panels_gives_a_row_of_axes():
    fig, axes = plotting.new_panels(3, 9, 3)
    assert len(axes) == 3 == len(fig.axes)
    lefts = [ax.get_position().x0 for ax in axes]
    assert lefts == sorted(lefts) and len(set(lefts)) == 3
    assert tuple(fig.get_size_inches()) == (9, 3)


def _sweep(comm_s, t=(1, 2, 4, 8, 16)):
    t = np.array(t)
    comm = np.array(comm_s, dtype=float)
    compute = 1e-2 / t
    return {"t": t, "comm_s": comm, "compute_s": compute, "comm_fraction": comm / (comm + compute)}


def test_tp_sweep_lines_draws_times_from_t2_and_compute_on_log_axes():
    fig, ax = plotting.new_figure()
    sweeps = {"NVLink domain of 8, then IB": _sweep([0, 1e-4, 2e-4, 3e-4, 9e-4]),
              "TCP only": _sweep([0, 3e-3, 5e-3, 6e-3, 7e-3])}
    plotting.tp_sweep_lines(ax, sweeps, 8, domain_label="NVLink 4 domain", title="t sweep")
    assert _legend(ax) == [*sweeps, "compute per GPU"]
    nvlink, tcp, compute = ax.get_lines()[:3]
    assert list(nvlink.get_xdata()) == [2, 4, 8, 16]  # no communication at t = 1
    assert list(compute.get_xdata()) == [1, 2, 4, 8, 16] and compute.get_linestyle() == "--"
    assert to_hex(nvlink.get_color()) == plotting.LINK_COLORS["NVLink 4"]
    assert to_hex(tcp.get_color()) == plotting.LINK_COLORS["InfiniBand NDR"]  # second in order
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert [line.get_xdata()[0] for line in ax.get_lines()[3:]] == [8]  # the domain's edge
    assert any(t.get_text().strip() == "NVLink 4 domain" for t in ax.texts)
    assert _ticks(fig, ax.xaxis) == ["1", "2", "4", "8", "16"]
    assert all(label.endswith("ms") or label.endswith("µs") for label in _ticks(fig, ax.yaxis))


def test_tp_sweep_lines_as_shares_in_percent():
    _fig, ax = plotting.new_figure()
    sweeps = {"IB only": _sweep([0, 1e-3, 2e-3, 3e-3, 4e-3])}
    plotting.tp_sweep_lines(ax, sweeps, 8, share=True, colors={"IB only": "#123456"})
    (line,) = [ln for ln in ax.get_lines() if ln.get_label() == "IB only"]
    assert np.allclose(line.get_ydata(), 100 * sweeps["IB only"]["comm_fraction"])
    assert to_hex(line.get_color()) == "#123456"
    assert ax.get_yscale() == "linear" and ax.get_ylim() == (0, 100)
    assert "compute per GPU" not in _legend(ax)


def test_collective_time_vs_size_names_algorithms_in_words_and_marks_the_crossover():
    fig, ax = plotting.new_figure()
    sizes = 2.0 ** np.arange(0, 31)
    times = {"ring": 1e-3 + sizes / 1e10, "tree": 1e-5 + sizes / 5e9,
             "halving_doubling": 1e-5 + sizes / 5e9}
    plotting.collective_time_vs_size(ax, sizes, times, bound_s=sizes / 1e10,
                                     bound_label="lower bound", crossover_bytes=2.0**20)
    assert _legend(ax) == ["ring", "double binary tree", "halving-doubling", "lower bound",
                           "ring crossover S* = 1 MiB"]
    ring, tree = ax.get_lines()[:2]
    assert to_hex(ring.get_color()) == plotting.ALGORITHM_COLORS["ring"]
    assert tree.get_linestyle() == "--"  # the tree stays visible over halving-doubling
    assert ax.get_xscale() == ax.get_yscale() == "log"
    # the bound's tiny times are cut: the axis starts a third below the fastest algorithm
    assert ax.get_ylim()[0] == pytest.approx((1e-5 + 1 / 5e9) / 3)
    assert _ticks(fig, ax.xaxis) == ["1 B", "32 B", "1 KiB", "32 KiB", "1 MiB", "32 MiB", "1 GiB"]
    assert {"1 ms", "10 µs"} <= set(_ticks(fig, ax.yaxis))


def test_collective_time_vs_size_other_labels_take_the_given_colours():
    _fig, ax = plotting.new_figure()
    sizes = 2.0 ** np.arange(0, 11)
    plotting.collective_time_vs_size(ax, sizes, {"flat ring": sizes * 1e-9,
                                                 "hierarchical": sizes * 2e-9},
                                     colors={"hierarchical": "#d62728"})
    flat, hier = ax.get_lines()
    assert [flat.get_label(), hier.get_label()] == ["flat ring", "hierarchical"]
    assert to_hex(hier.get_color()) == "#d62728"
    assert to_hex(flat.get_color()) != "#d62728"


def test_collective_time_vs_gpus_marks_the_job():
    _fig, ax = plotting.new_figure()
    gpus = np.array([8, 64, 512, 4096])
    plotting.collective_time_vs_gpus(ax, gpus, {"ring": gpus * 1e-5, "sharp": gpus * 0 + 1e-4},
                                     mark_gpus=1000)
    assert _legend(ax) == ["ring", "SHARP (in-network)"]
    assert ax.get_lines()[-1].get_xdata()[0] == 1000
    assert any(t.get_text().strip() == "n = 1,000" for t in ax.texts)


def test_load_balance_lines_in_legend_order_with_ecmp_dashed():
    _fig, ax = plotting.new_figure()
    flows = [1, 2, 4, 8]
    rows = {k: np.linspace(0.2, 0.8, 4) for k in ("ecmp", "ecmp_sync", "spray", "rr", "flowlet")}
    plotting.load_balance_lines(ax, flows, rows, capacity=0.83)
    assert _legend(ax) == [plotting.LOAD_BALANCE_LABELS[k] for k in plotting.LOAD_BALANCE_COLORS]
    styles = {ln.get_label(): ln.get_linestyle() for ln in ax.get_lines()}
    assert styles["ECMP, throughput"] == "--" and styles["adaptive packet spraying"] == "-"
    assert any(ln.get_ydata()[0] == 0.83 for ln in ax.get_lines())  # the ceiling
    assert ax.get_xscale() == "log" and ax.get_ylim() == (0, 1.02)


def test_ecmp_against_spraying_one_colour_per_path_count():
    _fig, ax = plotting.new_figure()
    ecmp = np.array([[0.3, 0.4], [0.2, 0.3]])
    spray = np.array([[0.8, 0.8], [0.9, 0.9]])
    plotting.ecmp_against_spraying(ax, [1, 2], [2, 4], ecmp, spray)
    assert _legend(ax) == ["ECMP, 2 paths", "ECMP, 4 paths", "adaptive spraying (same colour)"]
    lines = ax.get_lines()
    assert lines[0].get_color() == lines[1].get_color() != lines[2].get_color()
    assert list(lines[3].get_ydata()) == [0.9, 0.9] and lines[3].get_linestyle() == "--"


def _incast(mechanism: str, queue_bytes, xoff_bytes: float = 1e6) -> IncastResult:
    n = len(queue_bytes)
    zeros = np.zeros(n)
    return IncastResult(mechanism, 16, 400.0, np.arange(n) * 1e-5, np.asarray(queue_bytes, float),
                        zeros, np.full(n, 400.0), zeros.astype(bool), 1e-4, 1e-4, 1e-4, 1e-4, 0,
                        xoff_bytes)


def test_incast_panels_name_mechanisms_and_draw_the_pause_threshold():
    fig, (left, right) = plotting.new_panels()
    incast = {"pfc": _incast("pfc", [0, 2e6, 1e6]), "credits": _incast("credits", [0, 0, 0])}
    plotting.incast_queue(left, incast, title="queue")
    plotting.incast_victim(right, incast)
    assert _legend(left) == _legend(right) == ["PFC alone", "receiver credits"]
    pfc = left.get_lines()[0]
    assert to_hex(pfc.get_color()) == plotting.MECHANISM_COLORS["PFC alone"]
    assert list(pfc.get_ydata()) == [0, 2e6, 1e6]
    assert left.get_lines()[-1].get_ydata()[0] == 1e6  # XOFF
    assert np.allclose(right.get_lines()[0].get_ydata(), incast["pfc"].victim_delivered_bytes)
    assert "2 MB" in _ticks(fig, left.yaxis) and "20 µs" in _ticks(fig, left.xaxis)


def test_generation_cost_lines_draws_the_old_bill_once_and_twice_and_the_forecast():
    _fig, ax = plotting.new_figure()
    ratios = np.array([1.0, 1.5, 2.0])
    plotting.generation_cost_lines(ax, ratios, ratios * 100, 80.0, new_label="new",
                                   old_label="old", forecast=(1.2, 1.4))
    assert _legend(ax) == ["new", "old", "twice that: the same bandwidth", "the forecast, 1.2-1.4"]
    assert [ln.get_ydata()[0] for ln in ax.get_lines()[1:]] == [80.0, 160.0]
    (span,) = ax.patches
    assert np.allclose([span.get_x(), span.get_x() + span.get_width()], [1.2, 1.4])


def test_failure_rates_dash_network_only_studies_and_place_the_reports():
    _fig, ax = plotting.new_figure()
    gpus = np.array([8, 1024, 131072])
    per_day = {"llama3-405b": gpus / 2000, "alibaba-hpn": gpus / 50000}
    observed = {"Llama 3: 419 in 54 days": ("llama3-405b", 16384, 419 / 54),
                "elsewhere": ("llama3-405b", 1000, 2.0)}
    plotting.failure_rates(ax, gpus, per_day, {"llama3-405b": "Llama 3"}, observed=observed,
                           network_only=["alibaba-hpn"], mark_gpus=2048)
    assert _legend(ax) == ["Llama 3", "alibaba-hpn (network only)"]
    llama, alibaba = ax.get_lines()[:2]
    assert llama.get_linestyle() == "-" and alibaba.get_linestyle() == "--"
    dot = ax.get_lines()[2]
    assert (dot.get_xdata()[0], dot.get_ydata()[0]) == (16384, 419 / 54)
    assert to_hex(dot.get_color()) == plotting.STUDY_COLORS["llama3-405b"]
    notes = {t.get_text(): t for t in ax.texts if t.get_text() in observed}
    assert notes["Llama 3: 419 in 54 days"].get_ha() == "left"
    assert notes["elsewhere"].get_ha() == "right"  # neighbours' labels on opposite sides
    assert ax.get_xscale() == ax.get_yscale() == "log"


def test_activation_lines_label_tokens_and_bytes_as_people_write_them():
    fig, ax = plotting.new_figure()
    seqs = np.array([4096.0, 8192.0, 2.0**20])
    plotting.activation_lines(ax, seqs, {"CP 1": seqs * 2**20}, capacity_bytes=80 * 2**30,
                              capacity_label="HBM", reference={"scores": seqs**2 * 64})
    assert _legend(ax) == ["CP 1", "scores", "HBM"]
    assert ax.get_lines()[1].get_linestyle() == ":"
    assert _ticks(fig, ax.xaxis) == ["4K", "8K", "1M"]
    ticks = _ticks(fig, ax.yaxis)
    assert ticks and all(t.endswith("iB") for t in ticks)


def test_rooflines_draw_one_roof_per_channel_and_name_the_parts():
    fig, ax = plotting.new_figure()
    xs = np.logspace(0, 4, 20)
    roofs = {"hbm": np.minimum(1e15, xs * 3e12), "scale-out": np.minimum(1e15, xs * 5e10)}
    points = [("matmuls", 3000.0, 1e15, "hbm"), ("DP all-reduce", 100.0, 5e12, "scale-out")]
    plotting.rooflines(ax, xs, roofs, points)
    assert _legend(ax) == ["HBM", "network port"]
    assert [t.get_text() for t in ax.texts] == ["matmuls", "DP all-reduce"]
    colors = [to_hex(c.get_facecolor()[0]) for c in ax.collections]
    assert colors == [plotting.CHANNEL_COLORS["hbm"], plotting.CHANNEL_COLORS["scale-out"]]
    assert ax.get_ylim() == (1e10, 4e15)
    assert "1 PFLOP/s" in _ticks(fig, ax.yaxis)


def test_relative_heatmap_prints_each_ratio_and_leaves_what_does_not_fit_blank():
    fig, ax = plotting.new_figure()
    grid = np.array([[2.0, 3.0, np.nan], [4.0, 5.0, 6.0]])
    plotting.relative_heatmap(ax, grid, [1, 8], [1, 2, 4], xlabel="p", ylabel="t", title="heat",
                              split_below=0)
    (image,) = ax.images
    assert np.allclose(image.get_array(), grid / 2.0, equal_nan=True)
    assert image.get_clim() == (1, 2)
    texts = {t.get_text(): t.get_color() for t in ax.texts}
    assert list(texts) == ["1.00", "1.50", "2.00", "2.50", "3.00"]  # the NaN cell stays blank
    assert texts["1.00"] == texts["1.50"] == "black" and texts["2.00"] == "white"
    assert [line.get_ydata()[0] for line in ax.get_lines()] == [0.5]  # below the first row
    assert _ticks(fig, ax.xaxis) == ["1", "2", "4"] and _ticks(fig, ax.yaxis) == ["1", "8"]
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("p", "t", "heat")
    assert len(fig.axes) == 2 and fig.axes[1].get_ylabel() == "× best"  # the colour bar


def test_lines_draws_each_curve_with_its_colour_style_and_the_reference_lines():
    fig, ax = plotting.new_figure()
    x = np.array([1, 4, 16, 64])
    plotting.lines(ax, x, {"plain DP": x * 2.0, "ZeRO-3": x * 0 + 3.0}, xlabel="GPUs",
                   ylabel="GB", title="state", xscale="log", yscale="log",
                   colors={"ZeRO-3": "#123456"}, dashed=["ZeRO-3"], marker="o",
                   hlines={"V100 32 GB": 32.0}, mark_x=16, mark_label="this run",
                   legend="upper left")
    plain, zero3, cap, mark = ax.get_lines()
    assert np.allclose(plain.get_ydata(), x * 2.0) and list(plain.get_xdata()) == list(x)
    assert (plain.get_linestyle(), zero3.get_linestyle()) == ("-", "--")
    assert to_hex(zero3.get_color()) == "#123456" and plain.get_marker() == "o"
    assert cap.get_ydata()[0] == 32.0 and to_hex(cap.get_color()) == "#000000"
    assert mark.get_xdata()[0] == 16
    assert [t.get_text() for t in ax.texts] == [" this run"]
    assert _legend(ax) == ["plain DP", "ZeRO-3", "V100 32 GB"]  # not the setting's mark
    assert ax.get_legend()._loc == 2  # upper left, inside
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("GPUs", "GB", "state")
    assert {"1", "10", "100"} <= set(_ticks(fig, ax.xaxis))


def test_lines_with_limits_and_no_legend():
    _fig, ax = plotting.new_figure()
    plotting.lines(ax, [1, 2, 3], {"share": [10, 50, 90]}, xlabel="n", ylabel="%",
                   ylim=(0, 100), legend=None)
    (line,) = ax.get_lines()
    assert line.get_marker() in ("None", None, "") and ax.get_legend() is None
    assert ax.get_ylim() == (0, 100) and ax.get_xscale() == "linear"


def test_lines_log_x_in_powers_of_two():
    fig, ax = plotting.new_figure()
    plotting.lines(ax, [2, 4, 8, 16], {"EP": [1, 2, 3, 4]}, xlabel="EP", ylabel="ms",
                   xscale="log", xbase=2)
    assert ax.get_xscale() == "log" and ax.xaxis.get_transform().base == 2
    assert {"2", "4", "8", "16"} <= set(_ticks(fig, ax.xaxis))


def test_lines_with_own_x_formats_bold_points_and_a_shaded_span():
    fig, ax = plotting.new_figure()
    x_a, x_b = np.array([1.0, 10.0, 100.0]), np.array([2.0, 20.0])
    plotting.lines(ax, {"measured": x_a, "fit": x_b, "_dots": x_a},
                   {"measured": [1, 2, 3], "fit": [4, 5], "_dots": [7, 8, 9]},
                   xlabel="S", ylabel="µs", styles={"measured": "x", "fit": ":"},
                   bold=["fit"], colors={"fit": "#d62728"},
                   points={"fit": ([3.0], [4.5])}, xspan=(50.0, 200.0, "bandwidth-bound"),
                   xscale="log", legend="upper left")
    measured, fit, _dots, point = ax.get_lines()
    assert list(measured.get_xdata()) == list(x_a) and list(fit.get_xdata()) == list(x_b)
    assert measured.get_marker() == "x" and measured.get_linestyle() == "None"
    assert fit.get_linestyle() == ":" and fit.get_linewidth() == 2.5
    assert measured.get_linewidth() != 2.5
    # the point takes its line's colour, with a black edge, and is not in the legend
    assert to_hex(point.get_color()) == "#d62728" == to_hex(fit.get_color())
    assert to_hex(point.get_markeredgecolor()) == "#000000"
    assert (list(point.get_xdata()), list(point.get_ydata())) == ([3.0], [4.5])
    (span,) = ax.patches
    assert np.allclose(span.get_x(), 50.0) and np.allclose(span.get_x() + span.get_width(), 200.0)
    assert _legend(ax) == ["measured", "fit", "bandwidth-bound"]  # no "_dots", no point
    _drawn(fig)


def test_lines_points_need_a_line_of_that_name():
    _fig, ax = plotting.new_figure()
    with pytest.raises(KeyError, match="other"):
        plotting.lines(ax, [1, 2], {"one": [1, 2]}, xlabel="x", ylabel="y",
                       points={"other": ([1], [1])})


def _bar_rects(ax):
    return [p for p in ax.patches if p.get_width() > 0]


def test_bars_are_grouped_per_category_with_their_colours_and_reference():
    fig, ax = plotting.new_figure()
    plotting.bars(ax, ["IB", "RoCE", "TCP"],
                  {"ZeRO-0": [1.0, 2.0, 8.0], "ZeRO-3": [1.5, 3.0, 12.0]},
                  ylabel="s", xlabel="network", title="comm",
                  colors={"ZeRO-0": "#ff7f0e", "ZeRO-3": "#1f77b4"}, hlines={"compute": 2.5},
                  legend="upper left")
    rects = _bar_rects(ax)
    assert len(rects) == 6
    assert [r.get_height() for r in rects] == [1.0, 2.0, 8.0, 1.5, 3.0, 12.0]
    assert {to_hex(r.get_facecolor()) for r in rects[:3]} == {"#ff7f0e"}
    assert {to_hex(r.get_facecolor()) for r in rects[3:]} == {"#1f77b4"}
    # side by side: each category's two bars do not overlap and centre on the category
    centres = [r.get_x() + r.get_width() / 2 for r in rects]
    assert np.allclose(centres, [-0.2, 0.8, 1.8, 0.2, 1.2, 2.2])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["IB", "RoCE", "TCP"]
    (ref,) = ax.get_lines()
    assert ref.get_ydata()[0] == 2.5 and ref.get_linestyle() == "--"
    assert _legend(ax) == ["compute", "ZeRO-0", "ZeRO-3"]
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("network", "s", "comm")
    _drawn(fig)


def test_bars_overlay_on_numeric_categories():
    fig, ax = plotting.new_figure()
    plotting.bars(ax, list(range(8)), {"skewed": [9, 1, 1, 1, 1, 1, 1, 1],
                                       "balanced": [2] * 8}, ylabel="tokens", overlay=True)
    rects = _bar_rects(ax)
    assert len(rects) == 16 and all(r.get_width() == 1.0 for r in rects)
    assert [r.get_x() + 0.5 for r in rects[:8]] == [r.get_x() + 0.5 for r in rects[8:]] \
        == list(range(8))
    assert rects[0].get_alpha() in (None, 1.0) and rects[8].get_alpha() == 0.8
    assert rects[0].get_height() == 9 and rects[8].get_height() == 2
    assert "0" in _ticks(fig, ax.xaxis)  # a numeric axis, ticks from matplotlib


def test_stage_bars_draws_grouped_bars_with_the_capacity_line():
    _fig, ax = plotting.new_figure()
    plotting.stage_bars(ax, {"1F1B": [4.0, 3.0], "GPipe": [8.0, 8.0]}, ylabel="GiB",
                        line=6.0, line_label="HBM")
    assert [r.get_height() for r in _bar_rects(ax)] == [4.0, 3.0, 8.0, 8.0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1"]
    assert ax.get_xlabel() == "pipeline stage" and _legend(ax) == ["HBM", "1F1B", "GPipe"]


def test_histogram_counts_the_values_and_marks_the_reference():
    fig, ax = plotting.new_figure()
    values = np.array([1.0, 1.1, 1.2, 5.0, 5.1, 9.0])
    plotting.histogram(ax, values, bins=4, xlabel="goodput (%)", ylabel="runs",
                       color="#2ca02c", vlines={"model": 4.0}, title="runs")
    rects = _bar_rects(ax)
    assert len(rects) == 4 and sum(r.get_height() for r in rects) == len(values)
    assert [r.get_height() for r in rects] == [3, 0, 2, 1]
    assert {to_hex(r.get_facecolor()) for r in rects} == {"#2ca02c"}
    (ref,) = ax.get_lines()
    assert ref.get_xdata()[0] == 4.0 and _legend(ax) == ["model"]
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("goodput (%)", "runs", "runs")
    _drawn(fig)
    _fig, ax = plotting.new_figure()
    plotting.histogram(ax, values, xlabel="x")
    assert ax.get_legend() is None and ax.get_ylabel() == "count"


def test_scatter_draws_groups_names_and_the_reference_line():
    fig, ax = plotting.new_figure()
    plotting.scatter(ax, {"dense": ([8.0, 405.0], [48.0, 2430.0]), "MoE": ([30.0], [20.0])},
                     xlabel="params", ylabel="GFLOP", colors={"dense": "#4c72b0", "MoE": "#c44e52"},
                     markers={"MoE": "s"}, names={"dense": ["small", ""], "MoE": ["moe-30b"]},
                     below=["moe-30b"], lines={"6N": ([1.0, 1000.0], [6.0, 6000.0])},
                     xscale="log", yscale="log")
    dense, moe = ax.collections
    assert np.allclose(dense.get_offsets(), [[8, 48], [405, 2430]])
    assert to_hex(dense.get_facecolor()[0]) == "#4c72b0"
    assert to_hex(moe.get_facecolor()[0]) == "#c44e52"
    assert [t.get_text() for t in ax.texts] == ["small", "moe-30b"]  # the unnamed point stays bare
    small, below = ax.texts
    assert small.xyann[1] > 0 > below.xyann[1]
    (ref,) = ax.get_lines()
    assert ref.get_linestyle() == "--" and list(ref.get_ydata()) == [6.0, 6000.0]
    assert _legend(ax) == ["dense", "MoE", "6N"]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    _drawn(fig)


def test_plan_bars_name_only_the_parts_a_plan_has_and_label_cp_and_ep():
    from scaleout import plan

    dense = plan.search("gpt3-175b", "A100-SXM4-80GB", 1024, global_batch=1536,
                        framework="megatron-lm-2021")
    text = plotting.plan_bars_svg(dense, k=3).decode()
    # GPT-3 on A100s under Megatron-LM 2021 (no overlap of the TP all-reduces): tensor
    # parallelism and a pipeline, no experts and no split sequence
    assert "tensor-parallel all-reduces" in text and "pipeline bubble" in text
    assert "expert all-to-alls" not in text and "ring-attention exchange" not in text
    assert "#1 TP" in text and " EP" not in text and " CP" not in text
    moe = plan.search("mixtral-8x7b", "H100-SXM5-80GB", 64, global_batch=512, seq_len=4096)
    best = moe.plan()
    text = plotting.plan_bars_svg(moe, k=3).decode()
    assert (f"EP{best.ep}" in text) == (best.ep > 1)
    assert ("expert all-to-alls" in text) == any(
        moe.arrays["ep_comm_s"][i] > 0 for i in moe.order[:3])


def test_stage_memory_bars_draw_every_rank_stacked_with_the_hbm_line():
    """Four ranks of five parts each: every bar segment's height is the part's GiB, stacked
    in order; the dashed line sits at the GPU's HBM; the totals are written above the bars;
    a rank over HBM is hatched."""
    from scaleout import plan
    from scaleout.units import GIB

    result = plan.evaluate("llama3-70b", "H100", plan.Plan(
        tp=8, pp=4, dp=2, micro_batch=4, global_batch=64, zero_stage=1, sp=True,
        recompute="selective", flash_attention=True))  # ranks 0 and 1 over 80 GB, 2 and 3 in
    fig, ax = plotting.new_figure()
    plotting.stage_memory_bars(ax, result.stages, result.capacity_bytes, title="per rank")
    _drawn(fig)
    bars = ax.patches
    assert len(bars) == 4 * 5
    for i, st in enumerate(result.stages):
        segments = [b for b in bars if abs(b.get_x() + b.get_width() / 2 - i) < 1e-9]
        heights = [b.get_height() for b in segments]
        assert heights == pytest.approx([v / GIB for v in st.parts().values()], rel=1e-12)
        assert segments[-1].get_y() + heights[-1] == pytest.approx(st.total_bytes / GIB)
        assert bool(segments[0].get_hatch()) == (st.total_bytes > result.capacity_bytes)
    assert [bool(b.get_hatch()) for b in bars[::5]] == [True, True, False, False]
    line = ax.get_lines()[0]
    assert line.get_ydata()[0] == pytest.approx(result.capacity_bytes / GIB)
    texts = [t.get_text() for t in ax.texts]
    assert texts[0] == f"{result.stages[0].total_bytes / GIB:,.3g}"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1", "2", "3"]
    assert ax.get_title() == "per rank"
