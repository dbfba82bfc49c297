"""All-reduce algorithms drawn from their simulated schedules: ring, double binary tree,
halving-doubling. Taught in ``notebooks/07_all_reduce_cost.ipynb``."""

from __future__ import annotations

from .. import collectives
from ..checks import check_int
from ._svg import (
    BLUE,
    GREY,
    LABEL,
    LINE,
    PALE,
    SMALL,
    VERMILLION,
    Canvas,
    heading,
    text_width,
    wrap,
)

__all__ = ["halving_doubling", "ring_all_reduce", "tree_all_reduce"]

#: Cell colours by what a copy of a chunk holds.
OWN, PARTIAL, FULL = "white", PALE["orange"], BLUE
#: Arrow colours by phase.
PHASE_COLORS = {"reduce-scatter": VERMILLION, "all-gather": BLUE}
_MAX_GPUS = 8


def _cell_text(count: int, n: int) -> str:
    if count == n:
        return "full sum"
    return "own only" if count == 1 else f"sum of {count}"


def _cell_fill(count: int, n: int) -> str:
    return FULL if count == n else OWN if count == 1 else PARTIAL


def _check_drawable_n(n, minimum: int = 2) -> int:
    return check_int("n", n, minimum=minimum, maximum=_MAX_GPUS)


def _phase_sentence(sched: collectives.AllReduceSchedule, step: int) -> str:
    n = sched.n
    if step == sched.steps:
        _, sent = collectives.cost_terms("all_reduce", 1.0, n, sched.algorithm)
        return (f"Done after {sched.steps} steps: every GPU holds the full sum of every chunk, "
                f"having sent {sent:.3g} × the buffer.")
    phase = sched.phase[step]
    first = sched.phase.index(phase)
    k, of = step - first + 1, sched.phase.count(phase)
    if phase == "reduce-scatter":
        return (f"Reduce-scatter, step {k} of {of}: each GPU sends one chunk to the next GPU, "
                "which adds it to its own copy.")
    return (f"All-gather, step {k} of {of}: each GPU passes on a finished chunk, which the "
            "next GPU copies.")


def ring_all_reduce(n: int = 4, step: int = 0) -> str:
    """The ring all-reduce at one step: which copy of which chunk each GPU holds, and what moves.

    Each GPU is a column of ``n`` chunk cells; a cell says whether that GPU's copy
    holds only its own gradients, a partial sum (of how many GPUs), or the full sum.
    Arrows show the chunks sent in ``step`` (``0 … 2(n−1)``; the last value shows
    the end): reduce-scatter steps first, then all-gather steps, GPU ``g`` always
    sending to ``g + 1`` and the last GPU to the first. Every cell and arrow comes
    from :func:`scaleout.collectives.ring_schedule`, the simulated algorithm
    (Patarasuk & Yuan 2009; Thakur et al. 2005, Sec. 4.4; NCCL's ring).

    Parameters
    ----------
    n
        GPUs on the ring, 2 to 8 (more would not be readable).
    step
        Which step to show, ``0`` to ``2(n−1)``.
    """
    n = _check_drawable_n(n)
    sched = collectives.ring_schedule(n)
    step = check_int("step", step, minimum=0, maximum=sched.steps)
    left, col_w, gap, row_h = 124, 104, 50, 46
    right = 46
    width = left + n * col_w + (n - 1) * gap + right
    width = max(width, 700)
    x0 = left + (width - right - left - (n * col_w + (n - 1) * gap)) / 2
    sentence = wrap(_phase_sentence(sched, step), width - 40, LABEL)
    top = 52 + 24 * len(sentence)
    bar_y = top + 30
    table_y = bar_y + 84
    bottom_of_table = table_y + 44 + n * row_h
    height = bottom_of_table + 118
    c = Canvas(width, height, f"Ring all-reduce on {n} GPUs, step {step} of {sched.steps}")
    heading(c, f"Ring all-reduce on {n} GPUs")
    c.lines(width / 2, 60, sentence, size=LABEL, anchor="middle")

    # the steps, as a bar: reduce-scatter then all-gather
    bar_left, bar_right = 40, width - 40
    cell = (bar_right - bar_left) / (sched.steps + 1)
    for s in range(sched.steps + 1):
        x = bar_left + s * cell
        now = s == step
        phase = sched.phase[s] if s < sched.steps else "done"
        label = "end" if phase == "done" else str(s - sched.phase.index(phase) + 1)
        fill = "#222222" if now else PALE["grey"]
        c.box(x + 2, bar_y, cell - 4, 30, label, fill=fill, size=SMALL, bold=now, rx=3)
    for phase in ("reduce-scatter", "all-gather"):
        first, count = sched.phase.index(phase), sched.phase.count(phase)
        xa, xb = bar_left + first * cell + 2, bar_left + (first + count) * cell - 2
        c.line(xa, bar_y - 8, xb, bar_y - 8, stroke=PHASE_COLORS[phase], width=4)
        label = phase if text_width(phase, SMALL) < xb - xa else phase.split("-")[0] + "…"
        c.text((xa + xb) / 2, bar_y - 14, label, size=SMALL, anchor="middle",
               fill=PHASE_COLORS[phase], bold=True)

    # the GPUs and their chunks
    counts = sched.contributors[step]
    sends = sched.sends[step] if step < sched.steps else ()
    moving = {(src, ch) for src, _, chunks in sends for ch in chunks}
    xs = [x0 + g * (col_w + gap) for g in range(n)]
    for g in range(n):
        c.box(xs[g], table_y, col_w, 36, f"GPU {g}", fill="#333333", bold=True)
    for ch in range(n):
        y = table_y + 44 + ch * row_h
        c.text(x0 - 34, y + row_h / 2 + 5, f"chunk {ch}", size=SMALL, anchor="end")
        for g in range(n):
            k = int(counts[g, ch])
            sending = (g, ch) in moving
            c.box(xs[g], y + 3, col_w, row_h - 6, _cell_text(k, n), fill=_cell_fill(k, n),
                  size=SMALL, bold=k == n, stroke="#000000" if sending else "#888888",
                  stroke_width=4 if sending else 1.2)
    color = PHASE_COLORS.get(sched.phase[step] if step < sched.steps else "", LINE)
    for src, dst, chunks in sends:
        for ch in chunks:
            y = table_y + 44 + ch * row_h + row_h / 2
            if dst == src + 1:
                c.line(xs[src] + col_w + 3, y, xs[dst] - 3, y, stroke=color, width=4, arrow=True)
            else:  # the last GPU back to the first, around the table
                xr, xl = xs[src] + col_w + 22, x0 - 12
                yb = bottom_of_table + 14
                c.polyline([(xs[src] + col_w + 3, y), (xr, y), (xr, yb), (xl, yb), (xl, y),
                            (xs[dst] - 3, y)], stroke=color, width=4, arrow=True)
                c.text((xl + xr) / 2, yb + 24, f"GPU {src} sends to GPU {dst}: the ring closes",
                       size=SMALL, anchor="middle", fill=color)
    legend_y = bottom_of_table + 72
    c.legend(30, legend_y, [("own gradients only", "white"), ("partial sum", PARTIAL),
                            ("full sum", FULL)], size=SMALL)
    c.lines(30, legend_y + 30, wrap("A thick outline marks the chunk each GPU sends in this "
                                    f"step; a chunk is 1/{n} of the buffer.", width - 60, SMALL),
            size=SMALL)
    return c.svg()


def _tree_positions(tree: collectives.DoubleBinaryTree, t: int) -> dict[int, tuple[float, int]]:
    """(x slot, depth) of every rank: leaves in in-order slots, a parent over its children."""
    pos: dict[int, tuple[float, int]] = {}
    order = {r: (r - tree.root(t)) % tree.n for r in range(tree.n)}  # in-order key of a rank
    slots = [0]

    def walk(rank: int, depth: int) -> float:
        kids = sorted(tree.children(t, rank), key=order.get)
        if not kids:
            x = float(slots[0])
            slots[0] += 1
        else:
            xs = [walk(k, depth + 1) for k in kids]
            x = sum(xs) / len(xs)
        pos[rank] = (x, depth)
        return x

    walk(tree.root(t), 0)
    return pos


def tree_all_reduce(n: int = 8) -> str:
    """NCCL's double binary tree on ``n`` GPUs: the two trees, each carrying half the buffer.

    Each half is reduced up its tree to the root and broadcast back down; a GPU
    that is an inner node of one tree is a leaf of the other (for even ``n``), so
    each sends and receives about the whole buffer per phase while the latency
    grows only with the depth, ``⌈log2 n⌉``. The trees are
    :func:`scaleout.collectives.double_binary_tree` (Sanders, Speck, Träff 2009;
    NCCL 2.4, Jeaugey 2019); the step and byte counts are
    :func:`scaleout.collectives.cost_terms`.
    """
    n = check_int("n", n, minimum=2, maximum=16)
    tree = collectives.double_binary_tree(n)
    leaves = max(sum(1 for r in range(n) if not tree.children(t, r)) for t in (0, 1))
    side_by_side = leaves <= 5  # two trees abreast fit a projector; larger ones stack
    slot_w = 96 if leaves > 5 else 92
    panel_w = 40 + leaves * slot_w
    width = max(900, 2 * panel_w + 40) if side_by_side else max(760, 60 + leaves * slot_w)
    level_h = 74
    depth = max(tree.depth(0), tree.depth(1))
    panel_h = 48 + (depth + 1) * level_h
    top = 70
    height = top + (1 if side_by_side else 2) * panel_h + 150
    c = Canvas(width, height, f"Double binary tree all-reduce on {n} GPUs")
    heading(c, f"Double binary tree all-reduce on {n} GPUs (NCCL)")
    colors = (BLUE, VERMILLION)
    names = ("Tree 1: first half of the buffer", "Tree 2: second half")
    box_w = min(slot_w - 10, 76)
    for t in (0, 1):
        if side_by_side:
            x_panel, y_panel = 20 + t * (width - 40) / 2, top
            x0 = x_panel + ((width - 40) / 2 - leaves * slot_w) / 2
        else:
            x_panel, y_panel = 30, top + t * panel_h
            x0 = (width - leaves * slot_w) / 2
        c.text(x_panel + 10, y_panel + 22, names[t], size=LABEL, bold=True, fill=colors[t])
        pos = _tree_positions(tree, t)

        def centre(rank: int, y_panel=y_panel, pos=pos, x0=x0) -> tuple[float, float]:
            slot, d = pos[rank]
            return x0 + (slot + 0.5) * slot_w, y_panel + 66 + d * level_h

        for rank, parent in enumerate(tree.parents[t]):
            if parent >= 0:
                (xc, yc), (xp, yp) = centre(rank), centre(parent)
                c.line(xc, yc - 18, xp, yp + 18, stroke=colors[t], width=3, both_ends=True)
        inner = {r for r in range(n) if tree.children(t, r)}
        for rank in range(n):
            xc, yc = centre(rank)
            fill = PALE["blue" if t == 0 else "vermillion"] if rank in inner else "white"
            c.box(xc - box_w / 2, yc - 17, box_w, 34, f"GPU {rank}", fill=fill, size=SMALL,
                  bold=rank == tree.root(t), stroke=colors[t], stroke_width=2)
    steps, sent = collectives.cost_terms("all_reduce", 1.0, n, "tree")
    ring_steps, ring_sent = collectives.cost_terms("all_reduce", 1.0, n, "ring")
    y = top + (1 if side_by_side else 2) * panel_h + 20
    notes = [
        "Each half is summed up its tree to the root (bold), then sent back down "
        "(arrows go both ways).",
        f"Latency: 2⌈log2 {n}⌉ = {steps} steps, against the ring's 2({n}−1) = {ring_steps}. "
        f"Bytes each GPU sends: {sent:.3g} × the buffer, against the ring's {ring_sent:.3g} ×.",
        "Shaded: a GPU that forwards in that tree. With an even count, no GPU forwards in both.",
    ]
    for note in notes:
        y = c.lines(30, y, wrap(note, width - 60, SMALL), size=SMALL) + 4
    return c.svg()


def halving_doubling(n: int = 4) -> str:
    """Rabenseifner's all-reduce on ``n`` GPUs: pairs exchange halves, then double back.

    One row per step: each GPU's strip of ``n`` chunk cells after the step (own
    gradients, partial sum, full sum), and the partner it exchanged with. While
    halving, partners are ``n/2, n/4, … 1`` apart and swap half of what each is
    still summing; while doubling, the pairs repeat in reverse and swap finished
    chunks. From :func:`scaleout.collectives.halving_doubling_schedule`
    (Thakur et al. 2005, Sec. 4); ``2 log2 n`` steps, ``2(n−1)/n`` of the buffer.
    """
    n = check_int("n", n, minimum=2, maximum=_MAX_GPUS)
    sched = collectives.halving_doubling_schedule(n)  # checks n is a power of two
    cell = 17 if n == 8 else 26
    col_w = n * cell + 10
    gap = 16 if n == 8 else 28
    left = 230
    width = max(760, left + n * col_w + (n - 1) * gap + 20)
    row_h = 64
    top = 94
    height = top + 50 + (sched.steps + 1) * row_h + 60
    c = Canvas(width, height, f"Halving-doubling all-reduce on {n} GPUs")
    heading(c, f"Halving-doubling all-reduce on {n} GPUs (Rabenseifner)")
    sub = (f"Each GPU's {n} chunks (left to right) after every step: partners swap half of "
           "what they still sum, then double back.")
    c.lines(width / 2, 58, wrap(sub, width - 40, SMALL), size=SMALL, anchor="middle")
    xs = [left + g * (col_w + gap) for g in range(n)]
    for g in range(n):
        c.box(xs[g], top, col_w, 32, f"GPU {g}", fill="#333333", bold=True, size=SMALL)
    for s in range(sched.steps + 1):
        y = top + 50 + s * row_h
        counts = sched.contributors[s]
        if s == 0:
            label = ["start", "own gradients"]
        else:
            phase = sched.phase[s - 1]
            dist = abs(sched.sends[s - 1][0][1] - sched.sends[s - 1][0][0])
            moved = len(sched.sends[s - 1][0][2])
            what = "halving" if phase == "reduce-scatter" else "doubling"
            label = [f"{what}, {dist} apart", f"send {moved} of {n} chunks"]
        c.lines(20, y + 18, label, size=SMALL, gap=1.25,
                fill=PHASE_COLORS.get(sched.phase[s - 1], LINE) if s else LINE, bold=False)
        for g in range(n):
            for ch in range(n):
                k = int(counts[g, ch])
                c.rect(xs[g] + 5 + ch * cell, y, cell - 2, 28, fill=_cell_fill(k, n),
                       stroke="#777777", stroke_width=1, rx=1)
            if s:
                partner = next(d for src, d, _ in sched.sends[s - 1] if src == g)
                c.text(xs[g] + col_w / 2, y + 48, f"↔ GPU {partner}", anchor="middle",
                       size=SMALL if n < 8 else 13, fill=GREY)
    c.legend(20, height - 24, [("own gradients only", "white"), ("partial sum", PARTIAL),
                               ("full sum", FULL)], size=SMALL)
    return c.svg()
