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
    assert ring.sent_fraction(ring.steps) * size == pytest.approx(sent)
    assert ring.sent_fraction(n - 1) == pytest.approx((n - 1) / n)  # the reduce-scatter's share
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
    # the figures in NCCL's src/graph/trees.cc: 12 ranks mirrored, 13 ranks shifted by one
    assert collectives.double_binary_tree(12).parents == (
        (-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 8, 10), (1, 3, 1, 11, 5, 7, 5, 3, 9, 7, 9, -1))
    assert collectives.double_binary_tree(13).parents[1] == (
        9, -1, 3, 5, 3, 9, 7, 5, 7, 1, 11, 0, 11)
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


# =========================================================================== the pictures
import re  # noqa: E402
import xml.etree.ElementTree as ET  # noqa: E402

from scaleout import catalog, diagrams, optics, synthesis  # noqa: E402
from scaleout.diagrams import _svg  # noqa: E402

NS = "{http://www.w3.org/2000/svg}"
#: Conservative widths of one character, in ems, for DejaVu Sans (its letters average about
#: 0.56, its space 0.32): a space, any other character, any other bold character.
EM_SPACE, EM_NORMAL, EM_BOLD = 0.35, 0.62, 0.69


def _parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{NS}svg"
    assert root.get("width") == "100%"
    assert re.fullmatch(r"0 0 [\d.]+ [\d.]+", root.get("viewBox"))
    return root


def _texts(root: ET.Element) -> list[dict]:
    """Every <text> with its position, size, anchor, weight and content."""
    default = float(root.get("font-size"))
    out = []
    for t in root.iter(f"{NS}text"):
        assert t.get("transform") is None  # no rotated text: its extent would be unknown
        out.append({"x": float(t.get("x")), "y": float(t.get("y")),
                    "size": float(t.get("font-size", default)),
                    "anchor": t.get("text-anchor", "start"),
                    "bold": t.get("font-weight") == "bold", "text": t.text or ""})
    return out


def _assert_text_inside(svg: str) -> list[dict]:
    """Every text's estimated box lies inside the viewBox; returns the texts."""
    root = _parse(svg)
    _, _, width, height = map(float, root.get("viewBox").split())
    texts = _texts(root)
    for t in texts:
        spaces = t["text"].count(" ")
        em = EM_BOLD if t["bold"] else EM_NORMAL
        w = t["size"] * (spaces * EM_SPACE + (len(t["text"]) - spaces) * em)
        left = {"start": t["x"], "middle": t["x"] - w / 2, "end": t["x"] - w}[t["anchor"]]
        assert left >= 0 and left + w <= width, (t, width)
        assert t["y"] - t["size"] >= 0 and t["y"] + 0.3 * t["size"] <= height, (t, height)
        assert t["size"] >= _svg.MIN_FONT, t
    return texts


def _contrast_on_white(color: str) -> float:
    """WCAG 2 contrast ratio of ``#rrggbb`` text on white."""
    rgb = [int(color[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 1.05 / (0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2] + 0.05)


def _assert_text_readable(svg: str) -> None:
    """Coloured text reaches WCAG AA contrast (4.5) on white; white text sits on a dark box."""
    for t in _parse(svg).iter(f"{NS}text"):
        fill = t.get("fill", "#000000").upper()
        if fill != "#FFFFFF":
            assert _contrast_on_white(fill) >= 4.5, (t.text, fill)


def _assert_no_text_overlaps(texts: list[dict]) -> None:
    """No two texts' estimated boxes (cap height above the baseline, descenders below) meet."""
    boxes = []
    for t in texts:
        spaces = t["text"].count(" ")
        em = EM_BOLD if t["bold"] else EM_NORMAL
        w = t["size"] * (spaces * EM_SPACE + (len(t["text"]) - spaces) * em)
        left = {"start": t["x"], "middle": t["x"] - w / 2, "end": t["x"] - w}[t["anchor"]]
        boxes.append((left, t["y"] - 0.72 * t["size"], left + w, t["y"] + 0.2 * t["size"],
                      t["text"]))
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            apart = a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]
            assert apart, f"{a[4]!r} overlaps {b[4]!r}"


def _strings(svg: str) -> list[str]:
    return [t["text"] for t in _texts(_parse(svg))]


# every drawing over its parameter ranges: well-formed, text inside, labels fit their boxes
DRAWINGS = [
    *[(diagrams.ring_all_reduce, {"n": n, "step": s}) for n in range(2, 9)
      for s in range(0, 2 * n - 1)],
    *[(diagrams.tree_all_reduce, {"n": n}) for n in range(2, 17)],
    *[(diagrams.halving_doubling, {"n": n}) for n in (2, 4, 8)],
    *[(diagrams.tensor_parallel_mlp, {"t": t}) for t in (2, 3, 4, 6, 8)],
    (diagrams.tensor_parallel_mlp, {"t": 4, "hidden": 8192, "ffn_hidden": 28672}),
    *[(diagrams.sequence_parallel, {"t": t}) for t in range(2, 9)],
    *[(diagrams.zero_stages, {"dp": d}) for d in range(2, 9)],
    (diagrams.zero_stages, {"dp": 4, "params": 175e9, "recipe": "megatron-bf16"}),
    *[(diagrams.pipeline_stages, {"n_layers": L, "p": p, "v": v})
      for L, p, v in [(16, 4, 1), (16, 4, 2), (16, 2, 1), (8, 8, 1), (96, 8, 2), (32, 4, 4),
                      (126, 2, 7), (48, 8, 1)]],
    *[(diagrams.node, {"gpu": g}) for g in ("H100-SXM5-80GB", "A100-SXM4-80GB", "B200")],
    (diagrams.node, {"gpu": "MI300X", "nvswitches": 0}),
    *[(diagrams.rail_optimised, kw) for kw in [{}, {"n_nodes": 8, "gpus_per_node": 4},
                                               {"n_nodes": 2, "gpus_per_node": 8, "radix": 16},
                                               {"n_nodes": 6, "gpus_per_node": 4, "radix": 8}]],
    *[(diagrams.multi_plane, {"planes": p}) for p in (1, 2, 4, 8)],
    (diagrams.multi_plane, {"planes": 2, "n_endpoints": 1_000_000}),
    *[(diagrams.super_node, {"domain": d, "chassis_drawn": k})
      for d in ("DGX GH200", "CloudMatrix384") for k in (2, 4, 6)],
    *[(diagrams.transceivers, {"speed_gbps": s}) for s in (800, 1600)],
]


@pytest.mark.parametrize(("draw", "kwargs"), DRAWINGS,
                         ids=[f"{f.__name__}-{'-'.join(map(str, kw.values()))}"
                              for f, kw in DRAWINGS])
def test_every_drawing_is_well_formed_svg_with_its_text_inside(draw, kwargs):
    svg = draw(**kwargs)
    texts = _assert_text_inside(svg)
    _assert_text_readable(svg)
    _assert_no_text_overlaps(texts)
    assert texts and all(t["text"].strip() for t in texts)
    assert draw.__doc__ and re.search(r"\d{4}|catalog|data/", draw.__doc__)  # names a source


def _cell_name(count: int, n: int) -> str:
    return "full sum" if count == n else "own only" if count == 1 else f"sum of {count}"


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_ring_drawing_shows_the_reference_rings_chunks_at_every_step(n):
    ref = _reference_ring(n)
    cell_texts = {"own only", "full sum"} | {f"sum of {k}" for k in range(2, n)}
    for step, counts in enumerate(ref):
        svg = diagrams.ring_all_reduce(n, step)
        strings = _strings(svg)
        assert [s for s in strings if re.fullmatch(r"GPU \d", s)] == [f"GPU {g}" for g in range(n)]
        cells = [s for s in strings if s in cell_texts][:n * n]  # then the legend's
        # drawn chunk by chunk (rows), GPU by GPU (columns)
        assert cells == [_cell_name(int(counts[g, ch]), n) for ch in range(n) for g in range(n)]
        arrows = svg.count("marker-end")
        assert arrows == (n if step < 2 * (n - 1) else 0)


def test_tree_and_halving_doubling_drawings_follow_their_schedules():
    svg = diagrams.tree_all_reduce(8)
    strings = _strings(svg)
    assert sorted(s for s in strings if re.fullmatch(r"GPU \d+", s)) == sorted(
        [f"GPU {r}" for r in range(8)] * 2)
    assert svg.count("marker-start") == 2 * 7  # one edge per non-root rank, in each tree
    assert any("2⌈log2 8⌉ = 6 steps" in s for s in strings)
    hd = _strings(diagrams.halving_doubling(8))
    partners = [int(s.split()[-1]) for s in hd if s.startswith("↔ GPU")]
    expected = [g ^ d for d in (4, 2, 1, 1, 2, 4) for g in range(8)]
    assert partners == expected


def test_tensor_and_sequence_parallel_drawings_show_the_split():
    strings = _strings(diagrams.tensor_parallel_mlp(4, hidden=12288))
    assert [s for s in strings if s.startswith("X · A")] == ["X · A₁", "X · A₂", "X · A₃", "X · A₄"]
    assert strings.count("12,288 × 12,288") == 8  # A_i is h × 4h/4 and B_i 4h/4 × h
    assert {"f", "g"} <= set(strings)
    sp = _strings(diagrams.sequence_parallel(4))
    assert [s for s in sp if s.startswith("GPU ")] == [f"GPU {i}" for i in range(4)]
    assert {"g", "ḡ", "all-", "gather", "reduce-", "scatter"} <= set(sp)


@pytest.mark.parametrize("dp", [2, 4, 8])
def test_zero_drawing_slices_add_up_to_the_whole_and_bytes_match_table_1(dp):
    psi = 7.5e9
    svg = diagrams.zero_stages(dp, psi)
    root = _parse(svg)
    from scaleout.diagrams.parallelism import STATE_COLORS

    bars = [r for r in root.iter(f"{NS}rect") if r.get("fill") == "white"
            and r.get("stroke") == _svg.GREY]
    bar_w = float(bars[0].get("width"))
    filled = [r for r in root.iter(f"{NS}rect") if r.get("fill") in STATE_COLORS.values()
              and r.get("stroke") is None]
    # document order: stage by stage, part by part, GPU by GPU
    assert len(filled) == 4 * 3 * dp
    for stage in range(4):
        for k, part in enumerate(zero.STATE_PARTS):
            rects = filled[(stage * 3 + k) * dp:(stage * 3 + k + 1) * dp]
            assert {r.get("fill") for r in rects} == {STATE_COLORS[part]}
            total = sum(float(r.get("width")) for r in rects)
            sharded = stage >= {"weights": 3, "grads": 2, "optimizer": 1}[part]
            assert total == pytest.approx(bar_w * (1 if sharded else dp), abs=0.5)
    shown = [s for s in _strings(svg) if s.endswith(" GB") and "without" not in s]
    assert shown == [f"{memory.model_state_bytes(psi, s, dp) / 1e9:,.3g} GB" for s in range(4)]


def test_pipeline_drawing_puts_each_block_on_its_gpu():
    strings = _strings(diagrams.pipeline_stages(16, 4, 2))
    blocks = [s.removeprefix("layers ") for s in strings
              if re.fullmatch(r"(layers )?\d+–\d+", s)]
    assert blocks == [f"{a}–{a + 1}" for a in range(1, 17, 2)]
    # GPU d holds blocks d and d + 4 of two layers each (an independent count)
    for d in range(4):
        a, b = 2 * d + 1, 2 * d + 9
        assert f"{a}–{a + 1}, {b}–{b + 1}" in strings
    assert any("visits GPU 0 → 1 → 2 → 3 → 0 → 1 → 2 → 3" in s for s in strings)
    one = _strings(diagrams.pipeline_stages(16, 4, 1))
    assert [s for s in one if s.startswith("GPU ")] == [f"GPU {d}, stage {d}" for d in range(4)]


def test_node_drawing_counts_come_from_the_catalog():
    strings = _strings(diagrams.node("H100-SXM5-80GB"))
    gpu = catalog.gpu("H100-SXM5-80GB")
    assert sum(bool(re.fullmatch(r"GPU \d", s)) for s in strings) == gpu.scaleup_domain_gpus
    assert sum(s.startswith("NVSwitch ") for s in strings) == 4
    assert strings.count("400 Gb/s") == 8  # one InfiniBand NDR port per GPU
    assert any("450 GB/s each way per GPU" in s for s in strings)


def test_rail_drawing_cables_every_gpu_to_its_rails_leaf():
    design = fabric.rail_layout(8, 4, 8)
    svg = diagrams.rail_optimised(8, 4, 8)
    root = _parse(svg)
    leaves = {}
    for t in _texts(root):
        if re.fullmatch(r"rail \d", t["text"]):
            leaves.setdefault(t["x"], int(t["text"].split()[1]))
    assert len(leaves) == design.leaves
    cables = [p for p in root.iter(f"{NS}path")
              if p.get("stroke") in _svg.PALETTE[:4] and p.get("stroke-width") == "2.2"]
    assert len(cables) == design.gpus
    for p in cables:
        x2 = float(p.get("d").split("L")[1].split(",")[0])
        rail = _svg.PALETTE.index(p.get("stroke"))
        assert leaves[x2] == rail  # the cable of GPU i ends on a leaf of rail i


def test_multi_plane_and_super_node_drawings_use_the_sizing_and_the_catalog():
    strings = _strings(diagrams.multi_plane(4, 800, 102_400, 131_072))
    plane = fabric.size_multiplane(131_072, 800, 4, switch_gbps=102_400).plane
    assert [s for s in strings if s.startswith("plane ")] == [f"plane {k}" for k in range(4)]
    assert any(f"radix-{plane.radix} switches" in s and f"{plane.tiers} tiers" in s
               for s in strings)
    d = synthesis.scaleup_domain("DGX GH200")
    sn = _strings(diagrams.super_node("DGX GH200", 4))
    assert sn.count("L1") == 4 * d.l1_switches_per_chassis
    assert f"{d.l2_switches} L2 switches (8 drawn)" in sn
    assert {"electrical inside a chassis", "optical between chassis"} <= set(sn)
    assert "chassis 32" in sn and any("8 accelerators and 3 L1 switches per chassis" in s
                                      for s in sn)


def test_transceiver_drawing_puts_a_dsp_only_in_the_dsp_module_and_quotes_the_catalog():
    strings = _strings(diagrams.transceivers(800))
    assert strings.count("DSP: retime,") == 1 and strings.count("no DSP") == 1
    assert strings.count("external laser") == 1  # CPO's laser sits outside the package
    for tech in optics.OPTICAL:
        assert optics.technology(tech).label in strings
    dsp = optics.module("800G DSP DR8")
    assert any(s.startswith(f"800G DSP DR8: {dsp.power_w:g} W") for s in strings)


BAD = [
    (diagrams.ring_all_reduce, {"n": 1}, "n must be"),
    (diagrams.ring_all_reduce, {"n": 9}, "n must be"),
    (diagrams.ring_all_reduce, {"n": 4, "step": 7}, "step must be"),
    (diagrams.tree_all_reduce, {"n": 1}, "n must be"),
    (diagrams.halving_doubling, {"n": 6}, "n must be a power of two"),
    (diagrams.tensor_parallel_mlp, {"t": 1}, "t must be"),
    (diagrams.tensor_parallel_mlp, {"t": 4, "hidden": 8, "ffn_hidden": 10}, "t=4 must divide"),
    (diagrams.tensor_parallel_mlp, {"t": 2, "hidden": 0}, "hidden must be"),
    (diagrams.sequence_parallel, {"t": 9}, "t must be"),
    (diagrams.zero_stages, {"dp": 1}, "dp must be"),
    (diagrams.zero_stages, {"params": 0}, "params must be"),
    (diagrams.zero_stages, {"recipe": "adamw"}, "recipe must be one of"),
    (diagrams.pipeline_stages, {"n_layers": 16, "p": 5}, "p=5 must divide n_layers=16"),
    (diagrams.pipeline_stages, {"n_layers": 64, "p": 8, "v": 4}, "p=8 and v=4"),
    (diagrams.node, {"gpu": "H1OO"}, "gpu 'H1OO'"),
    (diagrams.node, {"gpu": "GB200"}, "gpu 'GB200' sits in a 72-GPU"),
    (diagrams.node, {"pcie_switches": 3}, "pcie_switches=3 must divide"),
    (diagrams.rail_optimised, {"n_nodes": 0}, "n_nodes must be"),
    (diagrams.rail_optimised, {"n_nodes": 16, "gpus_per_node": 8, "radix": 64}, "n_nodes=16"),
    (diagrams.multi_plane, {"planes": 0}, "planes must be"),
    (diagrams.super_node, {"domain": "HGX H100 8-GPU"}, "domain 'HGX H100 8-GPU' has 1"),
    (diagrams.super_node, {"chassis_drawn": 1}, "chassis_drawn must be"),
    (diagrams.transceivers, {"speed_gbps": 400}, "speed_gbps=400 has no LPO"),
    (diagrams.transceivers, {"speed_gbps": -1}, "speed_gbps must be"),
]


@pytest.mark.parametrize(("draw", "kwargs", "message"), BAD,
                         ids=[f"{f.__name__}-{m.split()[0]}" for f, _, m in BAD])
def test_bad_input_is_a_value_error_naming_the_parameter(draw, kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        draw(**kwargs)


def test_canvas_refuses_a_label_that_cannot_fit_and_picks_readable_ink():
    c = _svg.Canvas(200, 100)
    with pytest.raises(RuntimeError, match="does not fit"):
        c.box(0, 0, 20, 20, "a long label")
    assert _svg.ink(_svg.BLUE) == "#FFFFFF" and _svg.ink(_svg.ORANGE) == _svg.BLACK
    assert _svg.ink(_svg.PALE["grey"]) == _svg.BLACK


def test_l1_and_l2_counts_are_data_only_for_two_tier_domains():
    gh200 = synthesis.scaleup_domain("DGX GH200")
    assert (gh200.l1_switches_per_chassis, gh200.l2_switches) == (3, 36)  # the whitepaper's 96/32
    fields = {k: getattr(gh200, k) for k in ("name", "vendor", "kind", "accelerators",
                                             "inner_medium", "openness", "year", "source")}
    with pytest.raises(ValueError, match="'l1_switches_per_chassis' is only meaningful"):
        synthesis.ScaleupDomain(**fields, switch_tiers=1, l1_switches_per_chassis=3)
    with pytest.raises(ValueError, match="l2_switches"):
        synthesis.ScaleupDomain(**fields, switch_tiers=2, l2_switches=0)
