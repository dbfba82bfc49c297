"""The planner's efficiency parameters: one set for every model, GPU and layout."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..checks import check_positive, check_range

__all__ = ["DEFAULT_CALIBRATION", "Calibration"]


@dataclass(frozen=True)
class Calibration:
    """The planner's efficiency parameters: one set for every model, GPU and layout.

    Attributes
    ----------
    gemm_efficiency
        ``η_max``: the share of peak FLOP/s large matrix multiplies reach.
    gemm_half_dim
        ``x_half``: the matrix dimension at which they reach half of ``η_max``.
    nonmatmul_traffic
        ``κ``: HBM bytes moved by the memory-bound operations of a forward and
        backward pass, per byte of activations a layer stores.
    collective_efficiency
        Share of a link's line rate that collectives and sends reach.
    dp_overlap
        Share of the data-parallel communication hidden behind computation: 0 as in
        Megatron-LM 2021/2022, where the gradient all-reduce follows the backward pass.
    source
        Where the numbers come from.
    reference_gpu
        The GPU the fitted tables ran on. ``η_max`` is that GPU's; on another GPU (and in
        FP8) it is scaled by the ratio of the measured maximum achievable matmul rates over
        the peaks (:meth:`achievable_ratio`).
    """

    gemm_efficiency: float = 0.74
    gemm_half_dim: float = 50.0
    nonmatmul_traffic: float = 8.0
    collective_efficiency: float = 0.9
    dp_overlap: float = 0.0
    source: str = ("fitted by scaleout.plan.fit_calibration() to the training sources, "
                   "Korthikanti et al. 2022 Table 5 and Narayanan et al. 2021 Table 1 "
                   "(Megatron-LM on A100); every other published source is held out")
    reference_gpu: str = "A100-SXM4-80GB"

    def __post_init__(self) -> None:
        check_range("gemm_efficiency", self.gemm_efficiency, 0.01, 1.0)
        check_positive("gemm_half_dim", self.gemm_half_dim, allow_zero=True)
        check_positive("nonmatmul_traffic", self.nonmatmul_traffic, allow_zero=True)
        check_range("collective_efficiency", self.collective_efficiency, 0.01, 1.0)
        check_range("dp_overlap", self.dp_overlap, 0.0, 1.0)

    def achievable_ratio(self, gpu, fmt: str = "bf16") -> float:
        """How much nearer to (or further from) its peak ``gpu`` multiplies in ``fmt`` than
        :attr:`reference_gpu` does in BF16: the ratio of their measured maximum achievable
        matmul shares (:meth:`scaleout.catalog.GPU.achievable_share`, stas00/ml-engineering's
        MAMF table). An FP8 rate not measured falls back to the GPU's BF16 share; a GPU with
        no measurement at all keeps the reference's share (ratio 1)."""
        from .. import catalog

        g = catalog.gpu(gpu)
        ref = catalog.gpu(self.reference_gpu).achievable_share("bf16")
        share = g.achievable_share(fmt)
        if share is None and fmt == "fp8":
            share = g.achievable_share("bf16")
        if share is None or ref is None:
            return 1.0
        return share / ref

    def matmul_efficiency(self, dim):
        """``η(x) = η_max x / (x + x_half)``: the share of peak at matrix dimension ``x``."""
        dim = np.asarray(dim, dtype=float)
        return self.gemm_efficiency * dim / (dim + self.gemm_half_dim)


DEFAULT_CALIBRATION = Calibration()
