"""scaleout.lab.mpibench: real Open MPI processes (mpiexec -n 4, bounded sizes, a timeout);
the log is nccl-tests' format, checks out and fits; bad runs end with a clear message."""

import os
import sys
import time

import pytest
from scaleout import calibration
from scaleout.__main__ import main as cli
from scaleout.lab import mpibench

#: small sizes and few repetitions: about two seconds of MPI start-up and timing
QUICK = {"min_bytes": 8, "max_bytes": 2**16, "factor": 8, "iters": 3, "warmup": 1}


def test_sizes_and_rows():
    assert mpibench.message_sizes(8, 2**20, 4) == [8 * 4**k for k in range(9)]
    with pytest.raises(ValueError, match="max_bytes=8 must be >= min_bytes=16"):
        mpibench.message_sizes(16, 8)
    with pytest.raises(ValueError, match="min_bytes must be a whole number from 4"):
        mpibench.message_sizes(1, 8)
    row, bus = mpibench.format_row(2**20, 4, 1234.56, 0, 99.994, 2)
    assert row.split()[:5] == ["1048576", "262144", "float", "sum", "-1"]
    assert row.split()[5] == "1234.6" and row.split()[9] == "99.99" and row.split()[-1] == "2"
    # busbw = algbw · 2(n−1)/n, from the printed time
    assert bus[0] == round(2**20 / 1234.6 / 1e3 * 1.5, 2)


def test_mpiexec_four_ranks_log_parses_checks_and_fits():
    rows = []
    text = mpibench.run_allreduce(4, "ring", timeout_s=120,
                                  progress=lambda done, total: rows.append((done, total)),
                                  **QUICK)
    log = calibration.parse_log(text, source="bench_all_reduce.txt")
    assert log.collective == "all_reduce" and log.nranks == 4 and log.n_nodes == 1
    assert list(log.size_bytes) == [8, 64, 512, 4096, 32768]
    assert rows[-1] == (5, 5) and len(rows) == 5
    assert calibration.worst_discrepancy(log) == 0.0  # busbw = algbw · F(n), algbw = S/t
    assert (log.column("wrong") == 0).all() and (log.column("wrong", "in_place") == 0).all()
    assert "allreduce algorithm ring (coll_tuned_allreduce_algorithm 4)" in text
    fit = calibration.fit_log(log)
    assert fit.latency_s > 0 and fit.bandwidth_bytes_s > 0


def test_a_run_that_times_out_is_stopped_with_its_processes():
    started = []
    with pytest.raises(ValueError, match=r"did not finish within timeout_s=0.5 s \(0 of"):
        mpibench.run_allreduce(4, "ring", timeout_s=0.5, on_start=started.append,
                               min_bytes=2**20, max_bytes=2**24, factor=2, iters=50)
    (pid,) = started
    for _ in range(50):  # the group is gone (SIGTERM, then SIGKILL)
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"process group {pid} still alive after the timeout")


def test_missing_or_failing_mpiexec(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="mpiexec='/nonexistent/mpiexec' is not an executable"):
        mpibench.run_allreduce(4, mpiexec="/nonexistent/mpiexec", **QUICK)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ValueError, match="mpiexec not found beside this Python or on PATH"):
        mpibench.find_mpiexec()
    monkeypatch.undo()
    with pytest.raises(ValueError, match=r"the MPI benchmark failed \(exit [1-9]"):
        mpibench.run_allreduce(4, timeout_s=60, mpiexec_args=("--no-such-option",), **QUICK)
    with pytest.raises(ValueError, match=r"algorithm must be one of .*did you mean 'ring'"):
        mpibench.run_allreduce(4, "rign", **QUICK)


def test_command_line_misuse(capsys):
    assert cli(["lab", "allgather"]) == 2
    assert "expected 'lab allreduce [OPTIONS]'" in capsys.readouterr().err
    assert mpibench.main(["-b", "64", "-e", "8"]) == 2
    assert "max_bytes=8 must be >= min_bytes=64" in capsys.readouterr().err
