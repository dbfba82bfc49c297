"""Fabric explorers (notebook 09): a Clos fabric's bill of switches, links and optics, and
ECMP against spraying. Every number comes from :mod:`scaleout.fabric`; charts are SVG.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import ipywidgets as W
import numpy as np

from .. import fabric, svgchart
from .. import formatting as fmt
from ..plotting import LOAD_BALANCE_COLORS
from ..render import html_table
from .common import Explorer

__all__ = ["PORT_SPEEDS_GBPS", "TIER_COLORS", "FabricExplorer", "LoadBalanceExplorer"]

#: Per-port speeds offered by the explorer, Gb/s.
PORT_SPEEDS_GBPS = (100, 200, 400, 800, 1600)
#: One colour per tier: its switches and the links that climb to it.
TIER_COLORS = {"tier 1 (leaf)": "#1f77b4", "tier 2 (spine)": "#ff7f0e",
               "tier 3 (core)": "#2ca02c"}
_TIER_KEYS = tuple(TIER_COLORS)
_WIDE = {"style": {"description_width": "110px"}, "layout": W.Layout(width="300px")}
_SERIES = {"switches": "#1f77b4", "transceivers": "#d62728", "links": "#7f7f7f"}


class FabricExplorer(Explorer):
    """Radix, port speed, tiers, oversubscription, planes and GPUs → the fabric's bill.

    Controls: ``radix`` (ports per switch, even), ``port_gbps`` (per port, each plane),
    ``tiers`` (0 = the fewest that serve the GPUs, else 1, 2 or 3), ``oversubscription``
    (leaf downlinks : uplinks), ``planes`` (one NIC port per plane) and ``n_gpus``.
    ``result`` is a dict with the :class:`scaleout.fabric.MultiPlaneDesign` (``design``),
    its ``transceivers`` and ``latency_s``, and the ``sweep`` drawn
    (:class:`scaleout.fabric.FabricSweep` over GPU counts up to the tiers' maximum).
    """

    title = "A Clos fabric: switches, links, optics and bisection"

    def _build_controls(self) -> dict[str, W.ValueWidget]:
        return {
            "radix": W.BoundedIntText(value=64, min=0, max=4096, description="radix k",
                                      **_WIDE),
            "port_gbps": W.Dropdown(options=list(PORT_SPEEDS_GBPS), value=400,
                                    description="port Gb/s", **_WIDE),
            "tiers": W.Dropdown(options=[("fewest", 0), ("1", 1), ("2", 2), ("3", 3)], value=0,
                                description="tiers", **_WIDE),
            "oversubscription": W.BoundedFloatText(value=1.0, min=0.0, max=1000.0,
                                                   description="oversub. r:1", **_WIDE),
            "planes": W.IntSlider(value=1, min=1, max=8, continuous_update=False,
                                  description="planes", **_WIDE),
            "n_gpus": W.BoundedIntText(value=2048, min=0, max=100_000_000,
                                       description="GPUs", **_WIDE),
        }

    # -- library calls only ----------------------------------------------------------------
    def _compute(self, v: Mapping[str, Any]) -> dict[str, Any]:
        tiers = v["tiers"] or None
        planes = v["planes"]
        design = fabric.size_multiplane(v["n_gpus"], v["port_gbps"] * planes, planes,
                                        radix=v["radix"], oversubscription=v["oversubscription"],
                                        tiers=tiers)
        top = fabric.max_endpoints(design.plane.radix, tiers or 3, v["oversubscription"])
        grid = np.unique(np.round(np.geomspace(1, top, 48)).astype(np.int64))
        sweep = fabric.fabric_sweep(grid, design.plane.radix, v["port_gbps"],
                                    v["oversubscription"], planes=planes, tiers=tiers)
        return {"design": design, "transceivers": design.transceivers(),
                "latency_s": design.worst_case_latency_s(), "max_endpoints": top,
                "sweep": sweep}

    # -- drawing -----------------------------------------------------------------------------
    def _render(self, r: dict[str, Any]) -> str:
        m: fabric.MultiPlaneDesign = r["design"]
        p = m.plane
        switches = dict(zip(_TIER_KEYS, m.switches_per_tier.values(), strict=True))
        links = dict(zip(_TIER_KEYS, m.links_per_tier.values(), strict=True))
        xcvr = dict(zip(_TIER_KEYS, r["transceivers"].values(), strict=True))
        where = (f"{fmt.plural(m.endpoints, 'GPU')}, {fmt.plural(m.planes, 'plane')} of radix "
                 f"{p.radix} at {fmt.bit_rate(p.port_gbps * 1e9)}, {fmt.plural(p.tiers, 'tier')}")
        top = svgchart.stacked_hbars(
            {"switches": switches, "links (cables)": links, "transceivers": xcvr}, TIER_COLORS,
            xlabel="count (all planes)", title=where, total_format=fmt.count, width=760,
            integer_ticks=True)
        sw = r["sweep"]
        series = {"switches": (sw.endpoints, sw.switches.astype(float)),
                  "transceivers": (sw.endpoints, sw.transceivers.astype(float)),
                  "links": (sw.endpoints, sw.links.astype(float))}
        positive = np.concatenate([y[y > 0] for _, y in series.values()])
        bottom = svgchart.line_chart(
            series, _SERIES, logx=True, logy=True,
            y_range=(float(positive.min()), float(positive.max())) if positive.size else None,
            xlabel="GPUs", ylabel="count (all planes)", marker_x=m.endpoints,
            marker_label=fmt.plural(m.endpoints, "GPU"),
            title="As the cluster grows (tiers step up)",
            points={"switches": (m.endpoints, m.switches),
                    "transceivers": (m.endpoints, sum(r["transceivers"].values()))},
            width=760, height=320)
        self.image.value = svgchart.vstack([top, bottom])
        rows = [
            ("tiers", f"{p.tiers} ({p.worst_case_switch_hops} switch hops worst case)"),
            ("GPUs / most these tiers serve",
             f"{fmt.count(m.endpoints)} / {fmt.count(r['max_endpoints'])}"),
            ("NIC", f"{m.planes} × {p.port_gbps:g}G = {fmt.bit_rate(m.nic_gbps * 1e9)}"),
            ("leaf ports down : up", f"{p.leaf_down} : {p.leaf_up}"),
            ("switches leaf / spine / core", " / ".join(fmt.count(n) for n in
                                                         m.switches_per_tier.values())),
            ("switches, all", fmt.count(m.switches)),
            ("links endpoint-leaf / leaf-spine / spine-core",
             " / ".join(fmt.count(n) for n in m.links_per_tier.values())),
            ("transceivers (optical links × 2)", fmt.count(sum(r["transceivers"].values()))),
            ("bisection, per direction", fmt.bit_rate(m.bisection_gbps * 1e9, 4)),
            ("bisection, both directions", fmt.bit_rate(m.bisection_gbps_bidir * 1e9, 4)),
            ("worst-case latency", f"{fmt.duration(r['latency_s'])} "
             f"({fmt.sig(fabric.DEFAULT_SWITCH_LATENCY_NS)} ns per switch, assumed)"),
        ]
        return html_table(["", ""], rows, align=["left", "right"])


class LoadBalanceExplorer(Explorer):
    """Flows, planes (paths), load and how the paths' speeds differ → five ways to spread
    traffic over them (:func:`scaleout.fabric.simulate_load_balance`).

    Controls: ``n_flows``, ``n_planes``, ``load`` (0-1 of the NIC's rate),
    ``path_slowdown`` (each path loses up to this share of its speed at random),
    ``slow_paths`` and ``slow_factor`` (that many paths run at that fraction of their speed),
    ``flowlet_packets`` (burst size of flowlet switching) and ``seed``. ``result`` is the
    :class:`scaleout.fabric.LoadBalanceResult` at the chosen flows plus the ``sweep`` over
    flow counts drawn.
    """

    title = "Spreading one NIC's traffic over equal-cost paths or planes"
    #: Flow counts on the chart's x axis.
    FLOWS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128)
    TRIALS = 150
    #: Flowlet sizes offered, packets.
    FLOWLETS = (8, 16, 32, 64, 128, 256, 1024)
    #: Scheme → (key of the sweep, colour), in the legend's order.
    SCHEMES: ClassVar[dict[str, tuple[str, str]]] = {
        "adaptive packet spraying": ("spray", LOAD_BALANCE_COLORS["spray"]),
        "adaptive flowlets": ("flowlet", LOAD_BALANCE_COLORS["flowlet"]),
        "round-robin spraying": ("rr", LOAD_BALANCE_COLORS["rr"]),
        "ECMP, throughput": ("ecmp", LOAD_BALANCE_COLORS["ecmp"]),
        "ECMP, collective": ("ecmp_sync", LOAD_BALANCE_COLORS["ecmp_sync"])}

    def _build_controls(self) -> dict[str, W.ValueWidget]:
        slider = {"continuous_update": False, **_WIDE}
        return {
            "n_flows": W.IntSlider(value=8, min=1, max=128, description="flows", **slider),
            "n_planes": W.IntSlider(value=4, min=1, max=16, description="planes / paths",
                                    **slider),
            "load": W.FloatSlider(value=1.0, min=0.05, max=1.0, step=0.05, description="load",
                                  **slider),
            "path_slowdown": W.FloatSlider(value=0.1, min=0.0, max=0.5, step=0.01,
                                           description="path slowdown", **slider),
            "slow_paths": W.IntSlider(value=0, min=0, max=16, description="slow paths",
                                      **slider),
            "slow_factor": W.FloatSlider(value=0.5, min=0.05, max=1.0, step=0.05,
                                         description="their speed", **slider),
            "flowlet_packets": W.Dropdown(options=list(self.FLOWLETS), value=64,
                                          description="flowlet pkts", **_WIDE),
            "seed": W.BoundedIntText(value=0, min=-1, max=1_000_000, description="seed",
                                     **_WIDE),
        }

    def _compute(self, v: Mapping[str, Any]) -> dict[str, Any]:
        kw = {"load": v["load"], "path_slowdown": v["path_slowdown"], "trials": self.TRIALS,
              "seed": v["seed"], "slow_paths": v["slow_paths"], "slow_factor": v["slow_factor"],
              "flowlet_packets": v["flowlet_packets"]}
        at = fabric.simulate_load_balance(v["n_flows"], v["n_planes"], **kw)
        sweep = fabric.load_balance_sweep(self.FLOWS, [v["n_planes"]], **kw)
        return {"at": at, "sweep": {k: a[0] for k, a in sweep.items()},
                "slow_paths": v["slow_paths"],
                "slow_factor": v["slow_factor"]}

    def _render(self, r: dict[str, Any]) -> str:
        at: fabric.LoadBalanceResult = r["at"]
        xs = np.asarray(self.FLOWS, dtype=float)
        series = {name: (xs, r["sweep"][key]) for name, (key, _) in self.SCHEMES.items()}
        colors = {name: color for name, (_, color) in self.SCHEMES.items()}
        means = {"spray": at.spray_mean, "flowlet": at.flowlet_mean, "rr": at.rr_mean,
                 "ecmp": at.ecmp_mean, "ecmp_sync": at.ecmp_sync_mean}
        slow = (f", {r['slow_paths']} at {fmt.percent(r['slow_factor'])} speed"
                if r["slow_paths"] else "")
        self.image.value = svgchart.line_chart(
            series, colors, logx=True, y_range=(0.0, 1.0), xlabel="flows",
            ylabel="utilisation (ideal time / time taken)", marker_x=at.n_flows,
            marker_label=fmt.plural(at.n_flows, "flow"),
            title=(f"{fmt.plural(at.n_paths, 'path')}{slow}, load {fmt.percent(at.load)}: "
                   f"mean of {fmt.count(self.TRIALS)} draws"),
            points={name: (at.n_flows, means[key]) for name, (key, _) in self.SCHEMES.items()},
            width=720, height=340)
        short = {"spray": "adaptive packets", "flowlet": "adaptive flowlets", "rr": "round-robin",
                 "ecmp": "ECMP, throughput", "ecmp_sync": "ECMP, slowest flow (collective)"}
        rows = [(short[key], fmt.percent(means[key])) for _, (key, _) in self.SCHEMES.items()]
        rows += [("ceiling: paths' speed", fmt.percent(at.capacity_mean)),
                 ("round-robin queue", fmt.plural(round(at.rr_queue_packets.mean()), "packet")),
                 ("in-order buffer", fmt.plural(round(at.rr_reorder_packets.mean()), "packet")),
                 ("ECMP's busiest path", f"{fmt.sig(at.max_path_load.mean())} × its capacity")]
        return html_table(["scheme", "utilisation"], rows, align=["left", "right"])
