"""Plain sentences about a search: why the best plan wins and what the runners-up give up."""

from __future__ import annotations

from ..units import GIB
from .search import SearchResult
from .step import STEP_PARTS

__all__ = ["PART_WORDS", "explain"]

#: Each step part in words, for explanations, legends and tables.
PART_WORDS = {
    "forward": "forward compute", "backward": "backward compute",
    "recompute": "recomputation", "tp_comm": "tensor-parallel all-reduces",
    "bubble": "pipeline bubble", "p2p": "pipeline sends", "dp_comm": "data-parallel/ZeRO "
    "communication", "optimizer": "optimizer step",
}


def explain(result: SearchResult, k: int = 3) -> str:
    """Plain sentences: why the best plan wins and what the next ``k`` give up.

    The best plan's step is broken into its parts (the biggest first); each
    runner-up is compared part by part and the parts that grew most are named.
    """
    if not result.n_fit:
        return "No plan fits."
    a = result.arrays
    best = result.order[0]
    step = float(a["step_s"][best])
    lines = [f"Best: {result.plan(0).label} — {step:.3g} s per iteration, "
             f"MFU {100 * float(a['mfu'][best]):.1f}%, "
             f"{float(a['memory_bytes'][best]) / GIB:.1f} of {a['capacity_bytes'][best] / GIB:.0f}"
             f" GiB per GPU."]
    seconds = {p: a[f"{p}_s"] for p in STEP_PARTS}
    parts = sorted(STEP_PARTS, key=lambda p: -float(seconds[p][best]))
    shares = ", ".join(f"{PART_WORDS[p]} {100 * float(seconds[p][best]) / step:.0f}%"
                       for p in parts if float(seconds[p][best]) / step >= 0.005)
    lines.append(f"Its time goes to: {shares}.")
    gpn = result.network.gpus_per_node
    t = int(a["tp"][best])
    lines.append(
        f"Tensor parallelism {t} {'stays inside' if t <= gpn else 'crosses'} the {gpn}-GPU "
        f"NVLink domain; {int(a['pp'][best])} pipeline stage(s) split the layers; "
        f"{int(a['dp'][best])} data-parallel replica(s) split the batch.")
    for rank in range(1, min(k + 1, result.n_fit)):
        i = result.order[rank]
        other = float(a["step_s"][i])
        deltas = sorted(((float(seconds[p][i]) - float(seconds[p][best]), p)
                         for p in STEP_PARTS), reverse=True)
        worse = [f"+{d:.2g} s {PART_WORDS[p]}" for d, p in deltas[:2] if d > 0.001 * step]
        lines.append(f"#{rank + 1} {result.plan(rank).label}: {100 * (other / step - 1):.1f}% "
                     f"slower" + (f" ({', '.join(worse)})" if worse else "") + ".")
    return "\n".join(lines)


