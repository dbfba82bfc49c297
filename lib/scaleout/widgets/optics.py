"""Optics explorer (notebook 10): a cluster's optical modules, fibres, watts and cost by technology.

Pick the optics technology of the long links (or "auto", the cheapest that reaches),
the link speed (800G or 1.6T, 400G too), the SerDes lane class (112G or 224G), the
number of GPUs, the switch chip and the three cable lengths of a Clos fabric. The
fabric is sized by :func:`scaleout.fabric.size_fabric` (one port per GPU, one plane),
its links priced by :func:`scaleout.optics.fabric_bill`; the top chart is the optics'
power against cluster size for DSP, LPO, NPO and CPO, the bottom one the power at the
chosen size split by link type. The explorer computes nothing itself.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import ipywidgets as W
import numpy as np

from .. import fabric, optics, svgchart
from .. import formatting as fmt
from ..render import html_table
from .common import Explorer

__all__ = ["LINK_COLORS", "SHORT", "SPEED_OPTIONS", "SWEEP_GPUS", "TECH_COLORS", "OpticsExplorer",
           "cluster_groups", "speed_text"]

#: One colour per technology, the same in the notebook's figures.
TECH_COLORS = {"dsp": "#1f77b4", "lpo": "#2ca02c", "npo": "#9467bd", "cpo": "#d62728",
               "auto": "#555555"}
#: One colour per link type (bars split by tier).
LINK_COLORS = {"endpoint-leaf": "#8c564b", "leaf-spine": "#17becf", "spine-core": "#bcbd22"}
SPEED_OPTIONS = (("400G", 400), ("800G", 800), ("1.6T", 1600))
_LANE_OPTIONS = (("112G lanes", 112), ("224G lanes", 224))
_CHOICE_LABELS = {"auto": "auto (cheapest that reaches)", "dsp": "DSP", "lpo": "LPO",
                  "npo": "NPO", "cpo": "CPO"}
#: Short names for charts: "auto", "DSP", "LPO", "NPO", "CPO".
SHORT = {c: ("auto" if c == "auto" else c.upper()) for c in _CHOICE_LABELS}
#: Cluster sizes the top chart sweeps (those the fabric can serve are drawn).
SWEEP_GPUS = tuple(2**k for k in range(8, 21))
_WIDE = {"style": {"description_width": "110px"}, "layout": W.Layout(width="300px")}


def cluster_groups(n_gpus: int, port_gbps: float, switch: str, endpoint_leaf_m: float,
                   leaf_spine_m: float, spine_core_m: float) -> tuple[fabric.ClosDesign, tuple]:
    """The Clos plane of ``n_gpus`` one-port GPUs on ``switch`` chips, and its link groups.

    The radix is the chip's at ``port_gbps`` (:meth:`scaleout.fabric.SwitchChip.radix`);
    the fewest tiers that fit are used (:func:`scaleout.fabric.size_fabric`).
    """
    radix = fabric.switch_chip(switch).radix(port_gbps)
    design = fabric.size_fabric(n_gpus, radix, port_gbps)
    return design, design.link_groups(endpoint_leaf_m, leaf_spine_m, spine_core_m)


def speed_text(gbps: float) -> str:
    """``800`` → ``"800G"``, ``1600`` → ``"1.6T"`` (how ports and modules are named)."""
    return f"{gbps / 1000:g}T" if gbps >= 1000 else f"{gbps:g}G"


class OpticsExplorer(Explorer):
    """Modules, fibres, watts and relative cost of a GPU cluster's network links.

    Controls: ``technology`` (:data:`scaleout.optics.CHOICES`), ``speed_gbps``,
    ``lane_gbps`` (112 or 224), ``n_gpus``, ``switch`` (a chip of
    ``data/switches.toml``), ``endpoint_leaf_m``, ``leaf_spine_m``, ``spine_core_m``
    (cable lengths) and ``copper`` (copper where it reaches). ``result`` is a dict:
    ``design`` (:class:`~scaleout.fabric.ClosDesign`), ``groups``, ``bills``
    (:class:`~scaleout.optics.FabricBill` per choice), ``bill`` (the chosen one),
    ``sweep`` (``{"gpus": array, choice: BillSweep}``).
    """

    title = "What do a cluster's optics cost? Modules, fibres and watts by technology"

    def _build_controls(self) -> dict[str, W.ValueWidget]:
        switches = [c.name for c in fabric.switch_chips()]
        length = {"style": {"description_width": "110px"}, "layout": W.Layout(width="300px")}
        return {
            "technology": W.Dropdown(options=[(label, c) for c, label in _CHOICE_LABELS.items()],
                                     value="lpo", description="optics", **_WIDE),
            "speed_gbps": W.Dropdown(options=list(SPEED_OPTIONS), value=800,
                                     description="link speed", **_WIDE),
            "lane_gbps": W.Dropdown(options=list(_LANE_OPTIONS), value=112,
                                    description="lane rate", **_WIDE),
            "n_gpus": W.BoundedIntText(value=32768, min=0, max=100_000_000,
                                       description="GPUs", **_WIDE),
            "switch": W.Dropdown(options=switches,
                                 value="Tomahawk 6" if "Tomahawk 6" in switches else switches[-1],
                                 description="switch chip", **_WIDE),
            "copper": W.Checkbox(value=True, description="copper where it reaches",
                                 indent=False),
            "endpoint_leaf_m": W.BoundedFloatText(value=3.0, min=-1.0, max=1e5,
                                                  description="GPU–leaf (m)", **length),
            "leaf_spine_m": W.BoundedFloatText(value=30.0, min=-1.0, max=1e5,
                                               description="leaf–spine (m)", **length),
            "spine_core_m": W.BoundedFloatText(value=500.0, min=-1.0, max=1e5,
                                               description="spine–core (m)", **length),
        }

    # -- library calls only -----------------------------------------------------------------
    def _compute(self, v: Mapping[str, Any]) -> dict[str, Any]:
        speed, lane, copper = float(v["speed_gbps"]), int(v["lane_gbps"]), bool(v["copper"])
        lengths = (v["endpoint_leaf_m"], v["leaf_spine_m"], v["spine_core_m"])
        design, groups = cluster_groups(v["n_gpus"], speed, v["switch"], *lengths)
        bills = {c: optics.fabric_bill(groups, c, lane_gbps=lane, copper=copper)
                 for c in optics.CHOICES}
        top = design.max_endpoints if design.tiers == 3 else \
            fabric.max_endpoints(design.radix, 3, design.oversubscription)
        gpus = np.array([n for n in SWEEP_GPUS if n <= top], dtype=np.int64)
        sets = [cluster_groups(int(n), speed, v["switch"], *lengths)[1] for n in gpus]
        sweep: dict[str, Any] = {"gpus": gpus}
        for c in optics.OPTICAL:
            sweep[c] = optics.sweep_link_groups(sets, c, lane_gbps=lane, copper=copper)
        return {"design": design, "groups": groups, "bills": bills,
                "bill": bills[v["technology"]], "choice": v["technology"], "sweep": sweep,
                "speed_gbps": speed, "lane_gbps": lane}

    # -- drawing ----------------------------------------------------------------------------
    def _render(self, r: dict[str, Any]) -> str:
        design, choice, sweep = r["design"], r["choice"], r["sweep"]
        n = design.endpoints
        speed = speed_text(r["speed_gbps"])
        series = {SHORT[c]: (sweep["gpus"], sweep[c].power_w / 1e3) for c in optics.OPTICAL}
        colors = {SHORT[c]: TECH_COLORS[c] for c in optics.OPTICAL}
        points = {SHORT[c]: (n, r["bills"][c].power_w / 1e3) for c in optics.OPTICAL}
        top = svgchart.line_chart(
            series, colors, logx=True, logy=True, xlabel="GPUs (one port each)",
            ylabel="optics power (kW)", highlight=SHORT[choice], marker_x=n,
            marker_label=fmt.plural(n, "GPU"),
            points=points, height=320,
            title=f"{speed} links, {r['lane_gbps']}G lanes: optics power by cluster size")
        rows = {SHORT[c]: {g.name: g.power_w / 1e3 for g in r["bills"][c].groups}
                for c in optics.CHOICES}
        bottom = svgchart.stacked_hbars(
            rows, {t: LINK_COLORS[t] for t in fabric.LINK_TYPES}, xlabel="optics power (kW)",
            title=f"{fmt.plural(n, 'GPU')}, {fmt.plural(design.tiers, 'tier')}: power by link type",
            highlight=SHORT[choice])
        self.image.value = svgchart.vstack([top, bottom])

        table = html_table(
            ["optics", "module ends", "copper cables", "fibres", "power", "rel. cost", "pJ/bit",
             "fell back"],
            [(("★ " if c == choice else "") + _CHOICE_LABELS[c], fmt.count(b.transceivers),
              fmt.count(b.cables), fmt.count(b.fibres), fmt.power(b.power_w),
              fmt.sig(b.relative_cost), fmt.sig(b.pj_per_bit),
              ", ".join(g.name for g in b.groups if g.fell_back) or "—")
             for c, b in r["bills"].items()],
            align=["left"] + ["right"] * 6 + ["left"])
        bill = r["bill"]
        per = html_table(
            ["link type", "links", "length", "unit", "power per unit", "pJ/bit",
             "latency per link"],
            [(g.name, fmt.count(g.count), f"{fmt.sig(g.length_m)} m", g.module.name,
              fmt.power(g.module.power_w), fmt.sig(g.module.pj_per_bit),
              fmt.duration(g.link_latency_ns * 1e-9)) for g in bill.groups],
            align=["left", "right", "right", "left", "right", "right", "right"])
        return (
            f"<p><b>{fmt.plural(n, 'GPU')}</b> on radix-{design.radix} switches "
            f"({fmt.plural(design.tiers, 'tier')}, "
            f"{fmt.plural(design.switches, 'switch', 'switches')}, "
            f"{fmt.plural(design.links, 'link')} of {speed})</p>{table}"
            f"<p>Chosen: <b>{html.escape(_CHOICE_LABELS[choice])}</b> — per link type:</p>{per}"
            "<p>Optical links count two module ends, copper links one cable; relative cost "
            "1.0 = one 800G DSP DR8 module (the project's assumption).</p>"
        )
