"""scaleout.lab.calibrate: real logs → α, β per scope → a network file → the planner and the
report; every bad input named (file, entry, field)."""

import dataclasses
import math
import re

import pytest
from scaleout import calibration, plan, report, synthesis
from scaleout.data_parallel import Fabric
from scaleout.lab import calibrate

H100_NODE = "nvidia_h100_8gpu_1node_nvswitch_all_reduce"
H100_TWO = "nvidia_h100_16gpu_2node_ib_all_reduce"
GPU = "H100-SXM5-80GB"


@pytest.fixture
def logs(data_dir):
    return [data_dir / "nccl-tests" / f"{name}.txt" for name in (H100_NODE, H100_TWO)]


def test_round_trip_of_real_logs(logs, tmp_path):
    net = calibrate.fit_logs(logs)
    assert net.gpus_per_node == 8
    intra, inter = net.link("intra"), net.link("inter")
    assert (intra.ranks, intra.nodes, inter.ranks, inter.nodes) == (8, 1, 16, 2)
    # the same numbers as notebook 07's fit of the same log
    fit = calibration.fit_log(calibration.load_log(H100_NODE))
    assert intra.latency_us == fit.latency_us and intra.gbytes_s == fit.bandwidth_gbytes_s
    back = calibrate.load_network(calibrate.write_network(net, tmp_path / "net.toml"))
    assert back.links == net.links and back.gpus_per_node == 8 and back.name == net.name
    fab = back.fabric()
    assert isinstance(fab, Fabric) and not fab.hierarchical
    assert fab.intra == intra.link and fab.inter == inter.link
    assert back.plan_calibration().collective_efficiency == 1.0


def test_shipped_network_file_is_the_fit_of_its_logs(data_dir, logs):
    shipped = calibrate.load_network(data_dir / "networks" / "h100_nccl_tests.toml")
    assert shipped.links == calibrate.fit_logs(logs).links


def test_benchmark_logs_fit_with_their_algorithms_model(data_dir):
    folder = data_dir / "mpi-bench"
    rab = calibrate.fit_log_file(folder / "cpu_4proc_shm_rabenseifner_all_reduce.txt")
    rd = calibrate.fit_log_file(folder / "cpu_4proc_shm_recursive_doubling_all_reduce.txt")
    ring = calibrate.fit_log_file(folder / "cpu_4proc_shm_ring_all_reduce.txt")
    assert (rab.algorithm, ring.algorithm, rd.algorithm) == ("halving_doubling", "ring", "ring")
    assert "no α-β model in the workbook" in rd.note and not ring.note
    assert ring.scope == "intra" and ring.ranks == 4
    # one node measured: between nodes the GPU's datasheet port fills in, and says so
    net = calibrate.fit_logs([folder / "cpu_4proc_shm_ring_all_reduce.txt"])
    with pytest.raises(ValueError, match="has no measurement across nodes: give a gpu"):
        net.fabric()
    fab = net.fabric(GPU)
    assert fab.intra == ring.link and fab.inter == plan.default_network(GPU, 4).inter
    assert "across nodes: not measured; datasheet InfiniBand NDR" in net.describe(GPU)[1]


def test_the_planner_report_and_explorer_take_the_measured_network(data_dir, tmp_path,
                                                                   monkeypatch):
    path = data_dir / "networks" / "h100_nccl_tests.toml"
    net = calibrate.load_network(path)
    fab, cal = net.fabric(GPU), net.plan_calibration()
    measured = plan.search("llama3-70b", GPU, 1024, 512, fab, calibration=cal)
    datasheet = plan.search("llama3-70b", GPU, 1024, 512)
    assert measured.network is fab and measured.calibration.collective_efficiency == 1.0
    assert measured.result(0).step_s != datasheet.result(0).step_s
    cp = synthesis.cluster_plan("llama3-70b", GPU, 1024, 512, 15e12, network=fab,
                                calibration=cal, domain_sizes=(4, 8))
    assert cp.domains.option(4).search.network == dataclasses.replace(fab, gpus_per_node=4)
    # the report resolves a relative file from where it is started, and checks it first
    monkeypatch.chdir(data_dir)
    nb = report.DEFAULT_REPORT
    checked = report.check_parameters(nb, {"network_file": "networks/h100_nccl_tests.toml"})
    assert checked["network_file"] == str(path.resolve())
    (tmp_path / "bad.toml").write_text("[network]\nname = 3\n")
    with pytest.raises(ValueError, match=r"bad.toml: \[network\]: field 'name' must be str"):
        report.check_parameters(nb, {"network_file": str(tmp_path / "bad.toml")})


@pytest.mark.parametrize(("text", "message"), [
    ("not = [valid", "not valid TOML"),
    ("[network]\nname='x'\n", "missing field 'gpus_per_node'"),
    ("[networks]\n", "unknown table 'networks'"),
    ("", "missing the [network] table"),
])
def test_bad_network_files(tmp_path, text, message):
    path = tmp_path / "net.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=r"net.toml: .*" + re.escape(message)):
        calibrate.load_network(path)


@pytest.mark.parametrize(("old", "new", "message"), [
    ('scope = "intra"', 'scope = "inside"', r"\[\[link\]\] entry 1: scope must be one of"),
    ('gbytes_s = ', 'gbytes_s = -', r"\[\[link\]\] entry 1: field 'gbytes_s' must be a number > 0"),
    ('ranks = 8', 'rank = 8', r"unknown field 'rank' \(did you mean 'ranks'"),
    ('collective = "all_reduce"', 'collective = "allreduce"', "collective must be one of"),
    ('gpus_per_node = 8', 'gpus_per_node = "8"', "field 'gpus_per_node' must be int"),
])
def test_bad_fields_name_entry_and_field(data_dir, tmp_path, old, new, message):
    text = (data_dir / "networks" / "h100_nccl_tests.toml").read_text()
    assert old in text
    path = tmp_path / "net.toml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ValueError, match=message):
        calibrate.load_network(path)


def test_bad_logs_and_the_command_line(tmp_path, logs, capsys):
    odd = tmp_path / "notes_all_reduce.txt"
    odd.write_text("hello\n")
    with pytest.raises(ValueError, match="not an nccl-tests / rccl-tests or benchmark log"):
        calibrate.fit_log_file(odd)
    with pytest.raises(ValueError, match="log file not found"):
        calibrate.fit_log_file(tmp_path / "missing.txt")
    unnamed = tmp_path / "run.txt"
    unnamed.write_text(logs[0].read_text().replace("all_reduce", "x"))
    with pytest.raises(ValueError, match="the collective is not named"):
        calibrate.fit_log_file(unnamed)
    with pytest.raises(ValueError, match=r"network file .* does not exist"):
        calibrate.load_network(tmp_path / "none.toml")
    from scaleout.__main__ import main as cli

    assert cli(["calibrate", str(odd)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("calibrate: error: ") and err.count("\n") == 1
    out = tmp_path / "net.toml"
    assert cli(["calibrate", *map(str, logs), "-o", str(out)]) == 0
    assert "8 GPUs per node; wrote" in capsys.readouterr().out
    assert math.isclose(calibrate.load_network(out).link("inter").gbytes_s,
                        calibrate.fit_logs(logs).link("inter").gbytes_s)


def test_the_planner_explorer_offers_the_measured_network(data_dir):
    from scaleout.widgets.planner import PlannerExplorer

    net = calibrate.load_network(data_dir / "networks" / "h100_nccl_tests.toml")
    explorer = PlannerExplorer(measured=net, gpu=GPU, n_gpus=1024, global_batch=512)
    datasheet = explorer.best.step_s
    explorer.controls["network"].value = explorer.measured_label
    assert explorer.error is None and explorer.result.network.inter == net.link("inter").link
    assert explorer.result.calibration.collective_efficiency == 1.0
    assert explorer.best.step_s != datasheet
    assert PlannerExplorer().measured_label is None
