"""Command line: ``python -m scaleout COMMAND`` (``./workbook validate`` runs the first one).

Commands
--------
validate
    Print the planner's predictions against the published measurements it is
    validated on (Korthikanti et al. 2022 Table 5, Megatron-LM Table 1), with the
    error of each case and each table's mean and worst.
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


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run one command; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m scaleout",
                                     description="The Scale-Out Workbook's command line.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("validate", help="the planner against published measurements"
                   ).set_defaults(run=_validate)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
