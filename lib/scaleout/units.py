"""Units: the one home for conversions and constants.

Every other module works in SI base units internally (bytes, seconds, FLOP,
bytes per second) and converts at its edges with the functions here. Names
elsewhere carry their unit as a suffix:

==========  =====================================  ======================
suffix      meaning                                example
==========  =====================================  ======================
``_bytes``  bytes                                  ``weights_bytes``
``_gb``     gigabytes, 10**9 bytes (decimal)       ``zero_table_gb``
``_gib``    gibibytes, 2**30 bytes (binary)        ``hbm_gib``
``_gbps``   gigabits per second, 10**9 bit/s       ``link_gbps``
``_gbytes_s``  gigabytes per second, 10**9 B/s     ``nvlink_gbytes_s``
``_tflops`` 10**12 floating-point operations / s   ``bf16_dense_tflops``
``_w``      watts                                  ``power_w``
``_pj``     picojoules, 10**-12 J (per bit here)    ``pj_per_bit``
==========  =====================================  ======================

Bandwidth figures in this project are **per direction** unless a name says
``_bidir``. Vendors often quote the sum of both directions (NVLink's
"900 GB/s" on H100 is 450 GB/s each way); :func:`per_direction` converts.

The workbook teaches these distinctions in ``notebooks/00_start_here.ipynb``
and ``notebooks/01_scale_up_limits.ipynb``.

Every conversion takes a number or an array of numbers: a string, a boolean or
``None`` is a ``ValueError`` naming the argument (numpy would silently read
``"5"`` as 5.0). Signed values convert as they are (a difference of two times is
a time), and so do ``inf`` and ``nan`` (as "never" and "undefined"); a divisor
must be a finite number > 0.
"""

from __future__ import annotations

from numbers import Real

import numpy as np

__all__ = [
    "BITS_PER_BYTE",
    "DAYS_PER_MONTH",
    "DAYS_PER_YEAR",
    "GB",
    "GIB",
    "KB",
    "KIB",
    "MB",
    "MIB",
    "PB",
    "SECONDS_PER_DAY",
    "SECONDS_PER_HOUR",
    "SECONDS_PER_MINUTE",
    "TB",
    "TIB",
    "both_directions",
    "bytes_to_gb",
    "bytes_to_gib",
    "days_to_seconds",
    "days_to_years",
    "gb_to_bytes",
    "gb_to_gib",
    "gbps_to_gbytes_s",
    "gbytes_s_to_gbps",
    "gib_to_bytes",
    "gib_to_gb",
    "hours_to_seconds",
    "km_to_m",
    "minutes_to_seconds",
    "ns_to_seconds",
    "per_direction",
    "pj_per_bit",
    "seconds_to_days",
    "seconds_to_hours",
    "seconds_to_minutes",
    "tflops_to_flops",
]

# --- sizes -----------------------------------------------------------------
#: Decimal (SI) prefixes, as used for disk sizes, network rates and papers' "GB".
KB = 10**3
MB = 10**6
GB = 10**9
TB = 10**12
PB = 10**15
#: Binary (IEC) prefixes, as used by ``nvidia-smi`` and operating systems.
KIB = 2**10
MIB = 2**20
GIB = 2**30
TIB = 2**40

BITS_PER_BYTE = 8

# --- time --------------------------------------------------------------------
SECONDS_PER_MINUTE = 60
SECONDS_PER_HOUR = 3600
SECONDS_PER_DAY = 86_400
#: Days in a Julian year (IAU), for long training times.
DAYS_PER_YEAR = 365.25
#: Days in an average month (a Julian year / 12), for rates quoted "per month".
DAYS_PER_MONTH = DAYS_PER_YEAR / 12


def _number(name: str, value):
    """``value`` unchanged if it is a real number or an array of them; else a clear error."""
    if isinstance(value, bool | np.bool_) or value is None or isinstance(value, str | bytes):
        raise ValueError(f"{name} must be a number or an array of numbers, got {value!r}")
    if isinstance(value, Real):
        return value
    kind = np.asarray(value).dtype.kind if not isinstance(value, dict | set) else "O"
    if kind not in "iuf":
        raise ValueError(f"{name} must be a number or an array of numbers, got {value!r}")
    return value if isinstance(value, np.ndarray) else np.asarray(value, dtype=float)


def _divisor(name: str, value):
    """``value`` if it is a finite number > 0 (or an array of them): what may divide."""
    value = _number(name, value)
    arr = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(arr) & (arr > 0)):
        shown = value if arr.ndim == 0 else arr[~(np.isfinite(arr) & (arr > 0))].ravel()[0]
        raise ValueError(f"{name} must be a finite number > 0, got {shown!r}")
    return value


def bytes_to_gb(n_bytes):
    """Bytes to decimal gigabytes (10**9 bytes). Works on scalars and arrays."""
    n_bytes = _number("n_bytes", n_bytes)
    return n_bytes / GB


def bytes_to_gib(n_bytes):
    """Bytes to binary gibibytes (2**30 bytes). Works on scalars and arrays."""
    n_bytes = _number("n_bytes", n_bytes)
    return n_bytes / GIB


def gb_to_bytes(gb):
    """Decimal gigabytes to bytes."""
    gb = _number("gb", gb)
    return gb * GB


def gib_to_bytes(gib):
    """Binary gibibytes to bytes."""
    gib = _number("gib", gib)
    return gib * GIB


def gb_to_gib(gb):
    """Decimal GB to binary GiB: 80 GB is 74.5 GiB."""
    gb = _number("gb", gb)
    return gb * GB / GIB


def gib_to_gb(gib):
    """Binary GiB to decimal GB: 80 GiB is 85.9 GB."""
    gib = _number("gib", gib)
    return gib * GIB / GB


def gbps_to_gbytes_s(gbps):
    """Gigabits per second (network rates, e.g. a 400 Gb/s NIC) to gigabytes per second.

    A 400 Gb/s InfiniBand NDR port carries 50 GB/s per direction.
    """
    gbps = _number("gbps", gbps)
    return gbps / BITS_PER_BYTE


def gbytes_s_to_gbps(gbytes_s):
    """Gigabytes per second to gigabits per second."""
    gbytes_s = _number("gbytes_s", gbytes_s)
    return gbytes_s * BITS_PER_BYTE


def per_direction(bidirectional, directions: int = 2):
    """Per-direction bandwidth from a vendor's both-directions total.

    NVIDIA quotes NVLink 4 on H100 as "900 GB/s", the sum of 450 GB/s sent and
    450 GB/s received by one GPU at the same time.
    """
    bidirectional = _number("bidirectional", bidirectional)
    directions = _divisor("directions", directions)
    return bidirectional / directions


def both_directions(per_dir, directions: int = 2):
    """A vendor-style both-directions total from a per-direction bandwidth (450 -> 900 GB/s)."""
    per_dir = _number("per_dir", per_dir)
    directions = _divisor("directions", directions)
    return per_dir * directions


def tflops_to_flops(tflops):
    """10**12 FLOP/s to FLOP/s."""
    tflops = _number("tflops", tflops)
    return tflops * 1e12


def seconds_to_days(seconds):
    """Seconds to days (86,400 s)."""
    seconds = _number("seconds", seconds)
    return seconds / SECONDS_PER_DAY


def seconds_to_minutes(seconds):
    """Seconds to minutes."""
    seconds = _number("seconds", seconds)
    return seconds / SECONDS_PER_MINUTE


def minutes_to_seconds(minutes):
    """Minutes to seconds."""
    minutes = _number("minutes", minutes)
    return minutes * SECONDS_PER_MINUTE


def seconds_to_hours(seconds):
    """Seconds to hours."""
    seconds = _number("seconds", seconds)
    return seconds / SECONDS_PER_HOUR


def hours_to_seconds(hours):
    """Hours to seconds."""
    hours = _number("hours", hours)
    return hours * SECONDS_PER_HOUR


def days_to_seconds(days):
    """Days to seconds (86,400 s)."""
    days = _number("days", days)
    return days * SECONDS_PER_DAY


def days_to_years(days):
    """Days to Julian years of 365.25 days: 12,400 days is about 34 years."""
    days = _number("days", days)
    return days / DAYS_PER_YEAR


def pj_per_bit(power_w, gbps):
    """Energy per bit in picojoules from a power in watts and a rate in Gb/s.

    W / (Gb/s) = J/s / (10**9 bit/s) = 10**-9 J/bit = 1000 pJ/bit, so an 800 Gb/s module
    drawing 15 W spends 15 / 800 x 1000 = 18.75 pJ on every bit. Works on arrays.
    """
    power_w = _number("power_w", power_w)
    gbps = _divisor("gbps", gbps)
    return power_w / gbps * 1e3


def ns_to_seconds(ns):
    """Nanoseconds (switch and cable latencies) to seconds. Works on arrays."""
    ns = _number("ns", ns)
    return ns * 1e-9


def km_to_m(km):
    """Kilometres (distances between sites) to metres. Works on arrays."""
    km = _number("km", km)
    return km * 1e3
