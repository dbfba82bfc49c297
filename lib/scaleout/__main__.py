"""Command line: ``python -m scaleout COMMAND`` (``./workbook validate`` runs the first one).

Commands
--------
validate
    Print the planner's predictions against the published measurements it is
    validated on (Korthikanti et al. 2022 Table 5, Megatron-LM Table 1), with the
    error of each case and each table's mean and worst.
report [NOTEBOOK] [-p NAME VALUE ...] [--sweep FILE.yaml] [-o DIR]
    Run a notebook (default: the cluster-plan report) with parameters through papermill
    and render it to a self-contained HTML file without code cells; with ``--sweep``, one
    report per parameter set of a YAML file plus a comparison table. Parameters are
    checked before anything runs: a bad one exits with status 2 and one line saying why.
lab allreduce [--algorithm NAME] [-b BYTES] [-e BYTES] [-f FACTOR] [-n ITERS] [-o FILE]
    Under ``mpiexec -n N``: an MPI all-reduce benchmark printing nccl-tests' format
    (:mod:`scaleout.lab.mpibench`).
calibrate LOG... [-o FILE]
    Fit α and β per collective and scope (inside a node, across nodes) to nccl-tests or
    benchmark logs and write a network file the planner and the report read
    (:mod:`scaleout.lab.calibrate`).
"""

from __future__ import annotations

import argparse
import sys


def _validate(_: argparse.Namespace) -> int:
    from . import plan

    print(plan.validation_table())
    cal = plan.DEFAULT_CALIBRATION
    print(f"One calibration for every case: matrix-multiply efficiency {cal.gemm_efficiency:g} "
          f"(half at dimension {cal.gemm_half_dim:g}), memory-bound traffic "
          f"{cal.nonmatmul_traffic:g}x the stored activations, collectives at "
          f"{cal.collective_efficiency:.0%} of line rate; {cal.source}.")
    return 0


def _resolve_notebook(arg: str | None):
    from pathlib import Path

    from . import report

    if arg is None:
        return report.DEFAULT_REPORT
    for candidate in (Path(arg), report.NOTEBOOKS_DIR / arg, report.REPORTS_DIR / arg):
        for path in (candidate, candidate.with_name(candidate.name + ".ipynb")):
            if path.is_file() and path.suffix == ".ipynb":
                return path
    matches = sorted(p for p in report.NOTEBOOKS_DIR.rglob(f"{arg}*.ipynb")
                     if ".ipynb_checkpoints" not in p.parts)
    if len(matches) == 1:
        return matches[0]
    names = ", ".join(p.relative_to(report.NOTEBOOKS_DIR).as_posix() for p in matches)
    raise ValueError(f"notebook {arg!r} not found" if not matches
                     else f"notebook {arg!r} is ambiguous: {names}")


def _report(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from . import report

    try:
        notebook = _resolve_notebook(args.notebook)
        out_dir = Path(args.output or report.REPO_ROOT / "reports" / "out")
        if args.sweep:
            if args.parameter:
                raise ValueError("give either -p parameters or --sweep, not both")
            report.load_sweep(args.sweep)  # a malformed file fails before anything runs
        else:
            params = {name: report.parse_value(value) for name, value in args.parameter}
            params = report.check_parameters(notebook, params)
    except ValueError as exc:
        print(f"scaleout report: error: {exc}", file=sys.stderr)
        return 2
    if args.sweep:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        result = report.run_sweep(notebook, args.sweep, out_dir / f"sweep-{stamp}",
                                  progress=not args.no_progress)
        for r in result.reports:
            print(f"{r.name}: {r.html} ({r.seconds:.1f} s)")
        for name, why in result.failures.items():
            print(f"{name}: FAILED: {why}")
        if result.table_html:
            print(f"comparison: {result.table_html}")
        return 1 if result.failures else 0
    result = report.run_report(notebook, params, out_dir, progress=not args.no_progress)
    print(f"{result.html} ({result.seconds:.1f} s; executed notebook {result.notebook.name})")
    return 0


def _lab(args: argparse.Namespace) -> int:
    if args.args[:1] != ["allreduce"]:
        print("scaleout lab: error: expected 'lab allreduce [OPTIONS]' (run it under mpiexec; "
              "'lab allreduce -h' lists the options)", file=sys.stderr)
        return 2
    from .lab import mpibench

    return mpibench.main(args.args[1:])


def _calibrate(args: argparse.Namespace) -> int:
    from .lab import calibrate

    return calibrate.main(args.args)


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run one command; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m scaleout",
                                     description="The Scale-Out Workbook's command line.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("validate", help="the planner against published measurements"
                   ).set_defaults(run=_validate)
    rep = sub.add_parser("report", help="run a notebook with parameters into an HTML report")
    rep.add_argument("notebook", nargs="?", default=None,
                     help="a notebook path, name or unique prefix (default: the cluster plan)")
    rep.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                     metavar=("NAME", "VALUE"), help="a parameter (repeatable); values as YAML")
    rep.add_argument("--sweep", metavar="FILE.yaml", help="run every parameter set of a YAML file")
    rep.add_argument("-o", "--output", metavar="DIR", help="output folder (default reports/out)")
    rep.add_argument("--no-progress", action="store_true", help="no progress bar")
    rep.set_defaults(run=_report)
    lab = sub.add_parser("lab", add_help=False,
                         help="the lab's tools: 'lab allreduce' (an MPI benchmark, under mpiexec)")
    lab.add_argument("args", nargs=argparse.REMAINDER)
    lab.set_defaults(run=_lab)
    cal = sub.add_parser("calibrate", add_help=False,
                         help="fit α, β to collective logs; write a network file for the planner")
    cal.add_argument("args", nargs=argparse.REMAINDER)
    cal.set_defaults(run=_calibrate)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
