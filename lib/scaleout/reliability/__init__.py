"""Reliability at scale: failures, checkpoints, restarts and goodput.

A synchronous training job is a chain: when one of its GPUs, links or hosts
fails, every GPU stops. With independent failures the job's failure rate is
the sum of its parts' rates, so its mean time between failures (MTBF) falls
as ``1/N`` with the number of GPUs. The job survives by saving its state
(checkpointing) every ``tau`` seconds of work, at a cost of ``delta`` seconds,
and restarting from the last save after each failure.

The package (every name below is importable from ``scaleout.reliability``)
--------------------------------------------------------------------------
===============  ==============================================================
``rates``        ``data/failures.toml`` (published reports); a cluster's
                 failure rate, :func:`mtbf_h`, failures per day, idle GPU-hours
``checkpoints``  :func:`checkpoint_bytes`, :func:`checkpoint_plan` (writers, times)
``intervals``    Young's and Daly's optimal intervals, the exact optimum;
                 :func:`goodput` (Daly's exact model) and its first order
``recovery``     restart, hot spares, elastic shrink: :func:`compare_recovery`
``montecarlo``   :func:`simulate`, :func:`simulate_timeline` and the exact
                 finite-horizon mean they are checked against
``stragglers``   the slowest of ``n`` GPUs: step time, Monte Carlo, slow hosts
===============  ==============================================================

Each module's docstring names its sources. Times are seconds (``_s``) unless a name
says hours (``_h``); rates are per hour (``_per_h``). Taught in
``notebooks/11_fault_tolerance.ipynb``.
"""

from __future__ import annotations

from .checkpoints import LAYOUTS, CheckpointPlan, checkpoint_bytes, checkpoint_plan
from .checkpoints import _params as _params  # scaleout.synthesis checks its input with it
from .intervals import (
    daly_interval_s,
    exact_optimal_interval_s,
    expected_lost_work_s,
    expected_run_time_s,
    goodput,
    goodput_first_order,
    lambert_w0,
    log10_expected_run_time_s,
    segment_wall_time_s,
    young_interval_s,
)
from .montecarlo import (
    RunTimeline,
    SimulationResult,
    expected_goodput_finite,
    simulate,
    simulate_timeline,
)
from .rates import (
    COUNTED_PER,
    MEANINGS,
    PARTS,
    Failure,
    FailureData,
    Figure,
    Inventory,
    Study,
    cluster_failure_rate_per_h,
    failure_breakdown_per_h,
    failures,
    failures_per_day,
    figure,
    figures,
    idle_gpu_hours,
    inventory,
    load_failures,
    mtbf_h,
    published_share_mismatches,
    studies,
    study,
    study_names,
    unit_rate_per_hour,
)
from .rates import _as_study_list as _as_study_list  # likewise
from .recovery import (
    RECOVERY_OPTIONS,
    RecoveryResult,
    compare_recovery,
    elastic_capacity,
    elastic_viable,
    restart_time_s,
    spares_needed,
)
from .stragglers import (
    expected_max_exponential,
    expected_max_normal,
    harmonic_number,
    slow_host_step_factor,
    straggler_step_mc,
    straggler_step_time_s,
)

__all__ = [
    "COUNTED_PER",
    "LAYOUTS",
    "MEANINGS",
    "PARTS",
    "RECOVERY_OPTIONS",
    "CheckpointPlan",
    "Failure",
    "FailureData",
    "Figure",
    "Inventory",
    "RecoveryResult",
    "RunTimeline",
    "SimulationResult",
    "Study",
    "checkpoint_bytes",
    "checkpoint_plan",
    "cluster_failure_rate_per_h",
    "compare_recovery",
    "daly_interval_s",
    "elastic_capacity",
    "elastic_viable",
    "exact_optimal_interval_s",
    "expected_goodput_finite",
    "expected_lost_work_s",
    "expected_max_exponential",
    "expected_max_normal",
    "expected_run_time_s",
    "failure_breakdown_per_h",
    "failures",
    "failures_per_day",
    "figure",
    "figures",
    "goodput",
    "goodput_first_order",
    "harmonic_number",
    "idle_gpu_hours",
    "inventory",
    "lambert_w0",
    "load_failures",
    "log10_expected_run_time_s",
    "mtbf_h",
    "published_share_mismatches",
    "restart_time_s",
    "segment_wall_time_s",
    "simulate",
    "simulate_timeline",
    "slow_host_step_factor",
    "spares_needed",
    "straggler_step_mc",
    "straggler_step_time_s",
    "studies",
    "study",
    "study_names",
    "unit_rate_per_hour",
    "young_interval_s",
]
