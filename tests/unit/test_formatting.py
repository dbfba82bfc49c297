"""scaleout.formatting: every quantity reads the way a person would write it."""

from __future__ import annotations

import math

import pytest
from scaleout import formatting as fmt
from scaleout import units


@pytest.mark.parametrize(("x", "digits", "text"), [
    (10.547349562026666, 3, "10.5"),
    (1234.56, 3, "1,235"),          # the whole-number part is never rounded away
    (16384, 3, "16,384"),
    (0.000123456, 3, "0.000123"),
    (2.0, 3, "2"),                  # trailing zeros dropped
    (2.5, 3, "2.5"),
    (9.996, 3, "10"),               # rounding carries into a new digit
    (-0.04567, 2, "-0.046"),
    (0.0, 3, "0"),
    (1e15, 3, "1e15"),              # beyond the separators' reach: scientific
    (3.14159e-6, 2, "3.1e-6"),
    (123456789.0, 2, "123,456,789"),
])
def test_significant_figures(x, digits, text):
    assert fmt.sig(x, digits) == text


def test_sig_without_grouping_and_non_finite_values():
    assert fmt.sig(1234567, grouping=False) == "1234567"
    assert fmt.sig(float("nan")) == "—"
    assert fmt.sig(float("inf")) == "∞"
    assert fmt.sig(-float("inf")) == "-∞"


@pytest.mark.parametrize("digits", [0, -1, 2.5, True])
def test_digits_must_be_a_whole_number_of_at_least_one(digits):
    with pytest.raises(ValueError, match="digits must be a whole number >= 1"):
        fmt.sig(1.0, digits)


def test_plurals_agree_with_the_count():
    assert fmt.plural(1, "term") == "1 term"
    assert fmt.plural(2, "term") == "2 terms"
    assert fmt.plural(0, "concept") == "0 concepts"
    assert fmt.plural(16384, "GPU") == "16,384 GPUs"
    assert fmt.plural(1, "switch", "switches") == "1 switch"
    assert fmt.plural(3, "switch", "switches") == "3 switches"


def test_counts_have_thousands_separators():
    assert fmt.count(16384) == "16,384"
    assert fmt.count(1_000_000) == "1,000,000"
    assert fmt.count(7.6) == "8"
    assert fmt.count(0) == "0"


@pytest.mark.parametrize(("value", "unit", "text"), [
    (2e12, "B/s", "2 TB/s"),        # not 2.00e+3 GB/s
    (2.5e12, "B/s", "2.5 TB/s"),
    (999.96e9, "B/s", "1 TB/s"),    # 999.96 GB/s rounds up to the next prefix
    (450e9, "B/s", "450 GB/s"),
    (400e9, "b/s", "400 Gb/s"),
    (989.4e12, "FLOP/s", "989 TFLOP/s"),
    (0.00085, "s", "850 µs"),
    (5e-9, "s", "5 ns"),
    (0, "W", "0 W"),
    (-3.2e6, "W", "-3.2 MW"),
])
def test_si_prefixes(value, unit, text):
    assert fmt.si(value, unit) == text


def test_si_smallest_prefix():
    assert fmt.si(120, "W", smallest="k") == "0.12 kW"
    assert fmt.si(0.5, "B/s", smallest="") == "0.5 B/s"
    with pytest.raises(ValueError, match="smallest prefix 'x'"):
        fmt.si(1, "W", smallest="x")


def test_decimal_and_binary_bytes_are_explicit():
    # GPT-3's fp16 weights: 350e9 bytes are 350 GB and 326 GiB
    assert fmt.bytes_si(350e9) == "350 GB"
    assert fmt.bytes_iec(350e9) == "326 GiB"
    assert fmt.bytes_iec(80 * units.GIB) == "80 GiB"
    assert fmt.bytes_si(80 * units.GIB) == "85.9 GB"
    assert fmt.bytes_iec(2**28) == "256 MiB"
    assert fmt.bytes_iec(1023.9 * units.MIB) == "1 GiB"   # rounds up into the next prefix
    assert fmt.bytes_iec(512) == "512 B"
    assert fmt.bytes_si(0.5) == "0.5 B"                   # no "mB" below a byte
    assert fmt.bytes_iec(2.8e12) == "2.55 TiB"
    assert fmt.bytes_si(2.8e12) == "2.8 TB"


def test_rates_flops_and_power():
    assert fmt.byte_rate(units.gbps_to_gbytes_s(400) * 1e9) == "50 GB/s"
    assert fmt.bit_rate(1.6e12) == "1.6 Tb/s"
    assert fmt.flop_rate(312e12) == "312 TFLOP/s"
    assert fmt.flops(3.14e23) == "314 ZFLOP"
    assert fmt.power(15) == "15 W"
    assert fmt.power(1.234e6) == "1.23 MW"


def test_tokens_and_large_counts():
    assert fmt.tokens(300e9) == "300 B tokens"      # not 3e+11
    assert fmt.tokens(15e12) == "15 T tokens"
    assert fmt.tokens(2048) == "2.05 K tokens"
    assert fmt.tokens(512) == "512 tokens"
    assert fmt.large_count(175e9) == "175 billion"
    assert fmt.large_count(1.8e12) == "1.8 trillion"
    assert fmt.large_count(2.5e6, words=False) == "2.5 M"
    assert fmt.large_count(16384) == "16,384"         # words start at a million


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0 s"),
    (0.00085, "850 µs"),
    (0.0123, "12.3 ms"),
    (42.04, "42 s"),
    (632.84, "10.5 min"),                # not 10.547349562026666 min
    (3 * 3600 + 5 * 60, "3.08 h"),
    (47 * 3600, "47 h"),                 # hours up to two days
    (33.9 * 86400, "33.9 days"),
    (700 * 86400, "700 days"),
    (96.4 * 365.25 * 86400, "96.4 years"),
    (math.inf, "forever"),
])
def test_durations_pick_the_unit_a_reader_would(seconds, text):
    assert fmt.duration(seconds) == text


def test_money_has_a_currency_symbol_and_the_currency_is_a_parameter():
    assert fmt.money(12_345_678) == "$12.3 million"
    assert fmt.money(2.4e9) == "$2.4 billion"
    assert fmt.money(123_456.7) == "$123,000"           # three significant figures
    assert fmt.money(638_022) == "$638,000"
    assert fmt.money(999) == "$999"
    assert fmt.money(3.5) == "$3.50"
    assert fmt.money(123_456.7, "EUR") == "€123,000"
    assert fmt.money(12_345_678, "krw") == "₩12.3 million"
    assert fmt.money(42, "KRW") == "₩42"                  # no cents in won
    assert fmt.money(1234, "CHF") == "CHF 1,234"          # a code without a symbol here
    assert fmt.money(-5) == "-$5.00"


@pytest.mark.parametrize("bad", ["dollars", "", "U$D", 12])
def test_money_rejects_what_is_not_a_currency_code(bad):
    with pytest.raises(ValueError, match="currency must be a three-letter ISO 4217 code"):
        fmt.money(1.0, bad)


@pytest.mark.parametrize(("fraction", "kw", "text"), [
    (0.4567, {}, "45.7%"),
    (0.05, {}, "5%"),
    (0.9995, {}, "100%"),
    (0.00012, {}, "0.01%"),
    (0.000012, {}, "<0.01%"),
    (0.042, {"signed": True}, "+4.2%"),
    (-0.042, {"signed": True}, "-4.2%"),
    (1.234, {}, "123%"),
    (0.0, {}, "0%"),
    (0.123456, {"digits": 2}, "12%"),
])
def test_percentages(fraction, kw, text):
    assert fmt.percent(fraction, **kw) == text


def test_axis_ticks_have_no_exponents_or_offsets():
    ticks = [fmt.axis_tick(v) for v in (0, 0.25, 1, 10, 1000, 20_000, 1e6, 1.5e6, 3e11)]
    assert ticks == ["0", "0.25", "1", "10", "1000", "20k", "1M", "1.5M", "300B"]
    assert fmt.axis_tick(2024) == "2024"  # a year stays a year
    assert all("e" not in t for t in ticks)
    assert fmt.axis_tick(2**30, binary=True) == "1 GiB"
    assert fmt.axis_tick(1e10, "B/s") == "10 GB/s"
    assert fmt.axis_formatter("W")(1500.0, 0) == "1.5 kW"


def test_nothing_prints_python_float_noise():
    # awkward floats never print more than the significant figures asked for
    for x in (1 / 3, 2 / 3 * 100, math.pi * 1e-3, 10.547349562026666, 0.1 + 0.2, 999.4):
        for digits in (2, 3, 4):
            for text in (fmt.sig(x, digits), fmt.si(x, "B/s", digits),
                         fmt.duration(x, digits)):
                mantissa = text.split(" ")[0].replace(",", "")
                whole = len(mantissa.split(".")[0].lstrip("0"))
                number = mantissa.replace(".", "").lstrip("0")
                assert len(number) <= max(digits, whole), (x, digits, text)
