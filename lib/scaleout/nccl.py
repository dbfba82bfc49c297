"""Collectives as NCCL runs them: its own cost model, and the algorithm it picks for each call.

NCCL does not run one algorithm. For every call it predicts the time of each algorithm and
protocol it may use, ``latency + bytes / bandwidth``, and runs the fastest (``ncclTopoTuneModel``
and ``ncclTopoGetAlgoTime`` in ``src/graph/tuning.cc``). This module implements that model with
NCCL's own constants (``data/nccl_tuning.toml``, copied from the source with its commit):

* **Ring** (every collective): ``2(n-1)`` steps for all-reduce, ``n-1`` for all-gather and
  reduce-scatter. The steps inside a node pay the NVLink (or PCIe) latency, at least the cost
  of posting a network operation once the ring leaves the node; only ``N - 1`` steps (``2(N-1)``
  for all-reduce) of ``N`` nodes cross the network. So a flat ring's latency grows with the
  number of GPUs, not of nodes: 1,536 GPUs cost 1,344 NVLink steps and 191 network steps per
  all-gather.
* **Tree** (all-reduce only; NCCL has no tree all-gather or reduce-scatter): a chain inside each
  node and a binary tree across nodes, ``2((ppn - 1) intra + log2(N) net)`` steps.
* **PAT** (all-gather and reduce-scatter with one GPU per node).
* **NVLS** (Hopper and later, GPUs on NVSwitch): the switch reduces and multicasts, so a GPU
  sends its buffer once and receives the result once, instead of ``2(n-1)/n`` of it; at NCCL's
  ``nvlsEfficiency`` of NVLink. Inside one node for all three collectives; across nodes as
  NVLS-Tree (all-reduce: NVLS inside, a tree over the nodes' network ports).
* **Protocols**: LL (lowest latency, half the bandwidth, capped), LL128 (0.92 of it), Simple
  (full bandwidth, highest latency).

Bandwidth. NCCL's topology search finds channels and their speed; here the bus bandwidth is
what the hardware gives one GPU: its NVLink inside a node, and across nodes the node's network
ports shared by its GPUs (a ring with one channel per NIC moves a node's data over all of them:
``min(NVLink, GPUs per node × NIC)``), at the calibrated share of line rate. Left out: NVLS and
CollNet (in-network reduction, NVLink SHARP and InfiniBand SHARP), which need switch support the
catalog does not record.

Taught in notebook 07; the planner (:mod:`scaleout.plan`) uses it for the collectives a
framework issues.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .catalog import DATA_DIR, read_toml
from .checks import check_array, check_choice, check_int, check_positive

__all__ = [
    "ALGORITHMS",
    "GENERATIONS",
    "OPS",
    "PROTOCOLS",
    "NcclTime",
    "collective_time",
    "generation",
    "has_nvls",
    "times",
    "tuning",
]

OPS = ("all_reduce", "all_gather", "reduce_scatter")
ALGORITHMS = ("ring", "tree", "pat", "nvls", "nvls_tree")
PROTOCOLS = ("LL", "LL128", "Simple")
#: NCCL's GPU generations (compute capability 7.x, 8.x, 9.x, 10.x).
GENERATIONS = ("volta", "ampere", "hopper", "blackwell")
_TUNING_FILE = DATA_DIR / "nccl_tuning.toml"


@functools.cache
def tuning() -> dict[str, Any]:
    """NCCL's tuning constants (``data/nccl_tuning.toml``), checked on load."""
    raw = read_toml(_TUNING_FILE, "NCCL tuning constants")
    where = _TUNING_FILE.name
    for table in ("base_latency_us", "hw_latency_us", "net_overhead_us", "ll_max_gbytes_s",
                  "factors", "tree_correction"):
        if table not in raw:
            raise ValueError(f"{where}: missing table [{table}]")
    for algo, row in raw["base_latency_us"].items():
        if len(row) != 3 or any(not math.isfinite(x) or x < 0 for x in row):
            raise ValueError(f"{where}: [base_latency_us] {algo} must be 3 latencies >= 0")
    for hw in ("nvlink", "pci", "net"):
        for algo in ALGORITHMS:
            row = raw["hw_latency_us"].get(hw, {}).get(algo)
            if row is None or len(row) != 3 or any(x < 0 for x in row):
                raise ValueError(f"{where}: [hw_latency_us.{hw}] {algo} must be 3 latencies >= 0")
    for proto in PROTOCOLS:
        if len(raw["tree_correction"].get(proto, ())) != 24:
            raise ValueError(f"{where}: [tree_correction] {proto} must hold 24 factors")
    return raw


def generation(architecture: str) -> str:
    """NCCL's generation for a catalog GPU architecture (``"Hopper"`` → ``"hopper"``).

    AMD's RCCL is a fork of NCCL with the same model; CDNA 3 (MI300X) is taken as Hopper-class,
    an assumption: RCCL's own constants are not in the catalog.
    """
    arch = str(architecture).strip().casefold()
    if arch in ("", "cdna 3"):
        return "hopper"
    return check_choice("architecture", arch, GENERATIONS)


def has_nvls(gpu) -> bool:
    """Whether a catalog GPU's scale-up domain runs NVLS: NVIDIA Hopper or Blackwell GPUs on
    NVSwitch (HGX boards and NVL72 racks), whose switches reduce and multicast (NVLink SHARP)."""
    return gpu.vendor == "NVIDIA" and gpu.architecture in ("Hopper", "Blackwell")


@dataclass(frozen=True)
class NcclTime:
    """Predicted seconds of one collective per size, and what NCCL picked for each."""

    seconds: np.ndarray
    algorithm: np.ndarray
    protocol: np.ndarray
    latency_s: np.ndarray


def _latency_us(op: str, algo: str, proto: int, n: int, nodes: int, ppn: int, intra_hw: str,
                host: str, net_latency_us: float = 0.0) -> float:
    """``comm->latencies[coll][algo][proto]`` of ``ncclTopoTuneModel``; ``net_latency_us`` is
    the network's own latency (``graphs[a]->latencyInter``, which the network plugin
    reports), added to every network step, twice for Simple (the flush)."""
    t = tuning()
    base = t["base_latency_us"][algo][proto]
    hw = t["hw_latency_us"]
    intra = hw[intra_hw][algo][proto]
    inter = (hw["net"]["tree"][proto] if ppn == 1 else hw["net"][algo][proto])
    inter += net_latency_us * (2 if PROTOCOLS[proto] == "Simple" else 1)
    steps = 2 * (n - 1) if op == "all_reduce" else n - 1
    if algo == "ring":
        overhead = 0.0
        if nodes > 1:
            overhead = t["net_overhead_us"][host]
            if PROTOCOLS[proto] == "Simple":
                overhead *= t["net_overhead_us"]["simple_factor"]
        intra = max(intra, overhead)
        n_inter = 0 if nodes == 1 else (2 * (nodes - 1) if op == "all_reduce" else nodes - 1)
        return base + (steps - n_inter) * intra + n_inter * inter
    if algo == "tree":
        return base + 2 * ((ppn - 1) * intra + int(math.log2(nodes)) * inter)
    if algo == "nvls":  # NCCL sets, not adds: no base latency
        return intra + (inter if nodes > 1 else 0.0)
    if algo == "nvls_tree":
        return base + intra + 2 * int(math.log2(nodes)) * inter
    # PAT (all-gather and reduce-scatter, one GPU per node)
    return base + int(math.log2(nodes)) * (inter / 3.5) + n * 2.8


def _bus_bandwidth(op: str, algo: str, proto: int, nodes: int, gen: str, host: str,
                   bus_gbytes_s: float, tree_pattern: bool) -> float:
    """``comm->bandwidths[coll][algo][proto]`` before the bus-to-algorithm conversion."""
    t = tuning()
    f = t["factors"]
    col = 0 if nodes == 1 else (1 if nodes == 2 else 2)
    ll_max = t["ll_max_gbytes_s"][gen if nodes == 1 else host][col]
    bw = bus_gbytes_s
    name = PROTOCOLS[proto]
    if algo == "ring" and name == "LL":
        bw = min(ll_max, bw * f["ring_ll"])
    if algo == "ring" and name == "LL128":
        bw = bw * f["ring_ll128"]
    if algo == "tree" and op == "all_reduce":
        bw = bw * f["tree_allreduce"]
    if algo == "tree" and name == "LL":
        bw = min(bw * f["tree_ll"], ll_max)
    if algo == "tree" and name == "LL128":
        bw = bw * (f["tree_ll128_one_node"] if nodes == 1 else f["tree_ll128_nodes"])
    if algo == "tree" and tree_pattern and nodes > 1:
        bw = bw * f["tree_pattern"]
    if algo == "pat":
        bw = bw * f["pat"]
    return bw


def _candidates(op: str, nodes: int, ppn: int, nvls: bool) -> list[tuple[str, int]]:
    out = [("ring", p) for p in range(3)]
    if op == "all_reduce":
        out += [("tree", p) for p in range(3)]
    elif ppn == 1 and nodes > 1:
        out.append(("pat", 2))  # PAT runs the Simple protocol only
    if nvls and ppn > 1:  # NVLS and NVLS-Tree run Simple only
        if nodes == 1:
            out.append(("nvls", 2))
        elif op == "all_reduce":
            out.append(("nvls_tree", 2))
    return out


def _nvls_bandwidth(op: str, algo: str, nodes: int, ppn: int, gen: str, intra: float,
                    inter: float) -> float:
    """Algorithm bandwidth of NVLS / NVLS-Tree, GB/s: each GPU sends its buffer to the switch
    once and receives the result once (all-reduce), or its share of it (all-gather,
    reduce-scatter: ``(ppn - 1)/ppn``), at ``nvlsEfficiency`` of NVLink; NVLS-Tree is also
    bounded by the node's ports over the tree (twice as fast between two nodes, NCCL's rule)."""
    eff = tuning()["nvls_efficiency"][gen]
    bw = intra * eff * (1.0 if op == "all_reduce" else ppn / max(ppn - 1, 1))
    if algo == "nvls_tree":
        bw = min(bw, ppn * inter * (2.0 if nodes <= 2 else 1.0))
    return bw


def collective_time(op: str, size_bytes, n_gpus: int, gpus_per_node: int, *,
                    intra_gbytes_s: float, inter_gbytes_s: float, architecture: str = "Hopper",
                    intra_hw: str = "nvlink", host: str = "intel", channels: int = 16,
                    tree_pattern: bool = True, nvls: bool = False,
                    node_aggregate: bool = True, net_latency_us: float = 0.0) -> NcclTime:
    """Predicted time of one NCCL collective per size, with the algorithm NCCL would pick.

    Parameters
    ----------
    op
        ``"all_reduce"``, ``"all_gather"`` or ``"reduce_scatter"``; sizes as nccl-tests give
        them (the whole buffer; the gathered output for all-gather).
    size_bytes
        Bytes, a number or an array.
    n_gpus, gpus_per_node
        Ranks in the communicator, and how many of them share a node (the last node may be
        partly filled).
    intra_gbytes_s, inter_gbytes_s
        Bandwidth one GPU gets, GB/s one direction: over its scale-up link, and its network
        port(s) (already derated to what collectives reach).
    architecture
        The GPU's (catalog) architecture: selects LL's bandwidth ceiling.
    intra_hw
        ``"nvlink"`` or ``"pci"``: the hardware of the steps inside a node.
    host
        ``"intel"`` or ``"amd"``: the cost of posting a network operation.
    channels
        NCCL channels, for the ring's plateau rule (16 on a DGX-class node).
    tree_pattern
        Whether the inter-node tree is a real tree (more than two nodes in NCCL's usual case).
    nvls
        Whether the GPUs sit on NVSwitches with NVLink SHARP (Hopper and later): NVLS and
        NVLS-Tree become candidates (:func:`has_nvls`).
    net_latency_us
        The network's own one-way latency, us (a catalog port's ``latency_us``), which NCCL
        adds to every step that crosses it (``latencyInter``): what makes RoCE or kernel TCP
        slower than InfiniBand for small messages.
    node_aggregate
        Whether a ring across nodes moves a node's data over all its GPUs' ports (NCCL's
        topology-aware rings, one channel per NIC: bus bandwidth ``min(NVLink, ppn × port)``,
        what nccl-tests measure) or each GPU's traffic crosses its own port (a flat ring
        whose every hop between nodes carries one GPU's full share: ``min(NVLink, port)``).

    Returns
    -------
    NcclTime
        Seconds, the chosen algorithm and protocol, and the chosen latency, per size.
    """
    op = check_choice("op", op, OPS)
    S = check_array("size_bytes", size_bytes)
    n = check_int("n_gpus", n_gpus)
    g = check_int("gpus_per_node", gpus_per_node)
    check_positive("intra_gbytes_s", intra_gbytes_s)
    check_positive("inter_gbytes_s", inter_gbytes_s)
    check_choice("intra_hw", intra_hw, ("nvlink", "pci"))
    check_choice("host", host, ("intel", "amd"))
    channels = check_int("channels", channels)
    gen = generation(architecture)
    check_positive("net_latency_us", net_latency_us, allow_zero=True)
    return times(op, S, n, g, float(intra_gbytes_s), float(inter_gbytes_s), gen, intra_hw, host,
                 channels, tree_pattern, nvls, node_aggregate, float(net_latency_us))


@functools.lru_cache(maxsize=8192)
def _candidate_table(op: str, n: int, g: int, intra: float, inter: float, gen: str,
                     intra_hw: str, host: str, tree_pattern: bool, nvls: bool,
                     node_aggregate: bool, net_latency_us: float
                     ) -> tuple[tuple[str, str, float, float], ...]:
    """Each candidate's (algorithm, protocol, latency us, algorithm bandwidth GB/s) before the
    size-dependent refinements; cached (a search asks for few groups)."""
    ppn = min(g, n)
    nodes = -(-n // ppn)
    share = ppn if node_aggregate else 1
    bus = intra if nodes == 1 else min(intra, share * inter)
    steps = 2 * (n - 1) if op == "all_reduce" else n - 1
    out = []
    for algo, proto in _candidates(op, nodes, ppn, nvls and gen in ("hopper", "blackwell")):
        if algo.startswith("nvls"):
            bw = _nvls_bandwidth(op, algo, nodes, ppn, gen, intra, inter)
        else:
            bw = _bus_bandwidth(op, algo, proto, nodes, gen, host, bus, tree_pattern)
        if algo == "ring":
            bw = bw * n / steps  # bus bandwidth to algorithm bandwidth
        elif algo == "tree":
            bw = bw * 0.5
        lat = _latency_us(op, algo, proto, n, nodes, ppn, intra_hw, host, net_latency_us)
        out.append((algo, PROTOCOLS[proto], lat, bw))
    return tuple(out)


def times(op: str, size_bytes, n: int, g: int, intra: float, inter: float, gen: str,
          intra_hw: str = "nvlink", host: str = "intel", channels: int = 16,
          tree_pattern: bool = True, nvls: bool = False, node_aggregate: bool = True,
          net_latency_us: float = 0.0, names: bool = True) -> NcclTime:
    """:func:`collective_time` without the input checks, for callers whose arguments are
    already checked (the planner); ``gen`` is NCCL's generation (:func:`generation`).
    ``names=False`` leaves the chosen algorithm and protocol out (the planner needs only the
    seconds)."""
    shape = np.shape(size_bytes)
    S = np.atleast_1d(np.asarray(size_bytes, dtype=float))
    if n == 1:
        zeros = np.zeros_like(S)
        none = np.full(S.shape, "none", dtype=object)
        return NcclTime(zeros.reshape(shape), none.reshape(shape), none.reshape(shape),
                        zeros.reshape(shape))
    ppn = min(g, n)
    nodes = -(-n // ppn)
    t = tuning()
    table = _candidate_table(op, n, g, intra, inter, gen, intra_hw, host, bool(tree_pattern),
                             bool(nvls), bool(node_aggregate), float(net_latency_us))
    stack = np.empty((len(table), S.size))
    lats = np.empty_like(stack)
    for i, (algo, proto, lat, bw) in enumerate(table):
        lat_arr = np.full(S.shape, lat)
        bw_arr = np.full(S.shape, bw)
        if algo == "tree":
            log = np.floor(np.log2(np.maximum(S, 1) / 64)).astype(int)
            inside = (log >= 0) & (log < 23)
            factors = np.asarray(t["tree_correction"][proto])
            bw_arr = np.where(inside, bw * factors[np.clip(log, 0, 23)], bw_arr)
        if algo == "ring" and proto == "Simple" and nodes > 1 and op == "all_reduce":
            plateau = (t["factors"]["ring_simple_plateau_pre_ampere"] if gen == "volta"
                       else t["factors"]["ring_simple_plateau"])
            lat_arr = np.where(S / (channels * n) >= 64, lat * plateau, lat_arr)
        stack[i] = lat_arr + S / (1000.0 * bw_arr)  # microseconds
        lats[i] = lat_arr
    best = np.argmin(stack, axis=0)
    pick = np.take_along_axis(stack, best[None], axis=0)[0] * 1e-6
    lat = np.take_along_axis(lats, best[None], axis=0)[0] * 1e-6
    if names:
        algos = np.array([table[i][0] for i in best], dtype=object)
        protos = np.array([table[i][1] for i in best], dtype=object)
    else:
        algos = protos = np.full(best.shape, "", dtype=object)
    if not shape:
        return NcclTime(pick[0], algos[0], protos[0], lat[0])
    return NcclTime(pick.reshape(shape), algos.reshape(shape), protos.reshape(shape),
                    lat.reshape(shape))


def seconds(op: str, size_bytes, n_gpus, gpus_per_node, intra_gbytes_s: float,
            inter_gbytes_s: float, gen: str, intra_hw: str = "nvlink", host: str = "intel",
            channels: int = 16, tree_pattern: bool = True, nvls: bool = False,
            node_aggregate: bool = True, net_latency_us: float = 0.0) -> np.ndarray:
    """:func:`times`' seconds for arrays of sizes, group sizes and ranks per node at once.

    The same model, written over arrays (one entry per call) so that a search prices every
    plan's collectives in a few numpy operations; a test checks it against :func:`times`
    call by call.
    """
    t = tuning()
    hw, f = t["hw_latency_us"], t["factors"]
    S = np.asarray(size_bytes, dtype=float)
    n = np.asarray(n_gpus, dtype=np.int64)
    S, n = np.broadcast_arrays(S, n)
    g = np.broadcast_to(np.asarray(gpus_per_node, dtype=np.int64), n.shape)
    ppn = np.minimum(g, n)
    nodes = -(-n // np.maximum(ppn, 1))
    multi = nodes > 1
    one_gpu = ppn == 1
    log_nodes = np.floor(np.log2(np.maximum(nodes, 1)))
    all_reduce = op == "all_reduce"
    steps = 2 * (n - 1) if all_reduce else n - 1
    n_inter = np.where(multi, 2 * (nodes - 1) if all_reduce else nodes - 1, 0)
    share = ppn if node_aggregate else 1
    bus = np.where(multi, np.minimum(intra_gbytes_s, share * inter_gbytes_s), intra_gbytes_s)
    col = np.where(nodes == 1, 0, np.where(nodes == 2, 1, 2))
    ll_max = np.where(nodes == 1, np.asarray(t["ll_max_gbytes_s"][gen])[col],
                      np.asarray(t["ll_max_gbytes_s"][host])[col])
    overhead = np.where(multi, t["net_overhead_us"][host], 0.0)
    nvls_ok = nvls and gen in ("hopper", "blackwell")
    best = np.full(S.shape, np.inf)
    for algo in ("ring", "tree", "pat", "nvls", "nvls_tree"):
        for proto in range(3):
            name = PROTOCOLS[proto]
            if algo == "tree" and not all_reduce:
                continue
            if algo in ("pat", "nvls", "nvls_tree") and name != "Simple":
                continue
            base = t["base_latency_us"][algo][proto]
            intra = hw[intra_hw][algo][proto]
            inter = np.where(one_gpu, hw["net"]["tree"][proto], hw["net"][algo][proto])
            inter = inter + net_latency_us * (2 if name == "Simple" else 1)
            if algo == "ring":
                over = overhead * (t["net_overhead_us"]["simple_factor"] if name == "Simple"
                                   else 1.0)
                lat = base + (steps - n_inter) * np.maximum(intra, over) + n_inter * inter
                bw = bus
                if name == "LL":
                    bw = np.minimum(ll_max, bw * f["ring_ll"])
                elif name == "LL128":
                    bw = bw * f["ring_ll128"]
                bw = bw * n / np.maximum(steps, 1)
                ok = np.ones(S.shape, dtype=bool)
                if all_reduce and name == "Simple":
                    plateau = (f["ring_simple_plateau_pre_ampere"] if gen == "volta"
                               else f["ring_simple_plateau"])
                    lat = np.where(multi & (S / (channels * n) >= 64), lat * plateau, lat)
            elif algo == "tree":
                lat = base + 2 * ((ppn - 1) * intra + log_nodes * inter)
                bw = bus * f["tree_allreduce"]
                if name == "LL":
                    bw = np.minimum(bw * f["tree_ll"], ll_max)
                elif name == "LL128":
                    bw = bw * np.where(nodes == 1, f["tree_ll128_one_node"],
                                       f["tree_ll128_nodes"])
                if tree_pattern:
                    bw = np.where(multi, bw * f["tree_pattern"], bw)
                bw = bw * 0.5
                log = np.floor(np.log2(np.maximum(S, 1) / 64)).astype(int)
                factors = np.asarray(t["tree_correction"][name])
                bw = np.where((log >= 0) & (log < 23), bw * factors[np.clip(log, 0, 23)], bw)
                ok = np.ones(S.shape, dtype=bool)
            elif algo == "pat":
                lat = base + log_nodes * (inter / 3.5) + n * 2.8
                bw = bus * f["pat"]
                ok = one_gpu & multi & (not all_reduce)
            else:
                eff = t["nvls_efficiency"][gen]
                nv = intra_gbytes_s * eff * (1.0 if all_reduce
                                             else ppn / np.maximum(ppn - 1, 1))
                if algo == "nvls":
                    lat = intra + np.where(multi, inter, 0.0)
                    bw = nv
                    ok = (nodes == 1) & (ppn > 1) & nvls_ok
                else:
                    lat = base + intra + 2 * log_nodes * inter
                    bw = np.minimum(nv, ppn * inter_gbytes_s * np.where(nodes <= 2, 2.0, 1.0))
                    ok = multi & (ppn > 1) & nvls_ok & all_reduce
                if not nvls_ok:
                    continue
            time_us = lat + S / (1000.0 * bw)
            best = np.where(ok & (time_us < best), time_us, best)
    return np.where(n <= 1, 0.0, best * 1e-6)
