"""Switch chips as sold: ports and speeds, capacity, latency and power (``data/switches.toml``).

Each entry carries its source (the vendor's datasheet or announcement: Broadcom Tomahawk,
NVIDIA Quantum and Spectrum, ...). A chip's radix at a port speed is a listed
configuration, else its capacity divided by the speed (:func:`scaleout.fabric.radix_at`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog import Entry, cached_entries, field_of, lookup
from .clos import radix_at


@dataclass(frozen=True)
class SwitchChip(Entry):
    """A switch chip (or box) as sold: its ports at one or more speeds, from its datasheet."""

    name: str = field_of("", "catalog name")
    vendor: str = field_of("", "maker")
    family: str = field_of("", "'InfiniBand' or 'Ethernet'")
    ports: tuple[int, ...] = field_of("ports",
                                      "port counts of the configurations, matching port_gbps")
    port_gbps: tuple[int, ...] = field_of("Gb/s",
                                          "per-port speeds of the configurations, one direction")
    year: int = field_of("year", "year of announcement or availability")
    source: str = field_of("", "where the figures come from")
    latency_ns: float | None = field_of("ns", "port-to-port latency as published (an upper bound)",
                                  default=None)
    power_w: float | None = field_of(
        "W", "typical power of the switch chip alone (no box, no optics), as published or "
        "estimated in print; None if unpublished", default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "ports", tuple(self.ports))
        object.__setattr__(self, "port_gbps", tuple(self.port_gbps))
        if len(self.ports) != len(self.port_gbps) or not self.ports:
            raise ValueError(f"SwitchChip {self.name!r}: field 'ports' must list one count per "
                             f"entry of 'port_gbps', got {self.ports!r} and {self.port_gbps!r}")

    @property
    def capacity_gbps(self) -> float:
        """Switching capacity, Gb/s per direction: ports × speed of the first configuration."""
        return float(self.ports[0] * self.port_gbps[0])

    def radix(self, port_gbps: float) -> int:
        """Ports at ``port_gbps``: a listed configuration, else capacity ÷ speed
        (:func:`radix_at`)."""
        for ports, speed in zip(self.ports, self.port_gbps, strict=True):
            if speed == port_gbps:
                return ports
        return radix_at(self.capacity_gbps, port_gbps)


_switch_chips = cached_entries("switches.toml", "switch", SwitchChip)


def switch_chip(spec: str | SwitchChip) -> SwitchChip:
    """A switch chip by name or alias (``"Tomahawk 6"``, ``"Quantum-2"``)."""
    if isinstance(spec, SwitchChip):
        return spec
    return lookup("switch", _switch_chips(), spec)


def switch_chips() -> list[SwitchChip]:
    """Every switch chip of ``data/switches.toml``, in file order."""
    return list(_switch_chips().values())
