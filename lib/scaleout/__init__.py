"""scaleout: the library behind the Scale-Out Workbook.

One module per concept, in the order the workbook walks them:

=============  =====================================================  ===========
module         what it models                                         notebook
=============  =====================================================  ===========
``units``      bytes/bits, GB/GiB, Gb/s vs GB/s, per direction        00, 01
``checks``     input checks that raise clear ``ValueError`` s         all
``catalog``    GPUs, scale-up systems and models from ``data/``       01, 02
``glossary``   the walk, its terms (English/Korean), concept map      00
``scaling``    GPUs needed merely to hold a model; domain capacity    01
``memory``     parameters, ZeRO model state, activations per GPU      01, 02
``compute``    FLOPs, MFU/HFU, training time                          01, 02
``collectives``
               α-β cost of all-reduce and its relatives by algorithm; 07
               bandwidth lower bound, algbw vs busbw, crossover sizes
``calibration``
               nccl-tests / rccl-tests logs parsed and checked;       07
               α and β fitted to them
``data_parallel``
               gradient all-reduce on a fabric, buckets and overlap,  03
               weak-scaling efficiency
``tensor_parallel``
               column/row split, 8bsh(t-1)/t traffic, one layer's     04
               compute vs communication, sequence parallelism
``pipeline``   pipeline schedules simulated (GPipe, 1F1B, interleaved,  05
               zero-bubble); bubble, activations in flight
``zero``       ZeRO stages: 2Ψ/3Ψ traffic and its time; Table 1       06
``layout``     a parallel layout (``Plan``) and the one table of its  02, 05, 08
               validity rules (``RULES``)
``nccl``       NCCL's own cost model (tuning.cc): algorithm and       07, 08
               protocol choice, latency, bandwidth per collective
``plan``       (package) a layout's memory and step time as the       08
               frameworks run it (presets, overlaps, NCCL-priced
               collectives, hybrid sharding); the vectorised search;
               published runs, cross-validation, explanations
``configs``    Hugging Face configs in; Megatron-LM, torchtitan and   08
               DeepSpeed settings in and out
``moe``        mixtures of experts: expert parallelism, the all-to-  13
               all on NVLink vs RDMA, node-limited routing, load
               and capacity, expert memory, parallel folding
``context_parallel``
               ring attention and all-to-all (Ulysses) CP;            14
               activations against sequence length; CP vs TP
``roofline``   ridge points of every GPU and link; the parts of a    14
               step on the roofline; what bounds a step
``fabric``     (package: clos, switches, planes, rails, graph,         09
               traffic, transports) Clos tiers, radix, planes, rails:
               switches, links, optics link groups, bisection, hops;
               ECMP vs spraying; RDMA/TCP latency on a fabric
``congestion`` incast, PFC pauses and head-of-line blocking, ECN and      07, 09
               DCQCN, receiver credits; go-back-N; the mechanisms
``optics``     optical modules and copper cables: reach, lanes and     10
               fibres at 112G/224G, pJ/bit, a fabric's optics bill
``reliability``
               (package: rates, checkpoints, intervals, recovery,     11
               montecarlo, stragglers) failure rates from published
               reports, cluster MTBF, checkpoints, Young/Daly
               intervals, goodput, spares and elastic shrink,
               Monte-Carlo runs, stragglers
``synthesis``  memory vs message semantics; scale-up domain designs;  12
               best plan per domain size; one cluster plan (fabric,
               optics, failures, days); design for a deadline
``power``      a GPU as deployed (its system's published power),      10, reports
               switch boxes, optics, PUE; the optics' share
``costs``      two views never added: cloud (GPU-hours × price) and   10, 12, reports
               owned (amortised capital + facility energy)
``report``     papermill reports rendered to HTML; YAML sweeps        reports
``kernels``    the Jupyter kernels reports and tests start, over      reports
               private Unix sockets (no TCP port races)
``parameters`` every notebook's parameter rules, checked before any   all
               cell computes (the report command uses the same)
``verdict``    the cluster plan's verdict and memory headroom         reports
``lab``        real engines: a GPT sharded by JAX's SPMD compiler,    15
               collectives and memory from compiled HLO against the
               formulas; an MPI benchmark; calibrate from your logs
``widgets``    ipywidgets explorers (no model logic)                  00-15
``diagrams``   pictures of the mechanisms as SVG, drawn from the      04-12
               library's own state (ring steps, trees, ZeRO slices)
``plotting``   matplotlib and SVG figures (no model logic)            00-15
``svgchart``   tiny SVG charts for fast widget redraws                00-15
``render``     (package) HTML tables for notebooks, explorers and     all
               reports
``formatting`` how every number reads (significant figures, units,   all
               separators, money)
``selfcheck``  a notebook's closing checks as sentences               all
``fonts``      a CJK font for matplotlib's Korean labels              all
=============  =====================================================  ===========

Naming guide
------------
Symbols follow Megatron-LM's papers (Shoeybi et al. 2019; Narayanan et al. 2021; Korthikanti et
al. 2022) wherever the library uses them across modules:

====  ===============================  ====  ==================================================
``b``  micro-batch size (sequences)    ``t``  tensor-parallel size (``tp`` in code)
``s``  sequence length (tokens)        ``p``  pipeline-parallel size (``pp``)
``h``  hidden size                     ``d``  data-parallel size (``dp``)
``a``  attention heads                 ``v``  model chunks per GPU (interleaving)
``l``  layers                          ``m``  micro-batches per replica per iteration
``V``  vocabulary                      ``B``  global batch (sequences)
``Ψ``  parameters (ZeRO's notation)    ``n``  GPUs in a group
====  ===============================  ====  ==================================================

Names carry their unit: ``_s`` seconds, ``_us`` microseconds, ``_bytes`` bytes, ``_gb`` /
``_gib`` decimal / binary gigabytes, ``_gbps`` gigabits per second, ``_gbytes_s`` gigabytes per
second, ``_w`` watts, ``_m`` metres; bandwidths are one direction unless the name says
``_bidir``. Conversions live in :mod:`scaleout.units`. Arrays of many layouts carry the same
suffixes in their keys (``step_s``, ``memory_bytes``).
"""

import importlib
import pkgutil

from . import catalog, checks, compute, memory, units

__version__ = "0.1.0"
#: Every module and subpackage of the library (``scaleout.plan``, ``scaleout.fabric``, ...).
MODULES = tuple(sorted(m.name for m in pkgutil.iter_modules(__path__)
                       if not m.name.startswith("_")))
__all__ = [  # the modules, as MODULES lists them (a test keeps the two equal)
    "calibration",
    "catalog",
    "checks",
    "collectives",
    "compute",
    "configs",
    "congestion",
    "context_parallel",
    "costs",
    "data_parallel",
    "diagrams",
    "fabric",
    "fonts",
    "formatting",
    "glossary",
    "kernels",
    "lab",
    "layout",
    "memory",
    "moe",
    "nccl",
    "optics",
    "parameters",
    "pipeline",
    "plan",
    "plotting",
    "power",
    "reliability",
    "render",
    "report",
    "roofline",
    "scaling",
    "selfcheck",
    "svgchart",
    "synthesis",
    "tensor_parallel",
    "units",
    "verdict",
    "widgets",
    "zero",
]


def __getattr__(name: str):
    """``import scaleout; scaleout.plan`` works: a module is imported when first used, so
    ``import scaleout`` stays fast."""
    if name in MODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'scaleout' has no attribute {name!r}")
