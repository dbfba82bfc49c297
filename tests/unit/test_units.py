"""scaleout.units: one home for conversions."""

import numpy as np
from scaleout import units


def test_decimal_and_binary_sizes():
    assert units.GB == 10**9 and units.GIB == 2**30
    assert units.bytes_to_gb(350e9) == 350
    assert round(units.gb_to_gib(80), 2) == 74.51
    assert round(units.gib_to_gb(80), 2) == 85.90
    assert units.gib_to_bytes(1) == 1024**3
    assert units.gb_to_bytes(2) == 2e9


def test_bits_and_bytes_per_second():
    # a 400 Gb/s NDR InfiniBand port carries 50 GB/s in each direction
    assert units.gbps_to_gbytes_s(400) == 50
    assert units.gbytes_s_to_gbps(50) == 400


def test_per_direction_from_vendor_total():
    # NVLink 4 on H100: "900 GB/s" is 450 GB/s each way
    assert units.per_direction(900) == 450


def test_arrays_convert_elementwise():
    out = units.bytes_to_gib(np.array([2**30, 2**31]))
    assert out.tolist() == [1.0, 2.0]


def test_time_and_flops():
    assert units.seconds_to_days(86_400 * 3) == 3
    assert units.tflops_to_flops(312) == 312e12


def test_both_directions_inverts_per_direction():
    assert units.both_directions(units.per_direction(900)) == 900


def test_days_to_julian_years():
    assert units.days_to_years(365.25 * 34) == 34
