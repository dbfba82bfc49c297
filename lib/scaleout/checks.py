"""Input checks shared by every model: clear ``ValueError`` messages, early.

Each check names the parameter, the value it got and what is allowed, so a
learner who types a bad number in a widget reads a sentence, not a numpy
traceback. The library calls these at its public edges; inner helpers trust
their inputs.

Ranges
------
Every number a public function takes has a physically meaningful range, and
the checks refuse what lies outside it, so that no input makes a model loop,
allocate without bound or overflow. The bounds live here, in one place:

* whole numbers (:func:`check_int`) are bounded by their parameter's name
  (:data:`INT_BOUNDS`: GPU counts up to :data:`MAX_GPUS`, layers up to
  :data:`MAX_LAYERS`, ...) and otherwise by :data:`MAX_COUNT`;
* measured quantities (:func:`check_positive`, :func:`check_array`) are
  bounded by the unit their name carries (:data:`UNIT_BOUNDS`: seconds up to
  :data:`MAX_SECONDS`, bytes up to :data:`MAX_BYTES`, ...), by their name
  (:data:`REAL_BOUNDS`), and otherwise by :data:`MAX_QUANTITY`;
* simulations estimate their work first (:func:`check_work`) and refuse
  more than :data:`MAX_WORK` elements with a message that says how to shrink it.

A caller that needs a tighter range passes ``maximum=`` explicitly.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable
from numbers import Integral, Real

import numpy as np

__all__ = [
    "INT_BOUNDS",
    "MAX_BATCH",
    "MAX_BYTES",
    "MAX_COUNT",
    "MAX_DOMAIN_GPUS",
    "MAX_GPUS",
    "MAX_LAYERS",
    "MAX_PARAMS",
    "MAX_PLANES",
    "MAX_QUANTITY",
    "MAX_RADIX",
    "MAX_SECONDS",
    "MAX_SEQ_LEN",
    "MAX_TOKENS",
    "MAX_WIDTH",
    "MAX_WORK",
    "REAL_BOUNDS",
    "UNIT_BOUNDS",
    "check_array",
    "check_bool",
    "check_choice",
    "check_divides",
    "check_int",
    "check_positive",
    "check_range",
    "check_work",
    "close_matches",
    "divisors",
    "int_bound",
    "real_bound",
]

# --------------------------------------------------------------------------- bounds
#: GPUs in one cluster (and any parallel degree or group of GPUs): 10 million. The
#: largest clusters built or announced by 2025 hold a few hundred thousand.
MAX_GPUS = 10**7
#: GPUs in one scale-up domain or node: 100,000 (the largest domains sold hold hundreds).
MAX_DOMAIN_GPUS = 10**5
#: Transformer layers: 100,000 (published models have at most a few hundred).
MAX_LAYERS = 10**5
#: Model width, heads, MLP width, vocabulary: 10 million (the widest models are ~10^4-10^5).
MAX_WIDTH = 10**7
#: Sequence length in tokens: 100 million (the longest trained contexts are ~10^6-10^7).
MAX_SEQ_LEN = 10**8
#: Sequences in a batch (global or micro) and micro-batches per step: 100 million.
MAX_BATCH = 10**8
#: Switch ports (radix): 65,536 = 2^16, for what-ifs far past any chip (a 102.4 Tb/s chip
#: has 512 ports of 200G, 2,048 of 50G).
MAX_RADIX = 2**16
#: Network planes per NIC: 64 (multi-plane NICs split into 2-8 ports today).
MAX_PLANES = 64
#: Any other whole number (repetitions, flows, packets, seeds): 10^12.
MAX_COUNT = 10**12
#: Parameters of a model: 10^16 (the largest trained are ~10^12).
MAX_PARAMS = 1e16
#: Tokens of a training budget: 10^18 (the largest runs use ~10^13-10^14).
MAX_TOKENS = 1e18
#: Bytes of anything (a model's state, a message, a checkpoint): 10^21, a zettabyte.
MAX_BYTES = 1e21
#: Durations in seconds: 10^15 s, about 32 million years (long enough to stand for
#: "never", as an MTBF in a what-if).
MAX_SECONDS = 1e15
#: Any other measured quantity (rates, ratios, prices): 10^30, far beyond anything
#: physical, yet small enough that products of a few stay finite in floating point.
MAX_QUANTITY = 1e30
#: Elements a simulation may allocate (array cells, events): 2 x 10^7 (about 160 MB of
#: floats per array); larger runs are refused before they start.
MAX_WORK = 2 * 10**7

_GPU_COUNTS = ("n_gpus", "dp", "tp", "pp", "t", "p", "n", "nranks", "model_parallel",
               "n_endpoints", "spare_gpus", "n_hosts", "n_nodes", "gpu_counts", "rank",
               "device", "design_gpu_counts", "domain_gpus")
#: Upper bounds of whole-number parameters, by name (:func:`check_int`).
INT_BOUNDS: dict[str, int] = {
    **dict.fromkeys(_GPU_COUNTS, MAX_GPUS),
    **dict.fromkeys(("gpus_per_node", "gpus_per_switch", "gpus_per_server", "links_per_gpu",
                     "domain_sizes"), MAX_DOMAIN_GPUS),
    **dict.fromkeys(("n_layers", "v", "interleave", "max_interleave", "in_flight"), MAX_LAYERS),
    **dict.fromkeys(("hidden", "n_heads", "n_kv_heads", "ffn_hidden", "vocab"), MAX_WIDTH),
    "seq_len": MAX_SEQ_LEN,
    **dict.fromkeys(("micro_batch", "global_batch", "batch_per_gpu", "max_micro_batch", "m",
                     "micro_batches"), MAX_BATCH),
    "radix": MAX_RADIX,
    "planes": MAX_PLANES,
    "seed": 2**63 - 1,
}

#: Upper bounds of measured quantities by the unit their name ends with, longest suffix
#: first (:func:`check_positive`, :func:`check_array`).
UNIT_BOUNDS: tuple[tuple[str, float], ...] = (
    ("_gbytes_s", 1e9),  # 10^18 B/s, an exabyte per second
    ("_bytes_s", 1e18),
    ("_per_s", 1e18),  # tokens (or anything) per second
    ("_tflops", 1e9),  # 10^21 FLOP/s per GPU
    ("_tflops_per_gpu", 1e9),
    ("_gbps", 1e10),  # 10^19 bit/s per port
    ("_bytes", MAX_BYTES),
    ("_gb", MAX_BYTES / 1e9),
    ("_gib", MAX_BYTES / 2**30),
    ("_s", MAX_SECONDS),
    ("_us", MAX_SECONDS * 1e6),
    ("_ns", MAX_SECONDS * 1e9),
    ("_hours", MAX_SECONDS / 3600),
    ("_days", MAX_SECONDS / 86_400),
    ("_m", 1e8),  # lengths: 100,000 km, twice round the Earth
    ("_km", 1e5),
    ("_w", 1e12),  # a terawatt
)
#: Upper bounds of measured quantities by name, where the name carries no unit.
REAL_BOUNDS: dict[str, float] = {
    "params": MAX_PARAMS,
    "tokens": MAX_TOKENS,
    "n_bytes": MAX_BYTES,
    # bytes of one number (fp8 is 1, fp64 8): 64 leaves room for any format
    **dict.fromkeys(("bytes_per_element", "bytes_per_param", "bytes_per_value"), 64.0),
}

_NAME_TAIL = re.compile(r"\[[^\]]*\]$")


def _key(name: str) -> str:
    """The bare parameter name in a label: ``"forward_s[2]"`` -> ``forward_s``."""
    return _NAME_TAIL.sub("", str(name)).split(": ")[-1].split(".")[-1].strip()


def int_bound(name: str) -> int:
    """The largest value :func:`check_int` allows for a parameter of this name."""
    return INT_BOUNDS.get(_key(name), MAX_COUNT)


def real_bound(name: str) -> float:
    """The largest value :func:`check_positive` allows for a parameter of this name."""
    key = _key(name)
    if key in REAL_BOUNDS:
        return REAL_BOUNDS[key]
    for suffix, bound in UNIT_BOUNDS:
        if key.endswith(suffix) or key == suffix[1:]:
            return bound
    return MAX_QUANTITY


def _is_bool(value) -> bool:
    return isinstance(value, bool | np.bool_)


def _above(name: str, value, bound) -> ValueError:
    return ValueError(f"{name} must be at most {bound:,} (the workbook's range for it, "
                      f"scaleout.checks), got {value!r}")


def check_int(name: str, value, *, minimum: int = 1, maximum: int | None = None) -> int:
    """Return ``value`` as an ``int`` if it is a whole number in ``[minimum, maximum]``.

    ``maximum`` defaults to the parameter's bound (:func:`int_bound`).

    Raises
    ------
    ValueError
        ``"tp must be a whole number >= 1, got 0"`` and the like.
    """
    explicit = maximum is not None
    allowed = f"from {minimum} to {maximum}" if explicit else f">= {minimum}"
    if _is_bool(value) or not isinstance(value, Integral | Real):
        raise ValueError(f"{name} must be a whole number {allowed}, got {value!r}")
    if isinstance(value, Real) and not isinstance(value, Integral):
        if not math.isfinite(value) or value != int(value):
            raise ValueError(f"{name} must be a whole number {allowed}, got {value!r}")
    ivalue = int(value)
    if ivalue < minimum or (explicit and ivalue > maximum):
        raise ValueError(f"{name} must be a whole number {allowed}, got {value!r}")
    bound = int_bound(name)
    if not explicit and ivalue > bound:
        raise _above(name, value, bound)
    return ivalue


def check_positive(name: str, value, *, allow_zero: bool = False,
                   maximum: float | None = None) -> float:
    """Return ``value`` as a ``float`` if it is a finite number > 0 (or >= 0).

    ``maximum`` defaults to the parameter's bound (:func:`real_bound`).
    """
    allowed = ">= 0" if allow_zero else "> 0"
    if _is_bool(value) or not isinstance(value, Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number {allowed}, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be a finite number {allowed}, got {value!r}")
    bound = real_bound(name) if maximum is None else maximum
    if value > bound:
        raise _above(name, value, bound)
    return float(value)


def check_range(name: str, value, low: float, high: float) -> float:
    """Return ``value`` as a ``float`` if ``low <= value <= high``."""
    if _is_bool(value) or not isinstance(value, Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a number from {low} to {high}, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be a number from {low} to {high}, got {value!r}")
    return float(value)


def check_bool(name: str, value) -> bool:
    """Return ``value`` if it is a real ``True`` or ``False`` (``"False"`` is refused, not true)."""
    if not _is_bool(value):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_array(name: str, value, *, allow_zero: bool = True, integer: bool = False,
                minimum: float | None = None, maximum: float | None = None,
                allow_empty: bool = False) -> np.ndarray:
    """``value`` (a number or an array of numbers) as a float array, every element checked.

    Strings, booleans and other objects are refused (numpy would read ``"5"`` as
    5.0); every element must be finite, ``>= 0`` (``> 0`` without ``allow_zero``),
    ``>= minimum`` if given, a whole number with ``integer``, and at most ``maximum``
    (default: the parameter's bound, :func:`real_bound` or :func:`int_bound`).
    """
    one = "a whole number" if integer else "a finite number"
    if minimum is not None:
        lower = f">= {minimum:g}"
    else:
        lower = ">= 0" if allow_zero else "> 0"
    if isinstance(value, str | bytes):
        raise ValueError(f"{name} must be {one} {lower}, got {value!r}")
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):
        raise ValueError(f"{name} must be {one} {lower}, got {value!r}") from None
    kind = one if arr.ndim == 0 else ("whole numbers" if integer else "finite numbers")
    if arr.dtype.kind not in "iuf" or (arr.size == 0 and not allow_empty):
        raise ValueError(f"{name} must be {kind} {lower}, got {value!r}")
    arr = arr.astype(float)
    ok = np.isfinite(arr)
    if minimum is not None:
        ok &= arr >= minimum
    else:
        ok &= (arr >= 0) if allow_zero else (arr > 0)
    if integer:
        ok &= arr == np.floor(np.where(np.isfinite(arr), arr, 0))
    if not np.all(ok):
        shown = value if arr.ndim == 0 else arr[~ok].ravel()[0].item()
        raise ValueError(f"{name} must be {one} {lower}, got {shown!r}")
    bound = maximum if maximum is not None else (int_bound(name) if integer
                                                  else real_bound(name))
    if arr.size and arr.max() > bound:
        shown = value if arr.ndim == 0 else arr.max().item()
        raise _above(name, shown, bound)
    return arr


def check_work(what: str, elements: float, hint: str, limit: int = MAX_WORK) -> None:
    """Refuse a simulation whose estimated size (``elements`` array cells) exceeds ``limit``.

    ``hint`` says which parameters make it smaller.
    """
    if not elements <= limit:
        raise ValueError(f"{what} would need about {float(elements):.3g} elements, more "
                         f"than the {limit:,} the workbook simulates at once; {hint}")


def close_matches(value: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` entries of ``choices`` that look like ``value`` (case-insensitive)."""
    choices = list(choices)
    lowered = {c.lower(): c for c in choices}
    hits = difflib.get_close_matches(str(value).lower(), list(lowered), n=n, cutoff=0.5)
    # also accept substring hits ("h100" -> "H100-SXM5-80GB"), which difflib ranks low
    subs = [c for c in choices if str(value).lower() in c.lower() and c.lower() not in hits]
    out = [lowered[h] for h in hits] + subs
    return list(dict.fromkeys(out))[:n]


def check_choice(name: str, value, allowed: Iterable):
    """Return ``value`` if it is one of ``allowed``; otherwise say what is, and what is close."""
    allowed = list(allowed)
    try:
        found = value in allowed
    except (TypeError, ValueError):  # an array or an unhashable value compared to the options
        found = False
    if found:
        # 1 == 1.0 == True: a choice among numbers takes numbers, never a bool or a string
        same = [a for a in allowed if a == value and type(a) is type(value)]
        if same or not any(_is_bool(a) != _is_bool(value) for a in allowed if a == value):
            return value
    message = f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}"
    if isinstance(value, str):
        near = close_matches(value, [a for a in allowed if isinstance(a, str)])
        if near:
            message += f" (did you mean {' or '.join(map(repr, near))}?)"
    raise ValueError(message)


#: Totals whose divisors are listed in messages: larger ones get a shorter message.
_MAX_LISTED = 10**10


def divisors(n: int) -> list[int]:
    """The divisors of ``n`` in increasing order, by trial division up to ``sqrt(n)``.

    O(sqrt n): at most 10^5 steps for the largest total a message lists (10^10).
    """
    n = int(n)
    if n < 1:
        return []
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def check_divides(name: str, divisor: int, what: str, total: int) -> None:
    """Raise unless ``divisor`` divides ``total``: ``tp=3 must divide n_heads=32``."""
    if total % divisor:
        message = f"{name}={divisor} must divide {what}={total}"
        if total <= _MAX_LISTED:
            options = divisors(total)
            shown = options if len(options) <= 12 else [*options[:11], "...", options[-1]]
            message += f"; allowed: {', '.join(map(str, shown))}"
        raise ValueError(message)
