"""The ``hiercvx`` command: ``info``, ``data FILE``, ``demo``."""

from __future__ import annotations

import argparse
import logging
import sys

from .exceptions import HierCVXError


def _versions() -> list[tuple[str, str]]:
    from importlib import metadata

    out = []
    for pkg in ("hiercvx", "numpy", "scipy", "cvxpy", "clarabel", "osqp", "ecos", "scs", "highspy",
                "scikit-learn", "networkx", "numba", "gurobipy"):
        try:
            out.append((pkg, metadata.version(pkg)))
        except metadata.PackageNotFoundError:
            out.append((pkg, "not installed"))
    return out


def cmd_info(args) -> int:
    from .reference import SOLVER_PREFERENCE, usable_solvers

    print(f"Python {sys.version.split()[0]}")
    for pkg, ver in _versions():
        print(f"  {pkg:<13} {ver}")
    usable = usable_solvers()
    print("Solvers (CVXPY):")
    for name, state in usable.items():
        classes = [k for k, v in SOLVER_PREFERENCE.items() if name in v]
        print(f"  {name:<9} {state:<10} {', '.join(classes)}")
    if "GUROBI" not in usable:
        print("  GUROBI    not installed (pip install 'hiercvx[gurobi]'; the free licence is size-limited)")
    print("Default solver per problem class:")
    for klass, prefs in SOLVER_PREFERENCE.items():
        pick = next((s for s in prefs if usable.get(s) == "ok"), "none installed")
        print(f"  {klass:<7} {pick}")
    return 0


def cmd_data(args) -> int:
    from . import datasets

    ds = datasets.load(args.file)
    print(datasets.describe(ds))
    return 0


def cmd_demo(args) -> int:
    from .demo import run_demo

    run_demo(verbose=not args.quiet)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="hiercvx", description="Hierarchical classification as "
                                     "convex optimization: exact references with certificates.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("info", help="versions, installed solvers and which are usable")
    p.set_defaults(func=cmd_info)
    p = sub.add_parser("data", help="load a dataset (Clus-HMC ARFF, LIBSVM, ...) and describe it")
    p.add_argument("file")
    p.set_defaults(func=cmd_data)
    p = sub.add_parser("demo", help="solve a reference problem on built-in data and print its certificate")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.set_defaults(func=cmd_demo)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except (HierCVXError, OSError) as exc:
        print(f"hiercvx {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
