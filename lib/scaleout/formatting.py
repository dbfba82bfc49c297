"""Numbers a person reads at a glance: one home for how the workbook prints a quantity.

Every readout, table, axis and report line formats its numbers here, so the same
quantity always reads the same way: thousands separators (``16,384``), a prefix and
a unit instead of an exponent (``2 TB/s``, not ``2.00e+3 GB/s``), a sensible number
of significant figures (``10.5 min``, not ``10.547349562026666 min``) and money with
its currency (``$12.3 million``).

Conventions
-----------
* Significant figures: ``digits`` (default 3) counted from the first non-zero digit,
  trailing zeros dropped (``2.5``, not ``2.50``); the whole-number part is never
  rounded away (``1,235``, not ``1,230``), so a count never looks approximate.
* Decimal (SI) prefixes for rates, FLOP/s, watts and decimal bytes (kB, MB, GB: 10³ⁿ);
  binary (IEC) prefixes only through :func:`bytes_iec` (KiB, MiB, GiB: 2¹⁰ⁿ). Which
  one a figure uses is explicit in the function's name, as ``_gb`` and ``_gib`` are in
  the library's names (:mod:`scaleout.units`).
* Bits are ``b`` and bytes ``B``: ``400 Gb/s`` is a port, ``50 GB/s`` the same port in
  bytes.
* Non-finite values print as ``∞``, ``-∞`` or ``—`` (not a number).

Display only: conversions between units live in :mod:`scaleout.units`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from . import units

__all__ = [
    "CURRENCY_SYMBOLS",
    "axis_formatter",
    "axis_tick",
    "bit_rate",
    "byte_rate",
    "bytes_iec",
    "bytes_si",
    "count",
    "duration",
    "flop_rate",
    "flops",
    "large_count",
    "money",
    "percent",
    "plural",
    "power",
    "si",
    "sig",
    "tokens",
]

#: Symbols printed before an amount; any other ISO 4217 code prints as "CHF 1,234".
CURRENCY_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "CNY": "CN¥", "KRW": "₩",
                    "INR": "₹"}
#: Currencies quoted in whole units (no cents): the yen and the won have no minor unit in use.
_WHOLE_UNIT_CURRENCIES = {"JPY", "KRW"}

_SI_PREFIXES = ((1e30, "Q"), (1e27, "R"), (1e24, "Y"), (1e21, "Z"), (1e18, "E"), (1e15, "P"),
                (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"),
                (1e-6, "µ"), (1e-9, "n"), (1e-12, "p"), (1e-15, "f"))
_IEC_PREFIXES = ((units.TIB * 2**20, "Ei"), (units.TIB * 2**10, "Pi"), (units.TIB, "Ti"),
                 (units.GIB, "Gi"), (units.MIB, "Mi"), (units.KIB, "Ki"), (1, ""))
#: Short scale of counts (thousand, million, ...), as "300 B tokens" or "1.8 trillion".
_COUNT_SCALES = ((1e12, "T", "trillion"), (1e9, "B", "billion"), (1e6, "M", "million"),
                 (1e3, "K", "thousand"))


def _nonfinite(x: float) -> str | None:
    if math.isnan(x):
        return "—"
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    return None


def _check_digits(digits: int) -> int:
    if isinstance(digits, bool) or not isinstance(digits, int) or digits < 1:
        raise ValueError(f"digits must be a whole number >= 1, got {digits!r}")
    return digits


def sig(x: float, digits: int = 3, *, grouping: bool = True) -> str:
    """``x`` to ``digits`` significant figures, trailing zeros dropped, with separators.

    >>> sig(10.547349562026666)
    '10.5'
    >>> sig(1234.56)
    '1,235'
    >>> sig(0.000123456)
    '0.000123'
    >>> sig(2.0)
    '2'

    The whole-number part is never rounded away (``1,235`` rather than ``1,230``).
    Values below 10⁻⁴ or at least 10¹⁵ fall back to scientific notation
    (``1.2e-05``); use :func:`si` for quantities with a unit.
    """
    digits = _check_digits(digits)
    x = float(x)
    if (bad := _nonfinite(x)) is not None:
        return bad
    if x == 0:
        return "0"
    ax = abs(x)
    if ax < 1e-4 or ax >= 1e15:
        mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
        if "." in mantissa:
            mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}e{int(exponent)}"
    magnitude = math.floor(math.log10(ax))
    decimals = max(digits - 1 - magnitude, 0)
    text = f"{x:{',' if grouping else ''}.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    # rounding can carry into a new digit (9.996 -> "10.00" -> "10"); that is still right
    return "0" if text in ("-0", "") else text


def count(n: float) -> str:
    """A whole count with thousands separators: ``16384`` → ``"16,384"``.

    A non-integral value is rounded to the nearest whole number.
    """
    x = float(n)
    if (bad := _nonfinite(x)) is not None:
        return bad
    return f"{round(x):,}"


def plural(n: float, noun: str, plural_noun: str | None = None) -> str:
    """A count and its noun, singular for one: ``"1 term"``, ``"2 terms"``, ``"16,384 GPUs"``.

    ``plural_noun`` overrides the regular plural (``noun + "s"``), as in
    ``plural(2, "switch", "switches")``.
    """
    many = plural_noun if plural_noun is not None else f"{noun}s"
    return f"{count(n)} {noun if float(n) == 1 else many}"


def percent(fraction: float, digits: int = 3, *, signed: bool = False) -> str:
    """A fraction as a percentage to ``digits`` significant figures: ``0.4567`` → ``"45.7%"``.

    Never more than two decimals (``0.9995`` → ``"100%"``, ``0.00012`` → ``"0.01%"``);
    ``signed`` prints ``+`` for gains (``"+4.2%"``).
    """
    x = 100.0 * float(fraction)
    if (bad := _nonfinite(x)) is not None:
        return f"{bad}%"
    ax = abs(x)
    decimals = 0 if ax == 0 else min(2, max(0, digits - 1 - math.floor(math.log10(ax))))
    text = f"{x:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    if text in ("-0", "0") and x != 0:
        text = f"{'-' if x < 0 else ''}<{0.01 if decimals == 2 else 1:g}"
    sign = "+" if signed and x > 0 and not text.startswith("<") else ""
    return f"{sign}{text}%"


def _prefixed(x: float, table: Sequence[tuple[float, str]], digits: int) -> tuple[str, str]:
    """``(number text, prefix)`` of ``x`` under the largest prefix not above it."""
    ax = abs(x)
    for i, (factor, prefix) in enumerate(table):
        if ax >= factor * (1 - 1e-12) or i == len(table) - 1:
            text = sig(x / factor, digits)
            # 999.96 kB rounds to "1,000": move up one prefix, to "1 MB" (1,024 MiB: "1 GiB")
            if i > 0 and abs(float(text.replace(",", ""))) >= table[i - 1][0] / factor:
                return sig(x / table[i - 1][0], digits), table[i - 1][1]
            return text, prefix
    raise AssertionError("unreachable")  # pragma: no cover


def si(value: float, unit: str, digits: int = 3, *, smallest: str | None = None) -> str:
    """A quantity with an SI prefix on its unit: ``si(2e12, "B/s")`` → ``"2 TB/s"``.

    ``smallest`` is the smallest prefix allowed (``"k"``: never below kW, so 120 W
    prints ``"0.12 kW"``; ``""``: no prefix below the plain unit, so 0.5 B/s stays
    ``"0.5 B/s"``); by default (``None``) any prefix from femto to quetta is used.
    """
    x = float(value)
    if (bad := _nonfinite(x)) is not None:
        return f"{bad} {unit}".rstrip()
    if x == 0:
        return f"0 {unit}".rstrip()
    table = list(_SI_PREFIXES)
    if smallest is not None:
        cut = next((i for i, (_f, p) in enumerate(table) if p == smallest), None)
        if cut is None:
            raise ValueError(f"smallest prefix {smallest!r} is not one of "
                             f"{', '.join(repr(p) for _f, p in _SI_PREFIXES)}")
        table = table[:cut + 1]
    text, prefix = _prefixed(x, table, digits)
    return f"{text} {prefix}{unit}".rstrip()


def bytes_si(n_bytes: float, digits: int = 3) -> str:
    """Bytes with decimal prefixes (1 GB = 10⁹ B): ``350e9`` → ``"350 GB"``."""
    return si(n_bytes, "B", digits, smallest="")


def bytes_iec(n_bytes: float, digits: int = 3) -> str:
    """Bytes with binary prefixes (1 GiB = 2³⁰ B): ``2**28`` → ``"256 MiB"``.

    Binary prefixes are what ``nvidia-smi``, operating systems and nccl-tests'
    power-of-two sweeps use; GPU memory in this workbook is in GiB.
    """
    x = float(n_bytes)
    if (bad := _nonfinite(x)) is not None:
        return f"{bad} B"
    if abs(x) < 1:
        return f"{sig(x, digits)} B"
    text, prefix = _prefixed(x, _IEC_PREFIXES, digits)
    return f"{text} {prefix}B"


def byte_rate(bytes_per_s: float, digits: int = 3) -> str:
    """Bytes per second with decimal prefixes: ``2e12`` → ``"2 TB/s"``."""
    return si(bytes_per_s, "B/s", digits, smallest="")


def bit_rate(bits_per_s: float, digits: int = 3) -> str:
    """Bits per second with decimal prefixes: ``400e9`` → ``"400 Gb/s"``."""
    return si(bits_per_s, "b/s", digits, smallest="")


def flop_rate(flop_per_s: float, digits: int = 3) -> str:
    """Floating-point operations per second: ``989e12`` → ``"989 TFLOP/s"``."""
    return si(flop_per_s, "FLOP/s", digits, smallest="")


def flops(n_flop: float, digits: int = 3) -> str:
    """A number of floating-point operations: ``3.14e23`` → ``"314 ZFLOP"``."""
    return si(n_flop, "FLOP", digits, smallest="")


def power(watts: float, digits: int = 3) -> str:
    """Watts with decimal prefixes: ``1.2e6`` → ``"1.2 MW"``, ``15`` → ``"15 W"``."""
    return si(watts, "W", digits, smallest="")


def large_count(n: float, digits: int = 3, *, words: bool = True) -> str:
    """A big count in the short scale: ``3e11`` → ``"300 billion"`` (or ``"300 B"``).

    Below a million the count is printed whole (``"16,384"``); ``words=False``
    uses the letters K, M, B, T.
    """
    x = float(n)
    if (bad := _nonfinite(x)) is not None:
        return bad
    for factor, letter, word in _COUNT_SCALES:
        if abs(x) >= factor * (1 - 1e-12) and (factor >= 1e6 or not words):
            text = sig(x / factor, digits)
            return f"{text} {word}" if words else f"{text} {letter}"
    return count(x) if float(x).is_integer() or abs(x) >= 10 ** digits else sig(x, digits)


def tokens(n: float, digits: int = 3) -> str:
    """A token count: ``3e11`` → ``"300 B tokens"``, ``15e12`` → ``"15 T tokens"``."""
    x = float(n)
    if (bad := _nonfinite(x)) is not None:
        return f"{bad} tokens"
    if abs(x) < 1e3:
        return f"{count(x) if x.is_integer() else sig(x, digits)} tokens"
    return f"{large_count(x, digits, words=False)} tokens"


def duration(seconds: float, digits: int = 3) -> str:
    """A duration in the unit a reader would choose: ``632.8`` → ``"10.5 min"``.

    Nanoseconds, microseconds and milliseconds below a second; seconds below a
    minute; minutes below an hour; hours below two days; days below two years;
    then years (365.25 days).
    """
    s = float(seconds)
    if (bad := _nonfinite(s)) is not None:
        return "forever" if s > 0 and math.isinf(s) else bad
    a = abs(s)
    if a == 0:
        return "0 s"
    if a < 1:
        return si(s, "s", digits)
    if a < units.SECONDS_PER_MINUTE:
        return f"{sig(s, digits)} s"
    if a < units.SECONDS_PER_HOUR:
        return f"{sig(units.seconds_to_minutes(s), digits)} min"
    if a < 2 * units.SECONDS_PER_DAY:
        return f"{sig(units.seconds_to_hours(s), digits)} h"
    days = units.seconds_to_days(s)
    if abs(days) < 2 * units.DAYS_PER_YEAR:
        return f"{sig(days, digits)} days"
    return f"{sig(units.days_to_years(days), digits)} years"


def money(amount: float, currency: str = "USD", digits: int = 3) -> str:
    """An amount of money with its currency: ``12_345_678`` → ``"$12.3 million"``.

    ``currency`` is an ISO 4217 code (``"USD"``, ``"EUR"``, ``"KRW"`` ...); the
    codes of :data:`CURRENCY_SYMBOLS` print with their symbol, any other code
    before the amount (``"CHF 1,234"``). Amounts from a million up use words
    (million, billion, trillion); smaller ones are whole units with separators,
    rounded to ``digits`` significant figures (``"$638,000"``), and under 100 they
    keep cents (``"$3.50"``), except in currencies without them in use (yen, won).
    """
    code = str(currency).strip().upper()
    if len(code) != 3 or not code.isalpha():
        raise ValueError(f"currency must be a three-letter ISO 4217 code such as 'USD', "
                         f"'EUR' or 'KRW', got {currency!r}")
    x = float(amount)
    symbol = CURRENCY_SYMBOLS.get(code)
    prefix = symbol if symbol else f"{code} "
    sign = "-" if x < 0 else ""
    ax = abs(x)
    if (bad := _nonfinite(ax)) is not None:
        return f"{sign}{prefix}{bad}"
    if ax >= 1e6:
        text = large_count(ax, digits, words=True)
    elif ax >= 10 ** (digits + 1):  # $638,022 reads as $638,000: no false precision
        text = f"{round(ax, digits - 1 - math.floor(math.log10(ax))):,.0f}"
    elif ax >= 100 or code in _WHOLE_UNIT_CURRENCIES:
        text = f"{round(ax):,}"
    else:
        text = f"{ax:,.2f}"
    return f"{sign}{prefix}{text}"


def axis_tick(value: float, unit: str = "", *, binary: bool = False) -> str:
    """A tick label: short, no exponent, no offset: ``1e6`` → ``"1M"``, ``2**30`` → ``"1 GiB"``.

    With a ``unit`` the value is printed with an SI prefix (``"10 GB/s"``); ``binary``
    prints bytes with an IEC prefix (``"256 MiB"``, for power-of-two sizes). Without a unit,
    values from 10⁴ up get the short-scale letters k, M, B, T (``"20k"``, ``"1.5M"``),
    and smaller ones their significant figures without separators (``"0.25"``, ``"2024"``).
    """
    x = float(value)
    if (bad := _nonfinite(x)) is not None:
        return bad
    if binary:
        return bytes_iec(x, 3)
    if unit:
        return si(x, unit, 3)
    ax = abs(x)
    if ax >= 1e4:
        for factor, letter in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
            if ax >= factor * (1 - 1e-12):
                return f"{sig(x / factor, 3)}{letter}"
    return sig(x, 3, grouping=False)  # "2024" (a year on an axis), "1000"


def axis_formatter(unit: str = "", *, binary: bool = False) -> Callable[[float, int], str]:
    """A ``(value, position) -> label`` function for matplotlib's ``FuncFormatter``."""
    return lambda value, _pos=0: axis_tick(value, unit, binary=binary)
