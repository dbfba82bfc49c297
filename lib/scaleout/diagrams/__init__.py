"""Pictures of the mechanisms, as SVG text drawn from the library's own state.

Each function returns one ``<svg>`` element (a ``viewBox`` and ``width="100%"``, so it
fits any container) and draws what a library function computes: the ring all-reduce's
chunks from :func:`scaleout.collectives.ring_schedule`, the pipeline's stages from
:func:`scaleout.pipeline.layer_assignment`, ZeRO's slices from
:func:`scaleout.zero.partition`, a rail layout's cables from
:func:`scaleout.fabric.rail_layout`, and so on. Drawing only; no model logic. In a
notebook: ``display(HTML(diagrams.ring_all_reduce(4, step=2)))``.
"""

from .collectives import halving_doubling, ring_all_reduce, tree_all_reduce
from .hardware import multi_plane, node, rail_optimised, super_node, transceivers
from .parallelism import pipeline_stages, sequence_parallel, tensor_parallel_mlp, zero_stages

__all__ = [
    "halving_doubling",
    "multi_plane",
    "node",
    "pipeline_stages",
    "rail_optimised",
    "ring_all_reduce",
    "sequence_parallel",
    "super_node",
    "tensor_parallel_mlp",
    "transceivers",
    "tree_all_reduce",
    "zero_stages",
]
