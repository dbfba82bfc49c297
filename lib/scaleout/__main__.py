"""Command line: ``python -m scaleout COMMAND`` (``./workbook validate`` runs the first one).

Commands
--------
validate
    Print the planner's predictions against every published measurement it can represent
    (data/published/), each source's mean and worst error, then the cross-validation:
    errors on the sources the calibration was fitted to, on the held-out sources, and with
    each training source left out of the fit, each beside a constant-MFU baseline (about a
    minute: it refits the calibration once per left-out source).
report [NOTEBOOK] [-p NAME VALUE ...] [--sweep FILE.yaml] [-o DIR]
    Run a notebook (default: the cluster-plan report) with parameters through papermill
    and render it to a self-contained HTML file without code cells; with ``--sweep``, one
    report per parameter set of a YAML file plus a comparison table. Parameters are
    checked before anything runs: a bad one exits with status 2 and one line saying why.
plan --model CONFIG.json|NAME --gpu GPU --gpus N --batch B --seq S [--from-run FILE]
     [--export megatron|torchtitan|deepspeed] [-o FILE]
    Rank the plans of a model (a Hugging Face config.json or a catalog name) on a cluster;
    with ``--from-run``, what an existing run (Megatron-LM arguments, torchtitan TOML or
    DeepSpeed JSON) costs and how much faster the best plan is; with ``--export``, the best
    plan the framework can run, as its settings. Bad input exits with status 2.
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
          f"(half at dimension {cal.gemm_half_dim:g}) on the {cal.reference_gpu}, scaled on "
          "other GPUs and in FP8 by their measured maximum achievable matmul rate "
          "(data/gpus.toml mamf_*_tflops), memory-bound traffic "
          f"{cal.nonmatmul_traffic:g}x the stored activations, collectives at "
          f"{cal.collective_efficiency:.0%} of line rate; {cal.source}. Each run is predicted "
          "with the framework preset that ran it (scaleout.plan.frameworks).")
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
        if out_dir.exists() and not out_dir.is_dir():
            raise ValueError(f"-o {str(out_dir)!r} is an existing file; give a folder")
        if args.timeout <= 0:
            raise ValueError(f"--timeout must be a number of seconds > 0, got {args.timeout:g}")
        if args.sweep:
            if args.parameter:
                raise ValueError("give either -p parameters or --sweep, not both")
            report.load_sweep(args.sweep)  # a malformed file fails before anything runs
        else:
            params: dict = {}
            for name, value in args.parameter:
                if name in params:
                    raise ValueError(f"parameter {name} is given twice")
                params[name] = report.parse_value(value)
            params = report.check_parameters(notebook, params)
    except ValueError as exc:
        print(f"scaleout report: error: {exc}", file=sys.stderr)
        return 2
    if args.sweep:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        result = report.run_sweep(notebook, args.sweep, out_dir / f"sweep-{stamp}",
                                  progress=not args.no_progress, timeout_s=args.timeout)
        for r in result.reports:
            print(f"{r.name}: {r.html} ({r.seconds:.1f} s)")
        for name, why in result.failures.items():
            print(f"{name}: FAILED: {why}")
        if result.table_html:
            print(f"comparison: {result.table_html}")
        return 1 if result.failures else 0
    try:
        result = report.run_report(notebook, params, out_dir, progress=not args.no_progress,
                                   timeout_s=args.timeout)
    except report.ReportError as exc:
        print(f"scaleout report: the notebook failed: {exc}", file=sys.stderr)
        return 1
    print(f"{result.html} ({result.seconds:.1f} s; executed notebook {result.notebook.name})")
    return 0


_RUN_FORMATS = {".json": "deepspeed", ".toml": "torchtitan"}


def _plan(args: argparse.Namespace) -> int:
    """``plan``: rank the plans of a model, compare an existing run, export the best."""
    from pathlib import Path

    from . import configs, plan

    def fail(exc: Exception) -> int:
        print(f"scaleout plan: error: {exc}", file=sys.stderr)
        return 2

    try:
        spec, imported = configs.load_model(args.model, seq_len=args.seq)
        network = plan.default_network(args.gpu, args.gpus_per_node)
        run = None
        if args.from_run:
            fmt = args.run_format or _RUN_FORMATS.get(Path(args.from_run).suffix, "megatron")
            run = configs.import_run(fmt, Path(args.from_run), n_gpus=args.gpus, model=spec,
                                     seq_len=args.seq, flash_attention=args.flash_attention)
            seq = run.settings.get("seq_len")
            if seq is not None and seq != args.seq:
                raise ValueError(f"{args.from_run}: the run trains on sequences of {seq} "
                                 f"tokens but --seq is {args.seq}; compare like with like")
            if run.settings["global_batch"] != args.batch:
                raise ValueError(f"{args.from_run}: the run's global batch is "
                                 f"{run.settings['global_batch']} sequences but --batch is "
                                 f"{args.batch}")
        flash = args.flash_attention or (run is not None and run.settings["flash_attention"])
        result = plan.search(spec, args.gpu, args.gpus, args.batch, network, seq_len=args.seq,
                             flash_attention=flash)
    except ValueError as exc:
        return fail(exc)
    total = imported.params_total if imported else None
    from .memory import param_count

    print(f"{spec.name}: {total or param_count(spec):,} parameters; {args.gpus:,} x "
          f"{result.gpu}, global batch {args.batch} x {args.seq} tokens"
          f"{', flash attention' if result.flash_attention else ''}; "
          f"{result.n_evaluated:,} valid plans, {result.n_fit:,} fit.")
    if imported:
        for f in imported.findings:
            if f.status not in (configs.IGNORED,):
                print(f"  {args.model}: {f.line()}")
    print(f"{'rank':>4}  {'plan':<58} {'GiB/GPU':>8} {'s/iter':>8} {'MFU':>6}")
    for row in result.top(args.top):
        print(f"{row['rank']:>4}  {row['plan']:<58} {row['memory_gib']:>8.1f} "
              f"{row['step_s']:>8.3g} {row['mfu_pct']:>5.1f}%")
    best = result.result(0)
    if run is not None:
        for f in run.findings:
            if f.status != configs.IGNORED:
                print(f"  {args.from_run}: {f.line()}")
        try:
            current = plan.evaluate(spec, args.gpu, run.require_plan(), network,
                                    recipe=run.recipe, uneven_layers=run.uneven_layers)
        except ValueError as exc:
            print(f"The current run cannot be evaluated: {exc}")
        else:
            verdict = "fits" if current.fits else f"does not fit ({current.shortfall_gib:.1f} " \
                "GiB short)"
            print(f"Current run ({run.framework}): {current.plan.label}: "
                  f"{current.memory_bytes / 2**30:.1f} GiB per GPU, {verdict}; "
                  f"{current.step_s:.3g} s per iteration, MFU {100 * current.mfu:.1f}%.")
            if current.step_s > best.step_s:
                print(f"The best plan found is {current.step_s / best.step_s:.2f}x as fast "
                      f"({best.step_s:.3g} s per iteration, {best.plan.label}).")
            else:
                print("The current run is as fast as the best plan searched, or faster "
                      "(it is outside the search's options).")
    if args.export:
        chosen = None
        for rank in range(result.n_fit):
            candidate = result.plan(rank)
            try:
                text = configs.export_plan(args.export, candidate, spec)
            except configs.UnsupportedPlanError as exc:
                if rank == 0:
                    print(f"{exc}; looking for the fastest plan it can run.")
                continue
            chosen = rank
            break
        if chosen is None:
            return fail(ValueError(f"{args.export} can run none of the {result.n_fit:,} plans "
                                   "that fit (try --flash-attention)"))
        text = configs.export_plan(args.export, result.plan(chosen), spec,
                                   result=result.result(chosen))
        if chosen:
            print(f"Exporting rank {chosen + 1}, the fastest plan {args.export} can run.")
        if args.output:
            try:
                Path(args.output).write_text(text, encoding="utf-8")
            except OSError as exc:
                return fail(ValueError(f"-o {args.output}: {exc.strerror}"))
            print(f"Wrote {args.output} ({args.export}).")
        else:
            print(text, end="")
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
    rep.add_argument("--timeout", type=float, default=1800.0, metavar="SECONDS",
                     help="the longest one report (or one sweep set) may run (default 1800)")
    rep.set_defaults(run=_report)
    pl = sub.add_parser("plan", help="rank the plans of a model; compare a run; export the best")
    pl.add_argument("--model", required=True,
                    help="a Hugging Face config.json or a catalog model name")
    pl.add_argument("--gpu", required=True, help="a catalog GPU, e.g. H100-SXM5-80GB")
    pl.add_argument("--gpus", required=True, type=int, help="number of GPUs")
    pl.add_argument("--batch", required=True, type=int, help="global batch in sequences")
    pl.add_argument("--seq", required=True, type=int, help="sequence length in tokens")
    pl.add_argument("--gpus-per-node", type=int, default=None,
                    help="GPUs per NVLink domain (default: the GPU's usual server)")
    pl.add_argument("--flash-attention", action="store_true",
                    help="attention kernels that never store the score matrix")
    pl.add_argument("--from-run", metavar="FILE",
                    help="an existing run: Megatron-LM arguments, torchtitan TOML, DeepSpeed JSON")
    pl.add_argument("--run-format", choices=("megatron", "torchtitan", "deepspeed"),
                    help="the --from-run format (default: .json DeepSpeed, .toml torchtitan, "
                    "else Megatron-LM)")
    pl.add_argument("--export", choices=("megatron", "torchtitan", "deepspeed"),
                    help="write the best plan the framework can run as its settings")
    pl.add_argument("-o", "--output", metavar="FILE", help="where --export writes (default: "
                    "standard output)")
    pl.add_argument("--top", type=int, default=5, help="plans to list (default 5)")
    pl.set_defaults(run=_plan)
    lab = sub.add_parser("lab", add_help=False,
                         help="the lab's tools: 'lab allreduce' (an MPI benchmark, under mpiexec)")
    lab.add_argument("args", nargs=argparse.REMAINDER)
    lab.set_defaults(run=_lab)
    cal = sub.add_parser("calibrate", add_help=False,
                         help="fit α, β to collective logs; write a network file for the planner")
    cal.add_argument("args", nargs=argparse.REMAINDER)
    cal.set_defaults(run=_calibrate)
    argv = sys.argv[1:] if argv is None else list(argv)
    parameters: list[tuple[str, str]] = []
    if argv[:1] == ["report"]:  # -p NAME VALUE, VALUE verbatim (it may start with "-")
        try:
            argv, parameters = _take_parameters(argv)
        except ValueError as exc:
            parser.error(str(exc))
    args = parser.parse_args(argv)
    if parameters:
        args.parameter = parameters
    return args.run(args)


def _take_parameters(argv: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """Every ``-p NAME VALUE`` (or ``--parameter``) taken out of ``argv``, VALUE verbatim.

    argparse would read ``-p tokens -1e12`` as an option named ``-1e12``; a value here is
    whatever follows the name, even when it starts with "-".
    """
    rest: list[str] = []
    parameters: list[tuple[str, str]] = []
    i = 0
    while i < len(argv):
        if argv[i] == "--":
            rest += argv[i:]
            break
        if argv[i] in ("-p", "--parameter"):
            if len(argv) - i < 3:
                raise ValueError(f"{argv[i]} needs a NAME and a VALUE")
            parameters.append((argv[i + 1], argv[i + 2]))
            i += 3
            continue
        rest.append(argv[i])
        i += 1
    return rest, parameters


if __name__ == "__main__":
    sys.exit(main())
