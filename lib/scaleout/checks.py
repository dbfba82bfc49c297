"""Input checks shared by every model: clear ``ValueError`` messages, early.

Each check names the parameter, the value it got and what is allowed, so a
learner who types a bad number in a widget reads a sentence, not a numpy
traceback. The library calls these at its public edges; inner helpers trust
their inputs.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from numbers import Integral, Real

__all__ = [
    "check_choice",
    "check_divides",
    "check_int",
    "check_positive",
    "check_range",
    "close_matches",
]


def _is_bool(value) -> bool:
    return isinstance(value, bool)


def check_int(name: str, value, *, minimum: int = 1, maximum: int | None = None) -> int:
    """Return ``value`` as an ``int`` if it is a whole number in ``[minimum, maximum]``.

    Raises
    ------
    ValueError
        ``"tp must be a whole number >= 1, got 0"`` and the like.
    """
    allowed = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
    if _is_bool(value) or not isinstance(value, Integral | Real):
        raise ValueError(f"{name} must be a whole number {allowed}, got {value!r}")
    if isinstance(value, Real) and not isinstance(value, Integral):
        if not math.isfinite(value) or value != int(value):
            raise ValueError(f"{name} must be a whole number {allowed}, got {value!r}")
    ivalue = int(value)
    if ivalue < minimum or (maximum is not None and ivalue > maximum):
        raise ValueError(f"{name} must be a whole number {allowed}, got {value!r}")
    return ivalue


def check_positive(name: str, value, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a ``float`` if it is a finite number > 0 (or >= 0)."""
    allowed = ">= 0" if allow_zero else "> 0"
    if _is_bool(value) or not isinstance(value, Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number {allowed}, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be a finite number {allowed}, got {value!r}")
    return float(value)


def check_range(name: str, value, low: float, high: float) -> float:
    """Return ``value`` as a ``float`` if ``low <= value <= high``."""
    if _is_bool(value) or not isinstance(value, Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a number from {low} to {high}, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be a number from {low} to {high}, got {value!r}")
    return float(value)


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
    if value in allowed:
        return value
    message = f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}"
    if isinstance(value, str):
        near = close_matches(value, [a for a in allowed if isinstance(a, str)])
        if near:
            message += f" (did you mean {' or '.join(map(repr, near))}?)"
    raise ValueError(message)


def check_divides(name: str, divisor: int, what: str, total: int) -> None:
    """Raise unless ``divisor`` divides ``total``: ``tp=3 must divide n_heads=32``."""
    if total % divisor:
        options = [d for d in range(1, total + 1) if total % d == 0]
        shown = options if len(options) <= 12 else [*options[:11], "...", options[-1]]
        raise ValueError(
            f"{name}={divisor} must divide {what}={total}; "
            f"allowed: {', '.join(map(str, shown))}"
        )
