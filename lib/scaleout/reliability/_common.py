"""Input checks and output shaping that every module of :mod:`scaleout.reliability` shares."""

from __future__ import annotations

import numpy as np

from ..checks import check_array

#: Appended to a bad MTBF's message.
_MTBF_HINT = ": a mean time between failures is a positive duration"


def _check_gpus(n_gpus, name: str = "n_gpus") -> np.ndarray:
    """GPU counts as a float array; an empty cluster (or a fraction) is a clear error."""
    try:
        return check_array(name, n_gpus, integer=True, minimum=1)
    except ValueError as exc:
        raise ValueError(f"{exc}: an empty cluster has no GPUs to fail"
                         if "at most" not in str(exc) else str(exc)) from None


def _nonneg(name: str, value):
    """``value`` as a float array if every element is a finite number >= 0 (within its bound)."""
    return check_array(name, value, allow_zero=True)


def _pos(name: str, value, what: str = ""):
    """``value`` as a float array if every element is a finite number > 0 (within its bound)."""
    try:
        return check_array(name, value, allow_zero=False)
    except ValueError as exc:
        raise ValueError(f"{exc}{what}") from None


def _out(x):
    """A 0-d array as a float, anything else unchanged."""
    return float(x) if np.ndim(x) == 0 else x

