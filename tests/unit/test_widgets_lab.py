"""The sharding explorer without a browser: set controls, read the chart and the readout
(real JAX on 8 CPU devices; layouts compiled once, then kept)."""

import pytest
from scaleout.lab import devices
from scaleout.widgets.lab import ShardingExplorer


@pytest.fixture(scope="module")
def explorer():
    devices.use_devices(8)
    return ShardingExplorer()


def test_defaults_and_a_change(explorer):
    assert explorer.error is None and explorer.result.layout.label.startswith("tp on 1 × 4")
    assert b"formulas" in bytes(explorer.image.value) and "= formula" in explorer.readout.value
    explorer.set_values(sharding="ep", mesh="8 × 1")
    assert explorer.error is None and "all-to-alls of the expert slots" in explorer.readout.value
    assert b"all-to-all" in bytes(explorer.image.value)
    assert explorer.result.model.n_experts == 8


def test_a_mesh_the_sharding_cannot_use_shows_a_message_and_recovers(explorer):
    explorer.set_values(sharding="zero3", mesh="8 × 1")
    readout, image = explorer.readout.value, explorer.image.value
    explorer.controls["mesh"].value = "2 × 4"
    assert explorer.error.startswith("sharding 'zero3' splits over the data axis only")
    assert "⚠" in explorer.status.value and explorer.readout.value == readout
    explorer.controls["mesh"].value = "8 × 1"
    assert explorer.error is None and explorer.status.value == ""
    assert (explorer.readout.value, explorer.image.value) == (readout, image)


def test_every_mesh_in_the_menu_divides_the_devices(explorer):
    meshes = explorer.controls["mesh"].options
    assert "1 × 8" in meshes and "3 × 1" not in meshes
    assert all(8 % (int(d) * int(m)) == 0 for d, m in (x.split(" × ") for x in meshes))
