"""How a model is split: tensor and sequence parallelism (notebook 04), ZeRO's slices
(notebook 06), layers on pipeline stages (notebook 05), drawn from the library's splits."""

from __future__ import annotations

import numpy as np

from .. import collectives, memory, pipeline, tensor_parallel, zero
from ..checks import check_int
from ._svg import (
    BLUE,
    GREEN,
    GREY,
    LABEL,
    LINE,
    ORANGE,
    PALE,
    PALETTE,
    SMALL,
    Canvas,
    fit_size,
    heading,
    wrap,
)

__all__ = ["pipeline_stages", "sequence_parallel", "tensor_parallel_mlp", "zero_stages"]

_SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def _sub(i: int) -> str:
    """``12`` → ``"₁₂"`` (a subscript index)."""
    return str(i).translate(_SUB)


def _shape(shape: tuple[int, ...]) -> str:
    return " × ".join(f"{d:,}" for d in shape)


def _op_box(c: Canvas, x: float, y: float, name: str, fill: str) -> None:
    """An f or g operator: a bold letter in a square."""
    c.box(x, y, 46, 46, name, fill=fill, size=24, bold=True, rx=8, stroke_width=2.5)


def tensor_parallel_mlp(t: int = 2, hidden: int = 12288, ffn_hidden: int | None = None) -> str:
    """Megatron-LM's MLP on ``t`` GPUs: A split by columns, B by rows, and the f and g operators.

    Each lane is one GPU: ``X · Aᵢ``, GeLU, ``· Bᵢ``, a partial ``Zᵢ``; ``g``
    all-reduces the partial sums in the forward pass and ``f`` all-reduces the
    input gradients in the backward pass (Shoeybi et al. 2019, Sec. 3 and
    Fig. 3a). The block shapes are those of
    :func:`scaleout.tensor_parallel.split_columns` and
    :func:`~scaleout.tensor_parallel.split_rows` on an ``h × f`` and an
    ``f × h`` matrix (``f = 4h`` by default; ``t`` must divide it), and the
    count of all-reduces is what :func:`~scaleout.tensor_parallel.tensor_parallel_mlp`
    performs on a small numeric MLP split the same way.
    """
    t = check_int("t", t, minimum=2, maximum=8)
    h = check_int("hidden", hidden)
    f = 4 * h if ffn_hidden is None else check_int("ffn_hidden", ffn_hidden)
    a_blocks = tensor_parallel.split_columns(np.broadcast_to(0.0, (h, f)), t)
    b_blocks = tensor_parallel.split_rows(np.broadcast_to(0.0, (f, h)), t)
    rng = np.random.default_rng(0)
    demo = tensor_parallel.tensor_parallel_mlp(rng.normal(size=(3, 4)), rng.normal(size=(4, 4 * t)),
                                               rng.normal(size=(4 * t, 4)), t)
    lane_h = 100 if t <= 2 else 84 if t <= 4 else 66
    top = 96
    width = 1000
    height = top + t * lane_h + 150
    c = Canvas(width, height, f"Tensor-parallel MLP on {t} GPUs")
    heading(c, f"Tensor-parallel MLP on {t} GPUs (Megatron-LM)")
    c.text(width / 2, 60, "A is split by columns, B by rows: each GPU computes its own part, "
           "then one all-reduce joins them.", size=SMALL, anchor="middle")
    mid = top + t * lane_h / 2
    c.box(12, mid - 50, 104, 100, ["X", "input,", "all GPUs"], fill=PALE["grey"], size=16)
    _op_box(c, 136, mid - 23, "f", PALE["sky"])
    xs = {"xa": 222, "gelu": 430, "yb": 518, "z": 726}
    ws = {"xa": 190, "gelu": 70, "yb": 190, "z": 110}
    fs = 16 if t <= 4 else SMALL
    for i in range(t):
        y = top + i * lane_h
        c.rect(204, y + 3, 644, lane_h - 6, fill=PALE["blue"] if i % 2 == 0 else PALE["grey"],
               stroke="none", rx=8)
        c.text(212, y + 19, f"GPU {i}", size=SMALL, bold=True, fill=BLUE)
        bh = lane_h - 32
        by = y + 25
        c.box(xs["xa"], by, ws["xa"], bh, [f"X · A{_sub(i + 1)}", _shape(a_blocks[i].shape)],
              size=fs)
        c.box(xs["gelu"], by, ws["gelu"], bh, "GeLU", size=fs)
        c.box(xs["yb"], by, ws["yb"], bh, [f"Y{_sub(i + 1)} · B{_sub(i + 1)}",
                                           _shape(b_blocks[i].shape)], size=fs)
        c.box(xs["z"], by, ws["z"], bh, [f"Z{_sub(i + 1)}", "partial sum"], size=fs,
              fill=PALE["orange"])
        yc = by + bh / 2
        c.line(184, mid, xs["xa"] - 3, yc, arrow=True, width=2)
        c.line(xs["xa"] + ws["xa"] + 2, yc, xs["gelu"] - 3, yc, arrow=True, width=2)
        c.line(xs["gelu"] + ws["gelu"] + 2, yc, xs["yb"] - 3, yc, arrow=True, width=2)
        c.line(xs["yb"] + ws["yb"] + 2, yc, xs["z"] - 3, yc, arrow=True, width=2)
        c.line(xs["z"] + ws["z"] + 2, yc, 860, mid, arrow=True, width=2)
    _op_box(c, 864, mid - 23, "g", PALE["vermillion"])
    c.box(922, mid - 50, 70, 100, ["Z", "all", "GPUs"], fill=PALE["grey"], size=16)
    c.line(911, mid, 920, mid, arrow=True, width=2)
    y = top + t * lane_h + 34
    c.text(20, y, "f: identity forward, all-reduce of the input gradients backward",
           size=SMALL, fill=LINE)
    c.text(20, y + 26, "g: all-reduce of the partial sums forward, identity backward",
           size=SMALL, fill=LINE)
    per_layer = tensor_parallel.ALL_REDUCES_PER_LAYER
    note = (f"This block: {demo.all_reduces} all-reduces (g forward, f backward); attention is "
            f"split the same way, so a layer needs {per_layer} all-reduces of the b×s×h "
            f"activations. Blocks for h = {h:,}, f = {f:,}.")
    c.lines(20, y + 60, wrap(note, width - 40, SMALL), size=SMALL)
    return c.svg()


def sequence_parallel(t: int = 2) -> str:
    """Sequence parallelism around one tensor-parallel block, per GPU.

    Outside the block (layer norm, dropout) each GPU keeps ``1/t`` of the
    sequence; ``g`` all-gathers the sequence before the block and ``ḡ``
    reduce-scatters its output after it (forward; the reverse backward), where
    tensor parallelism alone would all-reduce once. Korthikanti et al. 2022,
    Sec. 4.2.2 and Fig. 5; the byte counts are
    :func:`scaleout.collectives.lower_bound_bytes`: a reduce-scatter plus an
    all-gather send what one all-reduce sends.
    """
    t = check_int("t", t, minimum=2, maximum=8)
    lane_h = 64 if t <= 4 else 46
    top = 150
    width = 1000
    height = top + t * lane_h + 170
    c = Canvas(width, height, f"Sequence parallelism on {t} GPUs")
    heading(c, f"Sequence parallelism on {t} GPUs (Korthikanti et al.)")
    c.text(width / 2, 58, "Each bar is the sequence of one layer's activations; filled: the part "
           "this GPU holds.", size=SMALL, anchor="middle")
    regions = [(90, 180, "layer norm", f"1/{t} of the sequence"),
               (430, 210, "attention or MLP", "tensor-parallel"),
               (800, 190, "dropout, residual", f"1/{t} of the sequence")]
    for x, w, name, what in regions:
        c.box(x, 80, w, 56, [name, what], fill=PALE["grey"], size=16)
    lanes_top, lanes_bottom = top, top + t * lane_h
    ops = [(290, "g", ["all-", "gather"]), (660, "ḡ", ["reduce-", "scatter"])]
    for x, name, what in ops:
        c.box(x, 80, 120, lanes_bottom - 80, [name, *what], fill=PALE["vermillion"], size=LABEL,
              bold=True)
    for i in range(t):
        y = lanes_top + i * lane_h
        c.text(12, y + lane_h / 2 + 6, f"GPU {i}", size=16, bold=True)
        for x, w, name, _ in regions:
            full = name == "attention or MLP"
            seg = w / t
            for j in range(t):
                held = full or j == i
                c.rect(x + j * seg, y + 12, seg, lane_h - 24,
                       fill=PALETTE[j % len(PALETTE)] if held else "white", stroke=GREY,
                       stroke_width=1, rx=0)
        yc = y + lane_h / 2
        for (x, w, _, _), (ox, _, _) in zip(regions[:2], ops, strict=True):
            c.line(x + w + 2, yc, ox - 3, yc, width=2, arrow=True)
        for (ox, _, _), (x, _, _, _) in zip(ops, regions[1:], strict=True):
            c.line(ox + 122, yc, x - 3, yc, width=2, arrow=True)
    rs = collectives.busbw_factor("reduce_scatter", t)
    ag = collectives.busbw_factor("all_gather", t)
    ar = collectives.busbw_factor("all_reduce", t)
    y = top + t * lane_h + 30
    y = c.legend(20, y, [(f"part {j + 1} of the sequence", PALETTE[j % len(PALETTE)])
                         for j in range(t)] + [("not held", "white")], size=SMALL)
    notes = [
        "g: all-gather forward, reduce-scatter backward. ḡ: reduce-scatter forward, "
        "all-gather backward.",
        f"Bytes each GPU sends, as a share of the b×s×h activations: reduce-scatter "
        f"{rs:.3g} + all-gather {ag:.3g} = {rs + ag:.3g}, the {ar:.3g} of the one all-reduce "
        "tensor parallelism alone needs at ḡ.",
        f"The gain is memory: layer-norm and dropout activations shrink to 1/{t} per GPU.",
    ]
    y += 34
    for note in notes:
        y = c.lines(20, y, wrap(note, width - 40, SMALL), size=SMALL) + 4
    return c.svg()


def _gb(n_bytes: float) -> str:
    """Bytes as decimal gigabytes with three significant figures: ``52.5 GB``."""
    gb = n_bytes / 1e9
    return f"{gb:,.3g} GB" if gb < 1000 else f"{gb:,.0f} GB"


#: Colours of the three parts of the model state (as in the ZeRO paper's Fig. 1).
STATE_COLORS = {"weights": BLUE, "grads": ORANGE, "optimizer": GREEN}
STATE_LABELS = {"weights": "weights", "grads": "gradients", "optimizer": "optimizer state"}


def zero_stages(dp: int = 4, params: float = 7.5e9, recipe: str = "mixed-adam") -> str:
    """ZeRO stages 0-3: which slice of the weights, gradients and optimizer state each GPU keeps.

    One row per stage, one cell per data-parallel GPU; each bar spans all the
    parameters and is filled where that GPU keeps them: everything in stage 0,
    then the optimizer state (stage 1), gradients (2) and weights (3) cut into
    ``dp`` slices. The slices are :func:`scaleout.zero.partition` and the bytes
    per GPU :meth:`~scaleout.zero.ZeroPartition.bytes_per_gpu` at the recipe's
    bytes per parameter (``16Ψ``, ``4Ψ + 12Ψ/N_d``, ``2Ψ + 14Ψ/N_d``,
    ``16Ψ/N_d``; Rajbhandari et al. 2020, Sec. 5 and Fig. 1, whose example is
    Ψ = 7.5 billion).
    """
    dp = check_int("dp", dp, minimum=2, maximum=8)
    psi = check_int("params", params)
    r = memory.get_recipe(recipe)
    left, right = 170, 140
    width = 1000
    cell_w = (width - left - right - 10) / dp
    row_h = 156
    top = 92
    height = top + 4 * row_h + 40
    c = Canvas(width, height, f"ZeRO stages on {dp} GPUs")
    heading(c, f"ZeRO stages 0-3 on {dp} data-parallel GPUs")
    items = [(f"{STATE_LABELS['weights']}, {r.weight_bytes:g} B/param", BLUE),
             (f"{STATE_LABELS['grads']}, {r.grad_bytes:g} B/param", ORANGE),
             (f"{STATE_LABELS['optimizer']}, {r.optimizer_bytes:g} B/param", GREEN),
             ("not kept on this GPU", "white")]
    c.legend(20, 66, items, size=SMALL)
    for stage in range(4):
        part = zero.partition(psi, stage, dp)
        y = top + stage * row_h
        title = (f"Stage {stage} ({zero.STAGE_NAMES[stage]}): "
                 + ("every GPU keeps everything" if stage == 0
                    else f"shards {zero.STAGE_SHARDS[stage]}"))
        c.rect(10, y + 4, width - 20, row_h - 10, fill=PALE["grey"] if stage % 2 else "white",
               stroke="none")
        c.text(20, y + 30, title, size=LABEL + 1, bold=True)
        for k, name in enumerate(zero.STATE_PARTS):
            by = y + 62 + k * 29
            c.text(left - 10, by + 18, STATE_LABELS[name], size=16, anchor="end")
            for g in range(dp):
                x = left + g * cell_w + 8
                w = cell_w - 16
                c.rect(x, by, w, 24, fill="white", stroke=GREY, stroke_width=1, rx=2)
                lo, hi = part.ranges[name][g]
                c.rect(x + w * lo / psi, by, w * (hi - lo) / psi, 24,
                       fill=STATE_COLORS[name], stroke="none", rx=2)
        for g in range(dp):
            c.text(left + (g + 0.5) * cell_w, y + 56, f"GPU {g}", size=SMALL, anchor="middle",
                   fill=LINE)
        per_gpu = float(part.bytes_per_gpu(r).max())
        c.text(width - right + 14, y + 94, "per GPU:", size=16)
        c.text(width - right + 14, y + 122, _gb(per_gpu), size=LABEL + 2, bold=True)
    c.text(20, height - 12, f"Ψ = {psi / 1e9:,.3g} billion parameters, recipe {r.name!r}: "
           f"{_gb(psi * r.total_bytes)} without sharding.", size=SMALL)
    return c.svg()


def pipeline_stages(n_layers: int = 16, p: int = 4, v: int = 1) -> str:
    """Layers on pipeline stages and GPUs: consecutive blocks, or interleaved chunks (``v > 1``).

    The strip is the model, layer 1 on the left, cut into ``p·v`` blocks coloured
    by the GPU that runs them; below, each GPU and its layers. With ``v = 1`` GPU
    ``d`` holds one block of consecutive layers (stage ``d``); with ``v > 1`` it
    holds ``v`` blocks spread through the model, and a micro-batch passes every
    GPU ``v`` times. From :func:`scaleout.pipeline.layer_assignment` (Narayanan et
    al. 2021, Sec. 2.2 and Fig. 4), the order :func:`scaleout.pipeline.simulate` runs.
    """
    la = pipeline.layer_assignment(n_layers, p, v)  # checks p | n_layers, v | n_layers/p
    blocks = la.p * la.v
    if blocks > 16 or la.p > 8:
        raise ValueError(f"p={la.p} and v={la.v} give {blocks} blocks on {la.p} GPUs; the "
                         "drawing shows at most 16 blocks on at most 8 GPUs")
    k = la.layers_per_chunk
    width = 1000
    margin = 24
    block_w = (width - 2 * margin) / blocks
    gpu_w = min(240, (width - 2 * margin) / la.p - 14)
    two_lines = block_w < 120
    top = 96
    strip_h = 64 if two_lines else 48
    gpu_y = top + strip_h + 110
    height = gpu_y + 96 + 70
    kind = "interleaved, " + f"{la.v} chunks per GPU" if la.v > 1 else "one stage per GPU"
    c = Canvas(width, height, f"{n_layers} layers on {la.p} pipeline stages ({kind})")
    heading(c, f"{n_layers} layers on {la.p} GPUs: {kind}")
    c.text(margin, top - 14, f"The model, layer 1 on the left ({k} layers per block):",
           size=SMALL)
    gpu_x = [margin + (d + 0.5) * (width - 2 * margin) / la.p - gpu_w / 2 for d in range(la.p)]
    for b in range(blocks):
        first = b * k
        d, chunk = int(la.device[first]), int(la.chunk[first])
        color = PALETTE[d % len(PALETTE)]
        span = f"{first + 1}–{first + k}" if k > 1 else f"{first + 1}"
        label = ["layers", span] if two_lines else f"layers {span}"
        x = margin + b * block_w
        c.box(x + 2, top, block_w - 4, strip_h, label, fill=color, size=16, bold=True,
              stroke="white", rx=3, tooltip=f"GPU {d}, chunk {chunk + 1}")
        c.line(x + block_w / 2, top + strip_h + 2, gpu_x[d] + gpu_w / 2, gpu_y - 4,
               stroke=color, width=2.5, arrow=True)
    per_line = 2 if la.p > 4 else 3
    spans = []
    for d in range(la.p):
        parts = [f"{r.start + 1}–{r.stop}" if len(r) > 1 else f"{r.start + 1}"
                 for r in la.layers_of(d)]
        spans.append([", ".join(parts[i:i + per_line]) + ("," if i + per_line < len(parts)
                                                          else "")
                      for i in range(0, len(parts), per_line)])
    n_lines = 2 + max(len(x) for x in spans)
    box_h = 20 + 22 * n_lines
    fs = min(fit_size(line, gpu_w - 10, LABEL) for x in spans for line in x)
    for d in range(la.p):
        color = PALETTE[d % len(PALETTE)]
        c.box(gpu_x[d], gpu_y, gpu_w, box_h,
              [f"GPU {d}" + ("" if la.v > 1 else f", stage {d}"), "layers", *spans[d]],
              fill=PALE["grey"], size=fs, stroke=color, stroke_width=4)
        c.rect(gpu_x[d], gpu_y, gpu_w, 10, fill=color, stroke="none", rx=2)
    path = " → ".join(str(int(la.device[b * k])) for b in range(blocks))
    note = f"A micro-batch's forward pass visits GPU {path}."
    if la.v > 1:
        note += (f" It goes round the pipeline {la.v} times: the bubble shrinks "
                 f"{la.v}-fold, and the sends between GPUs grow {la.v}-fold.")
    c.lines(margin, gpu_y + box_h + 38, wrap(note, width - 2 * margin, SMALL), size=SMALL)
    return c.svg()

