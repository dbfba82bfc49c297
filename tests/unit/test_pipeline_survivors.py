"""Tests written to kill surviving mutants of ``scaleout.pipeline`` (batch q1).

They cover ``utilisation``, ``micro_batches_for_utilisation``, ``in_flight_closed_form``,
``in_flight_arrays`` and ``_check_share`` (through ``bubble_fraction``). Every expected value is
worked out by hand in the test from the published formulas (Narayanan et al. 2021, Sec. 2.2;
Qi et al. 2023, Sec. 3.1), or is an input the library must refuse.
"""

import numpy as np
import pytest
from scaleout import pipeline


# ----------------------------------------------------------------------------- utilisation
def test_utilisation_passes_the_times_on_to_zero_bubble():
    # ZB-H1, p = 4, m = 8, T_F = 1, T_B = 2, weight-gradient share 1/4: T_W = 0.5, the
    # input-gradient half 1.5. Bubble (p - 1)(T_F + T_B - T_W)/(m T) with T = 3 (Qi et al.
    # Sec. 3.1; the library's T_B is the whole backward, so T_F + (T_B - T_W) - T_W = 2):
    # 3 * 2 / (8 * 3) = 1/4, utilisation 1 / (1 + 1/4) = 0.8. With the default share 1/2 it
    # would be 3 * 1 / 24 = 1/8, utilisation 8/9: the times must reach bubble_fraction.
    u = pipeline.utilisation("zb-h1", 4, 8, forward_s=1.0, backward_s=2.0,
                             weight_grad_share=0.25)
    assert u == pytest.approx(0.8)


# ----------------------------------------------------------- micro_batches_for_utilisation
def test_micro_batches_for_utilisation_refuses_a_zero_target():
    # "target must be a number > 0 and < 1": 0 passes the range check [0, 1] and must still
    # be refused (no pipeline aims at zero utilisation).
    with pytest.raises(ValueError, match="target"):
        pipeline.micro_batches_for_utilisation(0.0, 4)


def test_micro_batches_for_utilisation_rounds_up_to_p_for_two_chunks():
    # 50 % with p = 4, v = 2: m >= u (p - 1)/((1 - u) v) = 0.5 * 3 / (0.5 * 2) = 1.5, so 2;
    # interleaving needs m a multiple of p (Narayanan Sec. 2.2.2): 4.
    # Check: v m / (v m + p - 1) = 8 / 11 >= 0.5.
    assert pipeline.micro_batches_for_utilisation(0.5, 4, 2) == 4


def test_micro_batches_for_utilisation_rounds_up_to_p_for_two_stages():
    # 50 % with p = 2, v = 2: m >= 0.5 * 1 / (0.5 * 2) = 0.5, so 1; a multiple of p = 2: 2.
    assert pipeline.micro_batches_for_utilisation(0.5, 2, 2) == 2


# ----------------------------------------------------------------- in-flight micro-batches
def test_interleaved_in_flight_with_one_chunk_follows_the_interleaved_warm_up():
    # The interleaved schedule with v = 1 keeps Megatron's interleaved warm-up of
    # 2 (p - i - 1) + (v - 1) p forwards, not 1F1B's p - i - 1. p = 4, m = 8:
    # min(2 (4 - i - 1) + 1, 8) = 7, 5, 3, 1 (1F1B would hold 4, 3, 2, 1).
    expected = [7.0, 5.0, 3.0, 1.0]
    np.testing.assert_array_equal(pipeline.in_flight_closed_form("interleaved", 4, 8, 1),
                                  expected)
    # and the simulated timeline agrees
    np.testing.assert_array_equal(pipeline.simulate("interleaved", 4, 8, 1).peak_in_flight_mb,
                                  expected)


def test_in_flight_arrays_defaults_to_the_first_stage():
    # 1F1B, p = 4, m = 8: the first stage holds min(p - 0, m) = 4 (Narayanan Sec. 2.2.1).
    assert float(pipeline.in_flight_arrays(4, 8, 1)) == 4.0


def test_in_flight_arrays_obeys_an_explicit_interleaved_flag():
    # p = 4, m = 8, stage 0. interleaved=True with v = 1: min(2 * 3 + 0 + 1, 8) / 1 = 7.
    assert float(pipeline.in_flight_arrays(4, 8, 1, 0, interleaved=True)) == 7.0
    # interleaved=False with v = 2: 1F1B's min(p - 0, m) = 4, not the chunks' count
    # min(2 * 3 + 1 * 4 + 1, 16) / 2 = 5.5.
    assert float(pipeline.in_flight_arrays(4, 8, 2, 0, interleaved=False)) == 4.0


def test_in_flight_arrays_does_not_wrap_small_integer_types():
    # Counts given as uint8 arrays (p = m = 100, v = 2, stage 0) are valid numbers; the
    # formula's intermediate 2 (p - 1) + (v - 1) p + 1 = 299 does not fit in uint8 and must not
    # wrap. Interleaved: min(299, v m = 200) / 2 = 100.
    u8 = np.array([100], dtype=np.uint8)
    got = pipeline.in_flight_arrays(u8, u8, np.array([2], dtype=np.uint8),
                                    np.array([0], dtype=np.uint8))
    np.testing.assert_array_equal(got, [100.0])


# ---------------------------------------------------------------------- weight-grad share
@pytest.mark.parametrize("share", [0.0, 1.0])
def test_zero_bubble_refuses_a_share_at_either_end(share):
    # "weight_grad_share must be strictly between 0 and 1": with no W pass (0) or no B pass
    # (1) there is no zero-bubble split to schedule.
    with pytest.raises(ValueError, match="strictly between"):
        pipeline.bubble_fraction("zb-h1", 4, 8, weight_grad_share=share)
