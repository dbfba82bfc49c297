"""Calibrate from your own cluster: α and β per collective and scope, as a network file.

``./workbook calibrate LOG... [-o FILE]`` (``python -m scaleout calibrate``) reads
nccl-tests / rccl-tests logs (the six real ones in ``data/nccl-tests/``, or a user's) or
the lab's MPI benchmark logs (:mod:`scaleout.lab.mpibench`), fits α and B to each with
:func:`scaleout.calibration.fit_log` (robust weighting; the log's algorithm where the
workbook models it, else the ring), sorts the fits by **scope** (a log whose ranks sit on
one host measured the link inside a node, ``"intra"``; one spanning hosts measured the
network between nodes, ``"inter"``) and writes a small TOML file.

That file is data only (read with ``tomllib``, never executed). :func:`load_network` reads
it back, checking every field; :meth:`MeasuredNetwork.fabric` turns it into the
:class:`scaleout.collectives.NodeNetwork` that :func:`scaleout.plan.search`,
:func:`scaleout.synthesis.cluster_plan`, the planner explorer and the cluster-plan report
(``-p network_file FILE``) take as their network, and
:meth:`MeasuredNetwork.plan_calibration` the planner's calibration with collectives at
100 % of the measured rate (a measured B already includes what the datasheet figure's
``collective_efficiency`` stands for).

How a measured fit is used
--------------------------
A fit to an all-reduce log over ``n`` ranks is an *effective* ring: the α per step and the
B per direction that reproduce the measured times (:mod:`scaleout.calibration`). A
multi-node log measures the whole system (NCCL's own hierarchy inside each node included),
so the network file says ``hierarchical = false``: a group larger than a node is one flat
ring at the inter-node fit, a group inside a node a ring at the intra-node fit. A scope
without a log is taken from the datasheet of a GPU given to :meth:`MeasuredNetwork.fabric`
(its usual scale-up link or network port), and the description says so.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import sys
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import calibration, collectives, plan
from ..catalog import GPU
from ..checks import check_choice, check_int, close_matches
from ..collectives import AlphaBeta, NodeNetwork
from .mpibench import ALGORITHM_LINE, MODEL_OF

__all__ = ["SCOPES", "LinkFit", "MeasuredNetwork", "crossover_size", "fit_log_file", "fit_logs",
           "load_network", "main", "network_text", "write_network"]

#: A fit's scope: the link inside a node, or the network between nodes.
SCOPES = ("intra", "inter")
_SCOPE_TEXT = {"intra": "inside a node", "inter": "across nodes"}
_NETWORK_FIELDS = {"name": str, "gpus_per_node": int, "hierarchical": bool,
                   "inter_algorithm": str, "written": str}
_LINK_FIELDS = {"scope": str, "collective": str, "algorithm": str, "ranks": int,
                "nodes": int, "latency_us": float, "gbytes_s": float,
                "median_rel_error": float, "bw_median_rel_error": float, "log": str,
                "description": str, "note": str}


@dataclass(frozen=True)
class LinkFit:
    """α and B fitted to one log: a collective, in one scope, over ``ranks`` on ``nodes``."""

    scope: str
    collective: str
    algorithm: str
    ranks: int
    nodes: int
    latency_us: float
    gbytes_s: float
    median_rel_error: float
    bw_median_rel_error: float
    log: str
    description: str
    note: str = ""

    @property
    def link(self) -> AlphaBeta:
        """The fit as an :class:`~scaleout.collectives.AlphaBeta` (seconds, bytes per second)."""
        return AlphaBeta(self.latency_us * 1e-6, self.gbytes_s * 1e9)

    @property
    def label(self) -> str:
        """``"α = 5.1 µs, B = 421 GB/s (all_reduce, 8 ranks on 1 node)"``."""
        return (f"α = {self.latency_us:.3g} µs, B = {self.gbytes_s:,.4g} GB/s "
                f"({self.collective}, {self.ranks} ranks on {self.nodes} node"
                f"{'s' if self.nodes > 1 else ''})")


@dataclass(frozen=True)
class MeasuredNetwork:
    """A network measured by logs: fits per scope, and how the planner should use them."""

    name: str
    gpus_per_node: int
    links: tuple[LinkFit, ...]
    hierarchical: bool = False
    inter_algorithm: str = "ring"
    written: str = ""
    source: str = ""

    def link(self, scope: str) -> LinkFit | None:
        """The fit used for ``scope``: the first all-reduce log of it, else its first log."""
        scope = check_choice("scope", scope, SCOPES)
        fits = [f for f in self.links if f.scope == scope]
        return next((f for f in fits if f.collective == "all_reduce"), fits[0] if fits
                    else None)

    def fabric(self, gpu: str | GPU | None = None, gpus_per_node: int | None = None) -> NodeNetwork:
        """The :class:`~scaleout.collectives.NodeNetwork` of this network.

        A scope without a measurement takes ``gpu``'s datasheet link (its scale-up link
        inside a node, its usual network port between nodes, as
        :func:`scaleout.plan.default_network`); without ``gpu`` that is a ``ValueError``.
        ``gpus_per_node`` overrides the measured node size (the same links, another domain).
        """
        nodes = self.gpus_per_node if gpus_per_node is None else check_int(
            "gpus_per_node", gpus_per_node)
        intra, inter = self.link("intra"), self.link("inter")
        if (intra is None or inter is None) and gpu is None:
            missing = " and ".join(_SCOPE_TEXT[s] for s in SCOPES if self.link(s) is None)
            raise ValueError(f"network {self.name!r} has no measurement {missing}: give a gpu "
                             "whose datasheet links fill the gap, or calibrate a log of it")
        usual = plan.default_network(gpu, nodes) if gpu is not None else None
        return NodeNetwork(intra=intra.link if intra else usual.intra,
                      inter=inter.link if inter else usual.inter, gpus_per_node=nodes,
                      hierarchical=self.hierarchical, inter_algorithm=self.inter_algorithm)

    def plan_calibration(self, base: plan.Calibration | None = None) -> plan.Calibration:
        """The planner's calibration with collectives at the measured rate (efficiency 1)."""
        base = base or plan.DEFAULT_CALIBRATION
        return dataclasses.replace(base, collective_efficiency=1.0,
                                   source=f"{base.source}; collectives at the rate measured "
                                          f"by {self.name}")

    def describe(self, gpu: str | GPU | None = None) -> list[str]:
        """One line per scope: what was measured (or taken from the datasheet)."""
        lines = []
        for scope in SCOPES:
            fit = self.link(scope)
            if fit is not None:
                lines.append(f"{_SCOPE_TEXT[scope]}: measured, {fit.label}, from {fit.log}")
            elif gpu is not None:
                fab = plan.default_network(gpu, self.gpus_per_node)
                link = fab.intra if scope == "intra" else fab.inter
                name = getattr(link, "name", "the GPU's datasheet link")
                lines.append(f"{_SCOPE_TEXT[scope]}: not measured; datasheet {name}")
            else:
                lines.append(f"{_SCOPE_TEXT[scope]}: not measured")
        return lines


# =========================================================================== fitting
def _benchmark_algorithm(log: calibration.NcclTestsLog, text: str) -> str | None:
    m = re.search(re.escape(ALGORITHM_LINE) + r".*?allreduce algorithm (\w+)", text)
    return m[1] if m else None


def fit_log_file(path: str | Path, algorithm: str | None = None) -> LinkFit:
    """Fit one log file (see the module docstring); messages name the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise ValueError(f"{path}: log file not found") from None
    except IsADirectoryError:
        raise ValueError(f"{path}: is a folder, not a log file") from None
    try:
        log = calibration.parse_log(text, source=str(path))
    except ValueError as exc:
        raise ValueError(f"{path}: not an nccl-tests / rccl-tests or benchmark log "
                         f"(python -m scaleout lab allreduce): {exc}") from None
    if log.collective is None:
        raise ValueError(f"{path}: the collective is not named in the log or its file name; "
                         f"rename it to end in one of "
                         f"{', '.join('_' + op + '.txt' for op in collectives.OPS)}")
    if log.nranks is None or log.nranks < 2:
        raise ValueError(f"{path}: the log lists {log.nranks or 'no'} ranks ('# Using "
                         "devices'); a fit needs at least two")
    note = ""
    ompi = _benchmark_algorithm(log, text)
    if algorithm is None:
        algorithm = MODEL_OF.get(ompi) if ompi else "ring"
        if algorithm is None:
            algorithm = "ring"
            note = (f"Open MPI's {ompi} all-reduce has no α-β model in the workbook; fitted "
                    "as a ring (effective α and B)")
    algorithm = check_choice("algorithm", algorithm, collectives.ALGORITHMS)
    fit = calibration.fit_log(log, algorithm)
    scope = "intra" if log.n_nodes == 1 else "inter"
    bw = fit.bw_median_rel_error
    return LinkFit(scope, fit.op, algorithm, int(log.nranks), log.n_nodes, fit.latency_us,
                   fit.bandwidth_gbytes_s, fit.median_rel_error,
                   -1.0 if math.isnan(bw) else bw, path.name, log.short_label, note)


def fit_logs(paths: Sequence[str | Path], algorithm: str | None = None,
             name: str | None = None) -> MeasuredNetwork:
    """Fit every log and gather them into one :class:`MeasuredNetwork`.

    The node size is the ranks of the first single-node log, else the ranks per node of
    the first multi-node log. Logs that disagree about it are a ``ValueError``.
    """
    if not paths:
        raise ValueError("give at least one log file")
    fits = [fit_log_file(p, algorithm) for p in paths]
    sizes = {f.log: f.ranks // f.nodes for f in fits}
    uneven = [f.log for f in fits if f.ranks % f.nodes]
    if uneven:
        raise ValueError(f"{uneven[0]}: its ranks do not fill its nodes evenly")
    intra = [f for f in fits if f.scope == "intra"]
    gpn = (intra or fits)[0].ranks // (intra or fits)[0].nodes
    if intra and any(sizes[f.log] != gpn and f.scope == "inter" for f in fits):
        other = next(f for f in fits if f.scope == "inter" and sizes[f.log] != gpn)
        raise ValueError(f"{other.log} has {sizes[other.log]} ranks per node but "
                         f"{intra[0].log} measured {gpn} in one node: calibrate one cluster "
                         "at a time")
    label = name or " + ".join(Path(f.log).stem for f in fits)
    return MeasuredNetwork(label, gpn, tuple(fits), written=time.strftime("%Y-%m-%d %H:%M"))


# =========================================================================== the file
def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(float(value)) if math.isfinite(value) else "-1.0"
    return json.dumps(str(value), ensure_ascii=False)  # a TOML basic string


def network_text(net: MeasuredNetwork) -> str:
    """The network file's TOML text."""
    lines = ["# A measured network for the Scale-Out Workbook: plan.search, the explorers and",
             "# the cluster-plan report (./workbook report -p network_file THIS_FILE) read it.",
             "# Written by `./workbook calibrate` (scaleout.lab.calibrate); data only.",
             "# Each [[link]] is α (latency_us) and B (gbytes_s, one direction) fitted to one",
             "# log by scaleout.calibration.fit_log (robust weighting); scope 'intra' = inside",
             "# a node, 'inter' = across nodes. Errors are relative (-1: no sizes >= 64 MiB).",
             "", "[network]"]
    for key in _NETWORK_FIELDS:
        lines.append(f"{key} = {_toml(getattr(net, key))}")
    for fit in net.links:
        lines += ["", "[[link]]"]
        lines += [f"{key} = {_toml(getattr(fit, key))}" for key in _LINK_FIELDS]
    return "\n".join(lines) + "\n"


def write_network(net: MeasuredNetwork, path: str | Path) -> Path:
    """Write :func:`network_text` to ``path`` (folders created); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(network_text(net), encoding="utf-8")
    return path


def _field(where: str, table: dict, key: str, kind: type, known: dict):
    if key not in table:
        raise ValueError(f"{where}: missing field {key!r}")
    value = table[key]
    ok = (isinstance(value, kind) and not isinstance(value, bool)) if kind in (int, float) \
        else isinstance(value, kind)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value, ok = float(value), True
    if not ok:
        raise ValueError(f"{where}: field {key!r} must be {kind.__name__}, got {value!r}")
    return value


def load_network(path: str | Path) -> MeasuredNetwork:
    """Read a network file (TOML, data only), checking every field.

    Raises
    ------
    ValueError
        Naming the file, the entry and the field: a missing file, invalid TOML, an
        unknown or missing field, a value of the wrong type, a scope or collective that
        does not exist, a non-positive α or B, no ``[[link]]``.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"network file {str(path)!r} does not exist (write one with "
                         "./workbook calibrate LOG... -o FILE)")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path.name}: not valid TOML ({exc})") from None
    unknown = sorted(set(data) - {"network", "link"})
    if unknown:
        raise ValueError(f"{path.name}: unknown table {unknown[0]!r}; expected [network] and "
                         "[[link]] entries")
    head = data.get("network")
    if not isinstance(head, dict):
        raise ValueError(f"{path.name}: missing the [network] table")
    _unknown_fields(f"{path.name}: [network]", head, _NETWORK_FIELDS)
    values = {k: _field(f"{path.name}: [network]", head, k, t, _NETWORK_FIELDS)
              for k, t in _NETWORK_FIELDS.items()}
    check_int(f"{path.name}: [network] gpus_per_node", values["gpus_per_node"])
    check_choice(f"{path.name}: [network] inter_algorithm", values["inter_algorithm"],
                 collectives.ALGORITHMS)
    raw = data.get("link")
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"{path.name}: expected one or more [[link]] entries")
    fits = []
    for i, entry in enumerate(raw, start=1):
        where = f"{path.name}: [[link]] entry {i}"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: must be a table")
        _unknown_fields(where, entry, _LINK_FIELDS)
        v = {k: _field(where, entry, k, t, _LINK_FIELDS) for k, t in _LINK_FIELDS.items()}
        check_choice(f"{where}: scope", v["scope"], SCOPES)
        check_choice(f"{where}: collective", v["collective"], collectives.OPS)
        check_choice(f"{where}: algorithm", v["algorithm"], collectives.ALGORITHMS)
        for key in ("ranks", "nodes"):
            check_int(f"{where}: {key}", v[key])
        if not (math.isfinite(v["latency_us"]) and v["latency_us"] >= 0):
            raise ValueError(f"{where}: field 'latency_us' must be a number >= 0, "
                             f"got {v['latency_us']!r}")
        if not (math.isfinite(v["gbytes_s"]) and v["gbytes_s"] > 0):
            raise ValueError(f"{where}: field 'gbytes_s' must be a number > 0, "
                             f"got {v['gbytes_s']!r}")
        fits.append(LinkFit(**v))
    return MeasuredNetwork(values["name"], values["gpus_per_node"], tuple(fits),
                           values["hierarchical"], values["inter_algorithm"],
                           values["written"], source=str(path))


def _unknown_fields(where: str, table: dict, known: dict) -> None:
    for key in table:
        if key not in known:
            near = close_matches(key, known)
            hint = f" (did you mean {' or '.join(map(repr, near))}?)" if near else ""
            raise ValueError(f"{where}: unknown field {key!r}{hint}")


# =========================================================================== command line
def main(argv: Sequence[str] | None = None) -> int:
    """``calibrate LOG... [-o FILE] [--algorithm NAME] [--gpu NAME]``: fit, print, write."""
    p = argparse.ArgumentParser(
        prog="./workbook calibrate",
        description="Fit α and B per collective and scope (inside a node, across nodes) to "
                    "nccl-tests / rccl-tests logs or the lab's MPI benchmark logs, and write a "
                    "network file for the planner and the cluster-plan report.")
    p.add_argument("logs", nargs="+", metavar="LOG", help="log files")
    p.add_argument("-o", "--output", default="measured_network.toml",
                   help="network file to write (default measured_network.toml)")
    p.add_argument("--algorithm", choices=list(collectives.ALGORITHMS),
                   help="the α-β model to fit (default: the log's algorithm, else ring)")
    p.add_argument("--name", help="a name for the network (default: from the logs)")
    args = p.parse_args(argv)
    try:
        net = fit_logs(args.logs, args.algorithm, args.name)
        out = write_network(net, args.output)
        load_network(out)  # what was written reads back
    except ValueError as exc:
        print(f"calibrate: error: {exc}", file=sys.stderr)
        return 2
    for fit in net.links:
        err = (f"median error {fit.median_rel_error:.1%}"
               + (f", {fit.bw_median_rel_error:.1%} on sizes >= 64 MiB"
                  if fit.bw_median_rel_error >= 0 else ""))
        print(f"{fit.log}: {_SCOPE_TEXT[fit.scope]}, {fit.collective}/{fit.algorithm}, "
              f"α = {fit.latency_us:.3g} µs, B = {fit.gbytes_s:,.4g} GB/s; {err}"
              + (f" ({fit.note})" if fit.note else ""))
    print(f"{net.gpus_per_node} GPUs per node; wrote {out}")
    print(f"use it: ./workbook report -p network_file {out}")
    return 0


# =========================================================================== measured curves
def crossover_size(size_bytes, first_s, second_s) -> float | None:
    """The smallest measured size from which ``second`` is faster than ``first`` at that
    size and every larger one (None if it never is): where two measured curves cross."""
    import numpy as np

    S = np.asarray(size_bytes, dtype=float)
    a, b = np.asarray(first_s, dtype=float), np.asarray(second_s, dtype=float)
    if not S.shape == a.shape == b.shape or S.ndim != 1 or S.size == 0:
        raise ValueError("size_bytes, first_s and second_s must be 1-D arrays of one length")
    order = np.argsort(S)
    faster = (b < a)[order]
    tail = np.flatnonzero(~faster)
    start = 0 if tail.size == 0 else tail[-1] + 1
    return None if start >= S.size else float(S[order][start])
