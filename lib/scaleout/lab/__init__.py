"""The lab: the workbook's formulas against real engines (JAX's SPMD compiler, Open MPI).

Everything else in :mod:`scaleout` is a model. This sub-package runs the real thing on
any laptop, with the same code a cluster runs:

=================  ==========================================================================
module             what it does
=================  ==========================================================================
``devices``        ``XLA_FLAGS`` for N virtual CPU devices, set before JAX is imported;
                   a persistent compilation cache
``model``          a small GPT in plain ``jax.numpy`` (optionally one MoE layer), Adam, a step
``shardings``      DP, ZeRO-1/2/3 (FSDP), Megatron TP, SP, 2-D TP × DP, EP over a device mesh
``hlo``            every collective of a compiled program (kind, type, bytes, group) and its
                   per-device memory (``memory_analysis``); pure text parsing
``engine``         compile a sharded training step, read its collectives, run a few steps
``compare``        the compiled collectives and memory next to the workbook's formulas
``mpibench``       an MPI all-reduce benchmark printing nccl-tests' text format
``calibrate``      α and β per collective and scope from logs; a network file the planner reads
=================  ==========================================================================

JAX and mpi4py are imported only inside the functions that need them, so
``import scaleout`` (and this package) stays fast and works where they are not installed.
Taught in ``notebooks/15_measure_it_yourself.ipynb``.
"""

from __future__ import annotations

__all__ = ["calibrate", "compare", "devices", "engine", "hlo", "model", "mpibench",
           "shardings"]
