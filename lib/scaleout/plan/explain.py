"""Plain sentences about a search: why the best plan wins and what the runners-up give up."""

from __future__ import annotations

from collections.abc import Mapping

from .. import roofline
from ..collectives import NodeNetwork
from ..layout import Plan
from ..units import GIB
from .search import SearchResult
from .step import STEP_PARTS

__all__ = ["PART_WORDS", "bound", "explain"]

#: Each step part in words, for explanations, legends and tables.
PART_WORDS = {
    "forward": "forward compute", "backward": "backward compute",
    "recompute": "recomputation", "tp_comm": "tensor-parallel all-reduces",
    "cp_comm": "ring-attention exchange", "ep_comm": "expert all-to-alls",
    "bubble": "pipeline bubble", "p2p": "pipeline sends", "dp_comm": "data-parallel/ZeRO "
    "communication", "optimizer": "optimizer step",
}


def _link_name(link) -> str:
    return str(getattr(link, "name", "") or "network")


def bound(step: Mapping[str, float], plan: Plan, network: NodeNetwork
          ) -> tuple[str, float, str]:
    """What bounds one plan's step (:func:`scaleout.roofline.bound_by`): its computation
    (forward, backward, recomputation), or what it waits on, each part named by the link it
    crosses: ``"bound by the InfiniBand NDR all-to-all (41% of the step), not by compute
    (50%)"``. ``step`` maps :data:`~scaleout.plan.STEP_PARTS` to seconds."""
    gpn = network.gpus_per_node
    inside, across = _link_name(network.intra), _link_name(network.inter)
    parts = {"compute": sum(float(step[p]) for p in ("forward", "backward", "recompute"))}
    kinds = {"compute": "compute"}
    where = {
        "tp_comm": (plan.tp <= gpn, "tensor-parallel all-reduces"),
        "cp_comm": (plan.tp * plan.cp <= gpn, "ring-attention exchange"),
        "ep_comm": (plan.ep <= gpn, "all-to-all"),
        "p2p": (plan.tp * plan.cp * plan.dp < gpn, "pipeline sends"),
        "dp_comm": (plan.tp * plan.cp * plan.dp <= gpn, "data-parallel collectives"),
    }
    for p in STEP_PARTS:
        if p in parts or p in ("forward", "backward", "recompute"):
            continue
        parts[p] = float(step[p])
        if p in where:
            in_node, words = where[p]
            kinds[p] = f"the {inside if in_node else across} {words}"
        else:
            kinds[p] = {"bubble": "the pipeline bubble",
                        "optimizer": "the optimizer's HBM traffic"}.get(p, PART_WORDS[p])
    return roofline.bound_by(parts, kinds)


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
    winner = result.plan(0)
    sentence = bound({p: float(seconds[p][best]) for p in STEP_PARTS}, winner,
                     result.network)[2]
    lines.append(f"It is {sentence}.")
    gpn = result.network.gpus_per_node
    t = int(a["tp"][best])
    more = ""
    if winner.cp > 1:
        more += f"; context parallelism {winner.cp} splits each sequence"
    if winner.ep > 1:
        nodes = "inside a node" if winner.ep <= gpn else f"over {winner.ep // gpn} nodes"
        more += (f"; expert parallelism {winner.ep} spreads the experts {nodes} "
                 f"({winner.edp} cop{'y' if winner.edp == 1 else 'ies'} of each)")
    lines.append(
        f"Tensor parallelism {t} {'stays inside' if t <= gpn else 'crosses'} the {gpn}-GPU "
        f"NVLink domain; {int(a['pp'][best])} pipeline stage(s) split the layers; "
        f"{int(a['dp'][best])} data-parallel replica(s) split the batch{more}.")
    for rank in range(1, min(k + 1, result.n_fit)):
        i = result.order[rank]
        other = float(a["step_s"][i])
        deltas = sorted(((float(seconds[p][i]) - float(seconds[p][best]), p)
                         for p in STEP_PARTS), reverse=True)
        worse = [f"+{d:.2g} s {PART_WORDS[p]}" for d, p in deltas[:2] if d > 0.001 * step]
        lines.append(f"#{rank + 1} {result.plan(rank).label}: {100 * (other / step - 1):.1f}% "
                     f"slower" + (f" ({', '.join(worse)})" if worse else "") + ".")
    return "\n".join(lines)


