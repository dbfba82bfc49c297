"""The machines: a node (notebook 09), rail-optimised and multi-plane wiring (09), a chassis
super-node (12) and the four kinds of optical transceiver (10), drawn from the catalogs and
the fabric sizing of the library."""

from __future__ import annotations

from .. import catalog, fabric, optics, synthesis, units
from ..checks import check_int, check_positive
from ._svg import (
    BLUE,
    GREEN,
    GREY,
    LABEL,
    LINE,
    ORANGE,
    PALE,
    PALETTE,
    PURPLE,
    SMALL,
    VERMILLION,
    Canvas,
    fit_size,
    heading,
    ink,
    text_width,
    wrap,
)

__all__ = ["multi_plane", "node", "rail_optimised", "super_node", "transceivers"]

#: Link colours by medium and role, used across these pictures.
NVLINK, PCIE, NETWORK = GREEN, GREY, BLUE
ELECTRICAL, OPTICAL = VERMILLION, BLUE


def _gbps(gbps: float) -> str:
    return f"{gbps / 1000:g} Tb/s" if gbps >= 1000 else f"{gbps:g} Gb/s"


def node(gpu: str = "H100-SXM5-80GB", *, nvswitches: int = 4, pcie_switches: int = 4,
         cpus: int = 2) -> str:
    """One 8-GPU server: GPUs on NVSwitches (scale-up), each paired with a NIC (scale-out).

    Every GPU links to every NVSwitch chip (NVLink, the scale-up domain); GPUs
    and NICs sit in pairs under PCIe switches, which the CPUs reach too, and each
    NIC is one port of the scale-out network, one per GPU. The GPU count, the
    NVLink bandwidth and the NIC's port come from the catalog
    (``data/gpus.toml``: ``scaleup_domain_gpus``, ``scaleup_gbytes_s``,
    ``scaleout_link``; ``data/links.toml``). The chip counts are parameters whose
    defaults are the DGX H100's (NVIDIA DGX H100 datasheet and user guide: 4
    NVSwitch chips, 8 ConnectX-7 ports for the compute fabric, 2 CPUs; GPU and
    NIC pairs under PCIe Gen5 switches).
    """
    g = catalog.gpu(gpu)
    n = g.scaleup_domain_gpus
    if n > 8:
        raise ValueError(f"gpu {g.name!r} sits in a {n}-GPU scale-up domain; this drawing "
                         "shows one server of at most 8 GPUs")
    nvs = check_int("nvswitches", nvswitches, minimum=0, maximum=8)
    pcie = check_int("pcie_switches", pcie_switches, maximum=n)
    cpus = check_int("cpus", cpus, maximum=4)
    if n % pcie:
        raise ValueError(f"pcie_switches={pcie} must divide the {n} GPUs (pairs of GPU and "
                         "NIC share a switch)")
    port = catalog.link(g.scaleout_link) if g.scaleout_link else None
    width, margin, side = 1000, 24, 170
    slot = (width - 2 * margin - side) / n
    box_w = min(104, slot - 12)
    rows = {"nvs": 92, "gpu": 228, "pcie": 360, "nic": 478}
    height = rows["nic"] + 200
    c = Canvas(width, height, f"One {n}-GPU node ({g.name})")
    heading(c, f"One node: {n} × {g.name}")
    xs = [margin + (i + 0.5) * slot for i in range(n)]
    # NVSwitch row, every GPU wired to every switch
    if nvs:
        nv_w = min(170, (width - 2 * margin - side) / nvs - 20)
        nv_x = [margin + (k + 0.5) * (width - 2 * margin - side) / nvs for k in range(nvs)]
        for x in xs:
            for xn in nv_x:
                c.line(x, rows["gpu"], xn, rows["nvs"] + 44, stroke=NVLINK, width=1.6)
        for k, xn in enumerate(nv_x):
            c.box(xn - nv_w / 2, rows["nvs"], nv_w, 44, f"NVSwitch {k}", fill=PALE["green"],
                  bold=True, stroke=NVLINK, stroke_width=2)
    else:  # a direct mesh (no switch)
        for i in range(n):
            for j in range(i + 1, n):
                mid = (xs[i] + xs[j]) / 2
                c.path(f"M{xs[i]:.1f},{rows['gpu']} Q{mid:.1f},{rows['gpu'] - 24 - 12 * (j - i)} "
                       f"{xs[j]:.1f},{rows['gpu']}", stroke=NVLINK, width=1.4)
    per = n // pcie
    for i, x in enumerate(xs):
        c.box(x - box_w / 2, rows["gpu"], box_w, 56, [f"GPU {i}", f"{g.hbm_gib:g} GiB"],
              fill="white", size=16, bold=False, stroke=LINE, stroke_width=2.5)
    # PCIe switches and NICs
    c.rect(margin - 6, rows["pcie"] - 12, width - 2 * margin + 12, 70, fill=PALE["grey"],
           stroke="none", rx=10)
    c.text(width - margin - side / 2, rows["pcie"] + 52, "PCIe fabric", size=14,
           anchor="middle", fill=LINE)
    for k in range(pcie):
        group = xs[k * per:(k + 1) * per]
        xc = sum(group) / len(group)
        w = min(slot * per - 20, 220)
        for x in group:
            c.line(x, rows["gpu"] + 56, xc, rows["pcie"], stroke=PCIE, width=2.5)
            c.line(xc, rows["pcie"] + 46, x, rows["nic"], stroke=PCIE, width=2.5)
        c.box(xc - w / 2, rows["pcie"], w, 46, "PCIe switch", fill="white", size=16,
              stroke=PCIE, stroke_width=2)
    nic_label = ["NIC", _gbps(units.gbytes_s_to_gbps(port.gbytes_s))] if port else ["NIC"]
    for i, x in enumerate(xs):
        c.box(x - box_w / 2, rows["nic"], box_w, 52, nic_label, fill=PALE["blue"], size=16,
              stroke=NETWORK, stroke_width=2)
        c.line(x, rows["nic"] + 54, x, rows["nic"] + 88, stroke=NETWORK, width=3, arrow=True)
        c.text(x, rows["nic"] + 108, f"rail {i}", size=SMALL, anchor="middle", fill=NETWORK)
    cpu_w, cpu_x = side - 30, width - margin - side + 24
    cpu_h = min(40, 150 / cpus - 10)
    for k in range(cpus):
        y = rows["pcie"] - 12 - (cpus - k) * (cpu_h + 10) - 20
        c.box(cpu_x, y, cpu_w, cpu_h, f"CPU {k}", fill=PALE["orange"], size=16,
              stroke=ORANGE, stroke_width=2)
    c.line(cpu_x + cpu_w / 2, rows["pcie"] - 30, cpu_x + cpu_w / 2, rows["pcie"] - 12,
           stroke=PCIE, width=2.5)
    items = [(f"{g.scaleup_link} (scale-up)", NVLINK), ("PCIe", PCIE),
             ("network port (scale-out)", NETWORK)]
    y = c.legend(margin, height - 48, items, size=SMALL, swatch="line")
    link = f"{g.scaleup_link}: {g.scaleup_gbytes_s:,.0f} GB/s each way per GPU"
    net = (f"; {g.scaleout_link}: {port.gbytes_s:,.0f} GB/s each way per NIC"
           if port else "")
    c.text(margin, y + 28, link + net, size=SMALL, fill=LINE)
    return c.svg()


def rail_optimised(n_nodes: int = 4, gpus_per_node: int = 8, radix: int = 8,
                   port_gbps: float = 400.0) -> str:
    """A rail-optimised two-tier fabric: GPU ``i`` of every node cabled to rail ``i``'s leaf.

    Drawn from :func:`scaleout.fabric.rail_layout`: its leaves (one per rail and
    group of nodes), its spines, and :meth:`~scaleout.fabric.RailDesign.leaf_of`
    for every GPU's cable; every leaf has uplinks to all spines. Same-index GPUs
    of a group are one switch apart (NVIDIA DGX SuperPOD reference designs; Wang
    et al. 2023 drop the spines for a rail-only network). Use a small radix so
    every cable fits on the page.
    """
    design = fabric.rail_layout(n_nodes, gpus_per_node, radix, port_gbps)
    if design.gpus > 64 or design.leaves > 16 or design.n_nodes > 8:
        raise ValueError(f"n_nodes={design.n_nodes} × gpus_per_node={design.rails} needs "
                         f"{design.leaves} leaves; the drawing shows at most 8 nodes, 64 GPUs "
                         "and 16 leaves")
    width, margin = 1000, 24
    rows = {"spine": 86, "leaf": 236, "node": 430}
    height = rows["node"] + 190
    c = Canvas(width, height, f"Rail-optimised fabric: {design.n_nodes} nodes of {design.rails}")
    heading(c, f"Rail-optimised wiring: {design.n_nodes} nodes × {design.rails} GPUs")
    usable = width - 2 * margin
    leaf_slot = usable / design.leaves
    leaf_w = min(110, leaf_slot - 10)
    leaf_x = [margin + (k + 0.5) * leaf_slot for k in range(design.leaves)]
    spine_slot = usable / design.spines
    spine_w = min(150, spine_slot - 20)
    spine_x = [margin + (k + 0.5) * spine_slot for k in range(design.spines)]
    for xl in leaf_x:
        for xs_ in spine_x:
            c.line(xl, rows["leaf"], xs_, rows["spine"] + 40, stroke="#BBBBBB", width=1.3)
    for k, x in enumerate(spine_x):
        c.box(x - spine_w / 2, rows["spine"], spine_w, 40, f"spine {k}", fill=PALE["grey"],
              size=16, stroke=LINE)
    node_slot = usable / design.n_nodes
    node_w = node_slot - 16
    port_w = min(30, (node_w - 16) / design.rails - 4)
    ports = {}
    for nd in range(design.n_nodes):
        x0 = margin + nd * node_slot + 8
        c.box(x0, rows["node"], node_w, 96, [], fill=PALE["grey"], stroke=LINE)
        c.text(x0 + node_w / 2, rows["node"] + 86, f"node {nd}", size=16, anchor="middle",
               bold=True)
        span = design.rails * (port_w + 4) - 4
        for gi in range(design.rails):
            px = x0 + (node_w - span) / 2 + gi * (port_w + 4)
            color = PALETTE[gi % len(PALETTE)]
            c.rect(px, rows["node"] + 14, port_w, 44, fill=color, stroke="none", rx=3,
                   tooltip=f"node {nd}, GPU {gi}")
            if port_w >= 16:
                c.text(px + port_w / 2, rows["node"] + 42, str(gi), size=min(15, port_w - 4),
                       anchor="middle", fill=ink(color), bold=True)
            ports[nd, gi] = px + port_w / 2
    for (nd, gi), px in ports.items():
        leaf = design.leaf_of(nd, gi)
        c.line(px, rows["node"] + 12, leaf_x[leaf], rows["leaf"] + 44,
               stroke=PALETTE[gi % len(PALETTE)], width=2.2)
    for k, x in enumerate(leaf_x):
        rail = k % design.rails
        color = PALETTE[rail % len(PALETTE)]
        label = ["leaf", f"rail {rail}"]
        c.box(x - leaf_w / 2, rows["leaf"], leaf_w, 44, label, fill="white", size=15,
              stroke=color, stroke_width=3.5)
    group = (f"{design.groups} groups of {design.nodes_per_group} nodes, "
             if design.groups > 1 else "")
    notes = [
        f"{group}{design.leaves} leaves and {design.spines} spines of radix {design.radix}, "
        f"{design.port_gbps:g} Gb/s ports. Cable colour = the GPU's index in its node = "
        "its rail.",
        f"{design.one_hop_fraction:.0%} of a GPU's peers in other nodes sit one switch away "
        "(same rail and group); the rest cross a spine, or hop over NVLink to the right rail "
        "first.",
    ]
    y = rows["node"] + 128
    for note in notes:
        y = c.lines(margin, y, wrap(note, usable, SMALL), size=SMALL) + 4
    return c.svg()


def multi_plane(planes: int = 4, nic_gbps: float = 800.0, switch_gbps: float = 102_400.0,
                n_endpoints: int = 131_072) -> str:
    """A multi-plane network: each NIC's ports go to independent planes, one port per plane.

    The NIC's ``nic_gbps`` is split into ``planes`` ports; each plane is its own
    Clos network of switches at the slower port speed, so the same switch chip
    has a larger radix and reaches more NICs in fewer tiers. Sender spreads
    packets over the planes round-robin; the receiver puts them back in order.
    Sized by :func:`scaleout.fabric.size_multiplane` (radix from
    :func:`~scaleout.fabric.radix_at`); a plane's tiers are drawn as it sizes them.
    Each plane is a Clos network (Clos 1953); the NIC with four 200G ports on four
    planes, sprayed round-robin and reordered at the receiver, is the design the
    workbook's scale-out sources describe (notebook 09).
    """
    p = check_int("planes", planes, maximum=8)
    design = fabric.size_multiplane(n_endpoints, nic_gbps, p, switch_gbps=switch_gbps)
    try:
        single = fabric.size_multiplane(n_endpoints, nic_gbps, 1, switch_gbps=switch_gbps)
    except ValueError:  # one plane of full-speed ports cannot reach that many NICs at all
        single = None
    plane = design.plane
    width, margin = 1000, 24
    tiers = plane.tiers
    level_h = 70
    top = 84
    panel_h = 40 + tiers * level_h
    nic_y = top + panel_h + 110
    height = nic_y + 100 + 96
    c = Canvas(width, height, f"{p} planes for {_gbps(nic_gbps)} NICs")
    heading(c, f"A multi-plane network: {p} × {_gbps(plane.port_gbps)} ports per "
               f"{_gbps(nic_gbps)} NIC")
    usable = width - 2 * margin
    panel_w = usable / p - 12
    n_nics = 3
    leaf_pos: dict[tuple[int, int], tuple[float, float]] = {}
    for k in range(p):
        x0 = margin + k * (panel_w + 12)
        color = PALETTE[k % len(PALETTE)]
        c.rect(x0, top, panel_w, panel_h, fill=PALE["grey"], stroke=color, stroke_width=2.5,
               rx=8)
        c.text(x0 + 10, top + 24, f"plane {k}", size=16, bold=True, fill=color)
        names = ["leaf", "spine", "core"][:tiers]
        counts = [n_nics, 2, 2][:tiers]
        prev: list[float] = []
        for level in range(tiers):
            y = top + panel_h - 16 - (level + 1) * level_h + 24
            m = counts[level]
            sw = min(80, (panel_w - 20) / m - 10)
            xs = [x0 + (j + 0.5) * panel_w / m for j in range(m)]
            for xa in prev:
                for xb in xs:
                    c.line(xa, y + level_h - 4, xb, y + 34, stroke="#999999", width=1.2)
            for j, xc in enumerate(xs):
                named = text_width(names[level], 14) < sw - 8
                c.box(xc - sw / 2, y, sw, 34, names[level] if named else [], fill="white",
                      size=14, stroke=color, stroke_width=1.5,
                      tooltip="" if named else f"plane {k}, {names[level]} {j}")
                if level == 0:
                    leaf_pos[k, j] = (xc, y + 34)
            prev = xs
    nic_slot = usable / n_nics
    nic_w = min(260, nic_slot - 30)
    for i in range(n_nics):
        xc = margin + (i + 0.5) * nic_slot
        c.box(xc - nic_w / 2, nic_y, nic_w, 74, [], fill=PALE["blue"], stroke=LINE)
        c.text(xc, nic_y + 64, f"GPU {i}'s NIC, {_gbps(nic_gbps)}", size=15, anchor="middle")
        pw = (nic_w - 20) / p - 6
        for k in range(p):
            px = xc - nic_w / 2 + 10 + k * (pw + 6)
            color = PALETTE[k % len(PALETTE)]
            label = f"{plane.port_gbps:g}G"
            c.box(px, nic_y + 8, pw, 34, label if text_width(label, 13, True) < pw - 6 else [],
                  fill=color, size=15, bold=True, stroke="none", rx=3,
                  tooltip=f"port {k}: {_gbps(plane.port_gbps)} to plane {k}")
            lx, ly = leaf_pos[k, i]
            c.line(px + pw / 2, nic_y + 6, lx, ly + 2, stroke=color, width=2.5)
    above = " and ".join(["spines", "cores"][:tiers - 1])
    rows_named = f" (leaves at the bottom, {above} above)" if tiers > 1 else ""
    notes = [
        f"Each plane{rows_named}: radix-{plane.radix} switches at {_gbps(plane.port_gbps)}, "
        f"{plane.tiers} tier{'s' * (plane.tiers > 1)}, {plane.endpoints:,} NICs, "
        f"{plane.switches:,} switches ({design.switches:,} in all). " + (
            f"One {_gbps(nic_gbps)} plane of the same chips (radix {single.plane.radix}) "
            f"needs {single.plane.tiers} tier{'s' * (single.plane.tiers > 1)}."
            if single else f"One {_gbps(nic_gbps)} plane of the same chips cannot reach "
            f"{n_endpoints:,} NICs in three tiers."),
        "Every GPU's NIC is wired the same way (three drawn). The sender sprays a flow's "
        "packets over the planes; the receiver writes them in any order, so no single link "
        "is the bottleneck.",
    ]
    y = nic_y + 108
    for note in notes:
        y = c.lines(margin, y, wrap(note, usable, SMALL), size=SMALL) + 4
    return c.svg()


def super_node(domain: str = "DGX GH200", chassis_drawn: int = 4) -> str:
    """A chassis super-node: L1 switches in each chassis, L2 switches joining the chassis.

    Accelerators reach their chassis' L1 switches over electrical links (board
    traces, a cable backplane); the L1 switches reach the L2 switches over optical
    links between chassis, where the domain's data says so. Counts come from
    :func:`scaleout.synthesis.scaleup_domain` (``data/scaleup_domains.toml``:
    accelerators, chassis, media, ``l1_switches_per_chassis``, ``l2_switches``);
    only the first and last chassis are drawn when there are more than
    ``chassis_drawn``. Sources: the NVIDIA DGX GH200 whitepaper (2023); Zuo et al.
    2025 (CloudMatrix384, arXiv 2506.12708, Sec. 3).
    """
    d = synthesis.scaleup_domain(domain)
    if d.switch_tiers != 2 or not d.chassis:
        two = [x.name for x in synthesis.scaleup_domains() if x.switch_tiers == 2]
        raise ValueError(f"domain {d.name!r} has {d.switch_tiers} switch tier(s), not the "
                         f"L1 + L2 of a super-node; two-tier domains: {', '.join(two)}")
    shown = check_int("chassis_drawn", chassis_drawn, minimum=2, maximum=6)
    per = d.accelerators // d.chassis
    l1 = d.l1_switches_per_chassis
    l1_drawn = min(l1 or 2, 4)
    l2_drawn = min(d.l2_switches or 6, 8)
    drawn = list(range(d.chassis)) if d.chassis <= shown else [
        *range(shown - 1), d.chassis - 1]
    width, margin = 1000, 24
    rows = {"l2": 96, "l1": 290, "acc": 372}
    height = rows["acc"] + 250
    c = Canvas(width, height, f"{d.name}: a super-node of {d.chassis} chassis")
    heading(c, f"{d.name}: {d.accelerators} accelerators in {d.chassis} chassis")
    usable = width - 2 * margin
    gap = 40 if len(drawn) < d.chassis else 16
    ch_w = (usable - gap * (len(drawn) - 1)) / len(drawn)
    ch_x = [margin + i * (ch_w + gap) for i in range(len(drawn))]
    l2_slot = usable / l2_drawn
    l2_w = min(110, l2_slot - 14)
    l2_x = [margin + (k + 0.5) * l2_slot for k in range(l2_drawn)]
    outer = ELECTRICAL if d.outer_medium == "electrical" else OPTICAL
    inner = ELECTRICAL if d.inner_medium == "electrical" else OPTICAL
    outer_dash = "" if d.outer_medium == "electrical" else "8,5"
    l1_pos = []
    for i, chassis in enumerate(drawn):
        x0 = ch_x[i]
        c.rect(x0, rows["l1"] - 16, ch_w, rows["acc"] - rows["l1"] + 112, fill=PALE["grey"],
               stroke=LINE, rx=10)
        label = f"chassis {chassis + 1}: {per} accelerators"
        if fit_size(label, ch_w - 12, 16, bold=True) < 14:
            label = f"chassis {chassis + 1}"
        c.text(x0 + ch_w / 2, rows["acc"] + 84, label, anchor="middle", bold=True,
               size=fit_size(label, ch_w - 12, 16, bold=True))
        l1_slot = (ch_w - 16) / l1_drawn
        l1_w = min(90, l1_slot - 8)
        xs_l1 = [x0 + 8 + (j + 0.5) * l1_slot for j in range(l1_drawn)]
        acc_slot = (ch_w - 16) / per
        acc_w = min(40, acc_slot - 4)
        xs_acc = [x0 + 8 + (j + 0.5) * acc_slot for j in range(per)]
        for xa in xs_acc:
            for xl in xs_l1:
                c.line(xa, rows["acc"], xl, rows["l1"] + 36, stroke=inner, width=1.5)
        for xl in xs_l1:
            c.box(xl - l1_w / 2, rows["l1"], l1_w, 36, "L1", fill="white", size=16, bold=True,
                  stroke=LINE)
            l1_pos.append(xl)
        for xa in xs_acc:
            c.rect(xa - acc_w / 2, rows["acc"], acc_w, 56, fill=PALE["green"], stroke=GREEN,
                   stroke_width=1.5, rx=3)
        if len(drawn) < d.chassis and i == len(drawn) - 2:
            c.text(x0 + ch_w + gap / 2, rows["l1"] + 60, "…", size=28, anchor="middle",
                   bold=True)
    for xl in l1_pos:
        for xs_ in l2_x:
            c.line(xl, rows["l1"], xs_, rows["l2"] + 40, stroke=outer, width=1.1,
                   dash=outer_dash)
    for x in l2_x:
        c.box(x - l2_w / 2, rows["l2"], l2_w, 40, "L2", fill="white", size=16, bold=True,
              stroke=LINE)
    count = (f"{d.l2_switches} L2 switches ({l2_drawn} drawn)" if d.l2_switches else
             f"L2 switches (their count is not in the data; {l2_drawn} drawn)")
    c.text(margin, rows["l2"] - 14, count, size=16, bold=True)
    items = [(f"{d.inner_medium} inside a chassis", inner),
             (f"{d.outer_medium} between chassis", outer)]
    y = c.legend(margin, rows["acc"] + 136, items, size=SMALL, swatch="line",
                 dashes=["", outer_dash])
    l1_text = (f"{per} accelerators and {l1} L1 switches per chassis "
               f"({l1 * d.chassis:,} L1 in all)" if l1 else
               f"{per} accelerators and L1 switches in every chassis")
    note = (f"{l1_text}; every accelerator reaches every L1 of its chassis, every L1 every "
            f"L2. Drawn: {l1_drawn} L1 per chassis and {len(drawn)} of the {d.chassis} chassis.")
    c.lines(margin, y + 30, wrap(note, usable, SMALL), size=SMALL)
    return c.svg()


#: Which blocks each transceiver technology puts where (drawing only; the numbers are data).
_TECH_ROWS = {
    "dsp": "pluggable",
    "lpo": "pluggable",
    "npo": "board",
    "cpo": "package",
}


def _representative(tech: str, speed_gbps: float) -> optics.Module:
    found = optics.modules(technology=tech, speed_gbps=speed_gbps)
    if not found:
        raise ValueError(f"speed_gbps={speed_gbps:g} has no {tech.upper()} module in "
                         f"data/optics.toml; speeds with all four: "
                         f"{', '.join(f'{s:g}' for s in _speeds_with_all())}")
    dr = [m for m in found if m.reach_class == "DR"]
    return (dr or found)[0]


def _speeds_with_all() -> list[float]:
    return [s for s in optics.speeds_gbps()
            if all(optics.modules(technology=t, speed_gbps=s) for t in optics.OPTICAL)]


def transceivers(speed_gbps: float = 800.0) -> str:
    """DSP, LPO, NPO and CPO optics side by side: where the DSP, the optics and the laser sit.

    * DSP: a pluggable module at the front panel; its DSP retimes and equalises
      every lane (and, at 200 Gb/s lanes, adds an inner FEC) before the driver
      and laser; the chip's SerDes drive a long board trace to it.
    * LPO: the same pluggable without the DSP; the host's SerDes drive the
      linear optics directly.
    * NPO: a linear optical engine on the board next to the chip.
    * CPO: the optical engine inside the chip's package; the laser is a separate,
      pluggable external light source.

    Power, energy per bit, added latency and whether a unit is swapped at the
    front panel come from ``data/optics.toml`` (:func:`scaleout.optics.modules`,
    :func:`~scaleout.optics.technology`), a DR-reach module at ``speed_gbps``
    (IEEE 802.3df/dj; LPO MSA; vendors' CPO announcements, as that file cites).
    """
    speed = check_positive("speed_gbps", speed_gbps)
    mods = {t: _representative(t, speed) for t in optics.OPTICAL}
    width, margin = 1000, 20
    row_h = 168
    top = 74
    height = top + 4 * row_h + 64
    c = Canvas(width, height, f"{_gbps(speed)} transceivers: DSP, LPO, NPO, CPO")
    heading(c, f"Where the DSP and the laser sit: {_gbps(speed)} optics four ways")
    for r, tech in enumerate(optics.OPTICAL):
        m = mods[tech]
        t = optics.technology(tech)
        y0 = top + r * row_h
        yc = y0 + 84
        c.rect(8, y0 + 4, width - 16, row_h - 10, fill=PALE["grey"] if r % 2 else "white",
               stroke="none", rx=8)
        c.text(margin, y0 + 28, t.label, size=LABEL, bold=True)
        where = _TECH_ROWS[tech]
        # the chip (switch or GPU) with its SerDes
        chip_x, chip_w = margin + 8, 150
        if where == "package":
            c.rect(chip_x - 8, yc - 50, 410, 100, fill="white", stroke=LINE, dash="6,4",
                   rx=10)
            c.text(chip_x, yc + 66, "one package", size=14, fill=LINE)
        c.box(chip_x, yc - 34, chip_w, 68, ["switch or GPU", "chip + SerDes"],
              fill=PALE["sky"], size=15)
        x = chip_x + chip_w
        if where == "pluggable":
            mod_x = 392
            c.line(x + 2, yc, mod_x - 6, yc, stroke=ELECTRICAL, width=4)
            c.text((x + mod_x) / 2, yc - 12, "board trace, tens of cm", size=14,
                   anchor="middle", fill=ELECTRICAL)
            c.rect(mod_x - 6, yc - 50, 440, 100, fill="white", stroke=LINE, dash="6,4",
                   rx=10)
            c.text(mod_x + 4, yc + 66, "pluggable module, front panel", size=14, fill=LINE)
            bx = mod_x + 6
            if tech == "dsp":
                c.box(bx, yc - 34, 128, 68, ["DSP: retime,", "equalise, FEC"],
                      fill=PALE["purple"], size=14, bold=True, stroke=PURPLE, stroke_width=2)
                c.line(bx + 130, yc, bx + 146, yc, stroke=ELECTRICAL, width=4)
                bx += 148
            else:
                c.text(bx + 60, yc + 44, "no DSP", size=14, anchor="middle", fill=PURPLE,
                       bold=True)
                c.line(bx, yc, bx + 146, yc, stroke=ELECTRICAL, width=4)
                bx += 148
            c.box(bx, yc - 34, 120, 68, ["driver", "and TIA"], fill="white", size=14)
            c.box(bx + 134, yc - 34, 130, 68, ["laser and", "modulator"], fill=PALE["orange"],
                  size=14, stroke=ORANGE, stroke_width=2)
            c.line(bx + 120, yc, bx + 134, yc, stroke=ELECTRICAL, width=4)
            fibre_from = bx + 264
        elif where == "board":
            eng_x = x + 70
            c.line(x + 2, yc, eng_x - 2, yc, stroke=ELECTRICAL, width=4)
            c.text((x + eng_x) / 2, yc - 12, "cm", size=14, anchor="middle", fill=ELECTRICAL)
            c.rect(eng_x - 6, yc - 50, 290, 100, fill="white", stroke=LINE, dash="6,4", rx=10)
            c.text(eng_x + 4, yc + 66, "optical engine on the board", size=14, fill=LINE)
            c.box(eng_x + 4, yc - 34, 120, 68, ["driver", "and TIA"], fill="white", size=14)
            c.box(eng_x + 138, yc - 34, 136, 68, ["laser and", "modulator"],
                  fill=PALE["orange"], size=14, stroke=ORANGE, stroke_width=2)
            c.line(eng_x + 124, yc, eng_x + 138, yc, stroke=ELECTRICAL, width=4)
            fibre_from = eng_x + 274
        else:  # package: engine beside the die, laser outside
            eng_x = x + 40
            c.line(x + 2, yc, eng_x - 2, yc, stroke=ELECTRICAL, width=4)
            c.text((x + eng_x) / 2, yc - 12, "mm", size=14, anchor="middle", fill=ELECTRICAL)
            c.box(eng_x, yc - 34, 196, 68, ["optical engine:", "driver, modulator"],
                  fill="white", size=14)
            laser_x = 640
            c.box(laser_x, yc - 34, 190, 68, ["external laser", "(pluggable)"],
                  fill=PALE["orange"], size=14, stroke=ORANGE, stroke_width=2)
            c.line(laser_x - 2, yc - 10, eng_x + 198, yc - 10, stroke=ORANGE, width=3,
                   dash="3,4", arrow=True)
            c.text((laser_x + eng_x + 196) / 2, yc - 18, "light in", size=14,
                   anchor="middle", fill=ORANGE)
            c.polyline([(eng_x + 198, yc + 14), (eng_x + 230, yc + 14), (eng_x + 230, yc + 48),
                        (width - margin - 8, yc + 48)], stroke=OPTICAL, width=4, dash="9,5",
                       arrow=True)
            c.text(width - margin - 10, yc + 40, "fibre", size=14, anchor="end",
                   fill=OPTICAL)
            fibre_from = None
        if fibre_from is not None:
            c.line(fibre_from + 2, yc, width - margin - 8, yc, stroke=OPTICAL, width=4,
                   dash="9,5", arrow=True)
            c.text(width - margin - 10, yc - 12, "fibre", size=14, anchor="end", fill=OPTICAL)
        swap = "swapped at the front panel" if t.field_replaceable else "not front-panel " \
            "pluggable"
        fact = (f"{m.name}: {m.power_w:g} W ({m.pj_per_bit:.3g} pJ/bit), adds "
                f"{m.latency_ns:g} ns; {swap}")
        c.text(width - margin, y0 + 28, fact, size=fit_size(fact, 620, 15), anchor="end",
               fill=LINE)
    c.legend(margin, height - 22, [("electrical", ELECTRICAL), ("fibre", OPTICAL),
                                   ("laser light", ORANGE)], size=SMALL, swatch="line",
             dashes=["", "9,5", "3,4"])
    return c.svg()

