"""scaleout.congestion: loss and go-back-N, PFC headroom and pauses, ECN marking, DCQCN's
rules and fluid model, receiver credits; an incast with a victim flow under each."""

import math

import numpy as np
import pytest
from scaleout import congestion as C
from scaleout.catalog import load_entries


# --------------------------------------------------------------------------- loss
def test_go_back_n_resends_the_window():
    assert C.go_back_n_goodput(0.0, 500) == 1.0
    assert C.go_back_n_goodput(1e-3, 1000) == pytest.approx(0.999 / 1.999)  # about half
    assert C.go_back_n_goodput(1e-3, 1) == pytest.approx(C.selective_repeat_goodput(1e-3))
    g = C.go_back_n_goodput(np.array([1e-5, 1e-4, 1e-3]), 500)
    assert np.all(np.diff(g) < 0) and g.shape == (3,)
    assert C.selective_repeat_goodput(1e-3) == pytest.approx(0.999)
    with pytest.raises(ValueError, match="loss_rate must be in"):
        C.go_back_n_goodput(1.0, 10)
    with pytest.raises(ValueError, match="window_packets must be >= 1"):
        C.go_back_n_goodput(0.1, 0)


# --------------------------------------------------------------------------- PFC
def test_pfc_headroom_is_the_bytes_still_on_the_wire():
    # 400 Gb/s = 50 GB/s; 100 m of fibre is 490 ns each way; 1 us to react; two 4 KB MTUs
    h = C.pfc_headroom_bytes(400, 100)
    assert h == pytest.approx(50e9 * (2 * 490e-9 + 1e-6) + 2 * 4096)
    assert 0.1e6 < h < 0.12e6
    assert C.pfc_headroom_bytes(800, 100) > 2 * C.pfc_headroom_bytes(400, 100) - 2 * 8192 - 1
    assert C.pfc_headroom_bytes(400, 0, response_ns=0) == 2 * 4096
    with pytest.raises(ValueError, match="cable_m"):
        C.pfc_headroom_bytes(400, -1)


# --------------------------------------------------------------------------- ECN, DCQCN
def test_ecn_marking_ramps_from_kmin_to_pmax_then_marks_everything():
    q = np.array([0, 5e3, 102.5e3, 200e3, 200.1e3])
    np.testing.assert_allclose(C.ecn_mark_probability(q), [0, 0, 0.005, 0.01, 1.0])
    with pytest.raises(ValueError, match="kmin_bytes and kmax_bytes"):
        C.ecn_mark_probability(1.0, 10, 5)


def test_dcqcn_cut_and_raise_follow_the_published_rules():
    rc, rt, alpha = C.dcqcn_cut(400.0, 300.0, 1.0)
    assert (rc, rt) == (200.0, 400.0) and alpha == pytest.approx(1.0)
    rc, rt, alpha = C.dcqcn_cut(400.0, 400.0, 0.5, g=1 / 256)
    assert rc == 300.0 and alpha == pytest.approx(0.5 * 255 / 256 + 1 / 256)
    p = C.DcqcnParams()
    # fast recovery halves the gap to the target, F times, without moving the target
    a, b = 100.0, 400.0
    for step in range(1, p.fast_recovery_steps + 1):
        a2, b2 = C.dcqcn_raise(a, b, step, line_rate=400.0)
        assert b2 == b and a2 == pytest.approx((a + b) / 2)
        a = a2
    # then additive increase raises the target by R_AI, later hyper increase by R_HAI
    _, b_ai = C.dcqcn_raise(a, b - 10, p.fast_recovery_steps + 1, line_rate=400.0)
    assert b_ai == pytest.approx(b - 10 + 400 * p.rai_share)
    _, b_hai = C.dcqcn_raise(a, b - 10, 2 * p.fast_recovery_steps + 1, line_rate=400.0)
    assert b_hai == pytest.approx(b - 10 + 400 * p.rhai_share)
    assert C.dcqcn_raise(399.0, 400.0, 99, line_rate=400.0)[1] == 400.0  # capped at line rate
    with pytest.raises(ValueError, match="kmax_bytes must be > kmin_bytes"):
        C.DcqcnParams(kmin_bytes=10, kmax_bytes=10)


def test_dcqcn_converges_to_the_fair_share_with_a_short_queue():
    """Long flows: after the first burst, each of N senders sends C/N, the queue stays below
    K_max (marking keeps it short), and PFC no longer pauses (the point of DCQCN)."""
    for n in (2, 16):
        r = C.simulate_incast(n, "dcqcn", message_bytes=160e6 / n, victim_bytes=0)
        tail = slice(len(r.t_s) // 2, len(r.t_s))
        assert r.sender_gbps[tail].mean() == pytest.approx(400 / n, rel=0.03)
        p = C.DcqcnParams()
        assert r.queue_bytes[tail].max() < p.kmax_bytes
        assert not r.paused[tail].any()
        # the price: after each cut the port idles a little (a few percent)
        assert r.ideal_incast_s < r.incast_s < 1.1 * r.ideal_incast_s


# --------------------------------------------------------------------------- the incast
@pytest.mark.parametrize("mech", C.MECHANISMS)
def test_every_mechanism_delivers_everything_no_faster_than_the_port(mech):
    r = C.simulate_incast(8, mech, message_bytes=1e6, victim_bytes=4e6)
    assert r.incast_s >= r.ideal_incast_s * (1 - 1e-9)
    assert r.victim_s >= r.ideal_victim_s * (1 - 1e-9)
    dt = r.t_s[1] - r.t_s[0]
    sent = r.sender_gbps.sum() * dt * 1e9 / 8  # one sender's bytes
    assert sent == pytest.approx(1e6, rel=1e-6)
    assert r.victim_gbps.sum() * dt * 1e9 / 8 == pytest.approx(4e6, rel=1e-6)
    assert np.all(r.queue_bytes >= 0) and r.collective_s == max(r.incast_s, r.victim_s)


def test_pfc_alone_blocks_the_victim_and_a_mechanism_recovers_it():
    """16 senders to one port, a victim through the same links: PFC pauses them about
    15/16 of the incast, so the victim is slowed (head-of-line blocking); DCQCN helps once it
    has converged; receiver credits never build the queue."""
    runs = {m: C.simulate_incast(16, m, victim_bytes=32e6) for m in C.MECHANISMS}
    pfc, dcqcn, credits = runs["pfc"], runs["dcqcn"], runs["credits"]
    incast_window = pfc.t_s < pfc.incast_s
    assert pfc.paused[incast_window].mean() == pytest.approx(15 / 16, abs=0.03)
    assert pfc.max_queue_bytes >= pfc.xoff_bytes
    assert credits.max_queue_bytes == 0 and credits.pauses == 0
    assert credits.victim_slowdown == pytest.approx(1.0)
    assert pfc.victim_slowdown > dcqcn.victim_slowdown > credits.victim_slowdown
    assert pfc.slowdown > 1.5 and credits.slowdown == pytest.approx(1.0)
    # the incast itself is bounded by the receiver's port whatever the mechanism
    for r in runs.values():
        assert r.incast_s == pytest.approx(r.ideal_incast_s, rel=0.1)


def test_more_senders_hurt_the_victim_more_under_pfc():
    slow = [C.simulate_incast(n, "pfc", victim_bytes=8e6).victim_slowdown for n in (2, 8, 32)]
    assert slow[0] < slow[1] < slow[2]


def test_simulate_incast_bad_input():
    with pytest.raises(ValueError, match="mechanism must be one of"):
        C.simulate_incast(4, "ecmp")
    with pytest.raises(ValueError, match="senders must be a whole number"):
        C.simulate_incast(0)
    with pytest.raises(ValueError, match="xon_bytes must be < xoff_bytes"):
        C.simulate_incast(4, xoff_bytes=1e5, xon_bytes=2e5)
    with pytest.raises(ValueError, match="more than the"):
        C.simulate_incast(4000, message_bytes=1e9, dt_us=1.0)


# --------------------------------------------------------------------------- the catalog
def test_mechanisms_load_with_sources():
    names = [m.name for m in C.mechanisms()]
    for want in ("PFC", "ECN", "DCQCN", "InfiniBand credit-based flow control",
                 "InfiniBand adaptive routing", "Packet spraying", "Spectrum-X",
                 "Ultra Ethernet Transport", "Receiver-driven credits"):
        assert want in names
    assert C.mechanism("802.1Qbb").name == "PFC" and C.mechanism("uet").name.startswith("Ultra")
    assert all(m.source and m.how and m.limits for m in C.mechanisms())
    assert {m.name for m in C.mechanisms("product")} == {"Spectrum-X", "Ultra Ethernet Transport"}
    with pytest.raises(ValueError, match="did you mean"):
        C.mechanism("DCQN")


def test_a_bad_mechanism_entry_names_file_entry_and_field(tmp_path):
    path = tmp_path / "congestion.toml"
    path.write_text('[[mechanism]]\nname = "X"\nkind = "wire"\nnetwork = "both"\n'
                    'addresses = "a"\nhow = "b"\nlimits = "c"\nyear = 2020\nsource = "s"\n',
                    encoding="utf-8")
    with pytest.raises(ValueError, match=r"congestion.toml: \[\[mechanism\]\] entry 1.*kind"):
        load_entries(path, "mechanism", C.Mechanism)
    assert math.isclose(C.FIBRE_NS_PER_M, 4.9)
