"""The optics bill of the issue's headline fabric, alone and with its sizing.

A 131,072-endpoint two-tier fabric: 800G NICs split into four 200G planes on 102.4 Tb/s
switches (radix 512), ``scaleout.fabric.size_multiplane``; its links priced by
``scaleout.optics.fabric_bill`` (DSP, LPO, and "auto"), and a 12-size sweep of one
shape (``sweep_link_groups``) as the notebook's figures run it. Targets: sizing + bill
under 10 ms together (the issue's), the bill alone well under it (1 ms), the sweep under
10 ms.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from scaleout import fabric, optics

N_ENDPOINTS = 131_072
DESIGN = fabric.size_multiplane(N_ENDPOINTS, 800, 4, switch_gbps=102_400)
GROUPS = DESIGN.link_groups()
SIZES = [2**k for k in range(8, 20)]  # 256 .. 524,288 (three tiers of radix 128)


def _sized_and_billed() -> optics.FabricBill:
    design = fabric.size_multiplane(N_ENDPOINTS, 800, 4, switch_gbps=102_400)
    return optics.fabric_bill(design.link_groups(), "dsp")


def _sweep() -> optics.BillSweep:
    k = fabric.switch_chip("Tomahawk 6").radix(800)
    sets = [fabric.size_fabric(n, k, 800).link_groups() for n in SIZES]
    return optics.sweep_link_groups(sets, "lpo")


CASES: dict[str, tuple[Callable[[], object], float]] = {
    "fabric_bill (DSP), 131,072 endpoints, 4 planes x 2 tiers": (
        lambda: optics.fabric_bill(GROUPS, "dsp"), 1.0),
    "fabric_bill (LPO), same fabric": (lambda: optics.fabric_bill(GROUPS, "lpo"), 1.0),
    "fabric_bill (auto), same fabric": (lambda: optics.fabric_bill(GROUPS, "auto"), 1.0),
    "size_multiplane + fabric_bill, 131,072 endpoints": (_sized_and_billed, 10.0),
    "12 sizes sized + sweep_link_groups (LPO)": (_sweep, 10.0),
}


def test_the_fabric_is_the_headline_one() -> None:
    assert DESIGN.plane.tiers == 2 and DESIGN.plane.radix == 512 and DESIGN.endpoints == N_ENDPOINTS
    bill = optics.fabric_bill(GROUPS, "dsp")
    assert bill.links == DESIGN.links and bill.power_w > 0


@pytest.mark.parametrize("name", list(CASES))
def test_optics_bill(benchmark, name: str, results_table) -> None:
    call, target_ms = CASES[name]
    benchmark(call)
    median_ms = benchmark.stats.stats.median * 1e3
    table = results_table("Optics bill (notebook 10)", ("case", "median ms", "rounds", "target"))
    verdict = "ok" if median_ms < target_ms else "TOO SLOW"
    table.rows.append((name, f"{median_ms:.3f}", str(benchmark.stats.stats.rounds),
                       f"< {target_ms:g} ms {verdict}"))
    assert median_ms < target_ms, f"{name}: median {median_ms:.2f} ms (target {target_ms} ms)"
