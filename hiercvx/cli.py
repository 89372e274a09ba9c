"""The ``hiercvx`` command: ``info``, ``data FILE``, ``methods``, ``show METHOD``, ``verify``, ``demo``,
``reproduce TABLE``."""

from __future__ import annotations

import argparse
import difflib
import logging
import os
import sys
from importlib import metadata
from pathlib import Path

from . import datasets, methods, reproduce
from .demo import DATA_ENV, run_demo
from .describe import latex_document
from .exceptions import HierCVXError, InputError
from .reference import SOLVER_PREFERENCE, gurobi_limit_text, usable_solvers
from .verify import equation_text, format_table, verify, write_json

PACKAGES = ("hiercvx", "numpy", "scipy", "cvxpy", "clarabel", "osqp", "ecos", "scs", "highspy",
            "scikit-learn", "networkx", "numba", "gurobipy")


def _versions() -> list[tuple[str, str]]:
    out = []
    for pkg in PACKAGES:
        try:
            out.append((pkg, metadata.version(pkg)))
        except metadata.PackageNotFoundError:
            out.append((pkg, "not installed"))
    return out


def _solver_rows(usable: dict) -> list[str]:
    """One row per solver: name, state, problem classes, in columns; a state's parenthesised
    detail (Gurobi's licence limits) goes on the next line, under the state."""
    rows = []
    for name, state in usable.items():
        head, _, detail = state.partition(" (")
        classes = ", ".join(k for k, v in SOLVER_PREFERENCE.items() if name in v)
        rows.append((name, head, classes, detail[:-1] if detail.endswith(")") else detail))
    if "GUROBI" not in usable:
        rows.append(("GUROBI", "not installed", "", "pip install gurobipy; its bundled licence is "
                     f"size-limited: {gurobi_limit_text()}"))
    wname = max(len(r[0]) for r in rows)
    wstate = max(len(r[1]) for r in rows)
    lines = []
    for name, state, classes, detail in rows:
        lines.append(f"  {name:<{wname}}  {state:<{wstate}}  {classes}".rstrip())
        if detail:
            lines.append(f"  {'':<{wname}}  {detail}")
    return lines


def cmd_info(args) -> int:
    print(f"Python {sys.version.split()[0]}")
    for pkg, ver in _versions():
        print(f"  {pkg:<13} {ver}")
    usable = usable_solvers()
    print("Solvers (CVXPY):")
    print("\n".join(_solver_rows(usable)))
    print("Default solver per problem class:")
    for klass, prefs in SOLVER_PREFERENCE.items():
        pick = next((s for s in prefs if usable.get(s) == "ok"), "none installed")
        print(f"  {klass:<7} {pick}")
    return 0


def cmd_data(args) -> int:
    print(datasets.describe(datasets.load(args.file)))
    return 0


def _bibtex_keys(bibtex: str) -> list[str]:
    """The keys of the BibTeX entries in ``bibtex`` (``@article{key, ...`` -> ``key``)."""
    return [chunk.split("{", 1)[1].split(",", 1)[0] for chunk in bibtex.split("@")[1:]]


def cmd_methods(args) -> int:
    """The registry as a table: method, paper, equations, references, fast solvers, estimator,
    sheet (where it is installed), BibTeX keys; then the BibTeX entries, each once."""
    entries = {}
    for m in methods.REGISTRY.values():
        eqs = ", ".join(equation_text(role, eq) for role, eq in m.equations.items())
        keys = _bibtex_keys(m.bibtex)
        entries.update(zip(keys, ("@" + e.strip() for e in m.bibtex.split("@")[1:])))
        print(f"{m.name}: {m.title}\n  paper       {m.paper}\n  equations   {eqs}\n"
              f"  references  {', '.join(m.references)}\n"
              f"  fast        {', '.join(f'{k} ({v.algorithm})' for k, v in m.fast_solvers.items()) or '-'}\n"
              f"  estimator   {m.estimator}\n  sheet       {m.sheet_path or m.sheet}\n"
              f"  structures  {', '.join(m.structures)}\n  bibtex      {', '.join(keys)}")
    print("\nBibTeX:\n\n" + "\n\n".join(entries.values()))
    return 0


def cmd_show(args) -> int:
    """The formulation of ``METHOD``'s primal (or ``--dual``) reference in symbols, as text or
    ``--latex`` (:meth:`hiercvx.reference.ReferenceProblem.describe`); ``--standalone``: a
    complete LaTeX document (with ``--latex`` only).  The numbers are those of the method's
    first quick case."""
    if args.standalone and not args.latex:
        raise InputError("--standalone writes a complete LaTeX document: add --latex "
                         f"(hiercvx show {args.method}{' --dual' if args.dual else ''} --latex "
                         "--standalone)")
    method = methods.get(args.method)
    case = method.cases(True)[0]
    reference = method.build("dual" if args.dual else "primal", case)
    equations = ", ".join(equation_text(role, eq) for role, eq in method.equations.items())
    latex = args.latex
    if args.standalone:
        header = (f"{method.name}: {method.title}\ninstance: the case '{case.name}'\ncite as:\n"
                  f"{method.bibtex}")
        print(latex_document(reference.describe("latex"), title=method.title, header=header,
                             subtitle=f"{method.paper}\nEquations: {equations}"), end="")
        return 0
    if latex:
        print(f"% {method.name}: {method.title}. {method.paper}\n% equations: {equations}\n"
              f"% built on the case '{case.name}'")
    else:
        print(f"{method.name}: {method.title}\n{method.paper}\nequations: {equations}\n"
              f"built on the case '{case.name}'\n")
    print(reference.describe("latex" if latex else "text"))
    if latex:
        print("\n".join("% " + line for line in ["cite as:", *method.bibtex.splitlines()]))
    else:
        print(f"\nsheet: {method.sheet_path or method.sheet}\ncite as:\n{method.bibtex}")
    return 0


def check_output_file(path, option: str) -> None:
    """Refuse, before any work, an output file that cannot be written.

    Parameters
    ----------
    path : str
        The file the command will write.
    option : str
        The option that named it, for the message (``"--json"``).

    Raises
    ------
    InputError
        ``path`` is a directory, its folder is missing or not a folder, or it is not
        writable; the message names a fix.
    """
    file = Path(path)
    if file.is_dir():
        raise InputError(f"{option} {path}: it is a directory; give a file name in it, such "
                         f"as {file / 'rows.json'}")
    folder = file.absolute().parent
    if not folder.is_dir():
        raise InputError(f"{option} {path}: the folder {folder} does not exist; create it "
                         "first or choose a file in an existing folder")
    if not os.access(file if file.exists() else folder, os.W_OK):
        raise InputError(f"{option} {path}: not writable; choose a file you can write to")


def cmd_verify(args) -> int:
    if args.json:   # before the work: the rows must not be lost to an unwritable path
        check_output_file(args.json, "--json")
    rows = verify(args.methods or None, quick=args.quick, verbose=not args.quiet, gurobi=args.gurobi)
    print(format_table(rows))
    if args.json:
        write_json(rows, args.json)
    return 0 if all(r.ok for r in rows) else 1


def cmd_demo(args) -> int:
    result = run_demo(verbose=not args.quiet, data_dir=args.data)
    return 0 if all(r.ok for r in result["verify"]) else 1


#: ``hiercvx reproduce`` options that only a run reads, with their defaults: ``--list`` refuses them
RUN_OPTIONS = {"quick": False, "replications": None, "n_jobs": None, "scheduler": None,
               "out": None, "seed": None, "resume": False, "collect": False, "data": None,
               "force": False}


def _list_tables(args) -> int:
    """``hiercvx reproduce --list``: the registered tables; TABLE or a run's option is refused."""
    given = [f"--{k.replace('_', '-')}" for k, v in RUN_OPTIONS.items() if getattr(args, k) != v]
    if args.table is not None or given:
        extra = ", ".join(([args.table] if args.table is not None else []) + given)
        raise InputError(f"--list only lists the tables, it runs none: drop {extra} to list "
                         f"them, or drop --list to run {'the' if args.table else 'a'} table")
    width = max(len(name) for name in reproduce.TABLES) + 2
    for t in reproduce.TABLES.values():
        print(f"{t.name:<{width}}{t.title}\n{'':<{width}}{t.paper}, {t.reference}")
    return 0


def _check_run_options(args) -> None:
    """Refuse, with the options' names, the values and combinations ``run_table`` refuses."""
    if args.replications is not None and args.replications < 1:
        raise InputError(f"--replications must be a positive integer, got {args.replications}")
    if args.seed is not None and args.seed < 0:
        raise InputError(f"--seed must be a non-negative integer, got {args.seed}")
    if args.n_jobs == 0:
        raise InputError("--n-jobs must be a non-zero integer (1: one process, -1: every core, "
                         "J > 1: J workers), got 0")
    if args.collect:
        given = [f"--{k.replace('_', '-')}" for k in ("resume", "n_jobs", "scheduler", "force")
                 if getattr(args, k) not in (None, False)]
        if given:
            raise InputError(f"--collect runs and writes nothing, so it takes no "
                             f"{', '.join(given)}: drop {'it' if len(given) == 1 else 'them'} "
                             "to reprint what is kept, or drop --collect to run the table "
                             "(with --resume: only the missing replications)")
    if args.data is not None:
        reproduce.check_data_dir(args.data, "--data")


def cmd_reproduce(args) -> int:
    """``--list``: the registered tables; else one table rebuilt, printed beside the paper's
    numbers, CSV + PNG written to ``--out``.  A table whose data files are absent is an error
    (exit 2) naming them and how to point at them."""
    if args.list:
        return _list_tables(args)
    if args.table is None:
        raise InputError("name a table (`hiercvx reproduce --list` shows them)")
    _check_run_options(args)
    result = reproduce.run_table(args.table, quick=args.quick, replications=args.replications,
                                 n_jobs=1 if args.n_jobs is None else args.n_jobs,
                                 scheduler=args.scheduler,
                                 out="reproduce" if args.out is None else args.out,
                                 seed=0 if args.seed is None else args.seed,
                                 verbose=not args.quiet, resume=args.resume, collect=args.collect,
                                 data_dir=args.data, force=args.force)
    if result.skipped:
        raise reproduce.DataUnavailable(f"cannot run {args.table}: {result.skipped}")
    print(result)
    if result.files:
        print("wrote " + ", ".join(str(f) for f in result.files))
    return 0


DATA_HELP = (f"folder of the Clus-HMC ARFF files (default ${DATA_ENV}, else shared/data/hmc "
             "beside the project's checkout, or ~/hiercvx_data/hmc for an installed copy)")
DATA_EPILOG = (f"environment: {DATA_ENV}=DIR names the folder of the Clus-HMC ARFF files when "
               "--data is not given")


class _Subcommand(argparse.ArgumentParser):
    """A subcommand's parser: an argument it does not know is reported by it, with its own
    usage (its valid options) and the closest valid option, not by the top-level parser."""

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            options = [o for action in self._actions for o in action.option_strings]
            close = [m for e in extras if e.startswith("-")
                     for m in difflib.get_close_matches(e.split("=")[0], options, n=1)]
            self.error(f"unrecognized arguments: {' '.join(extras)}"
                       + (f" (did you mean {', '.join(dict.fromkeys(close))}?)" if close else ""))
        return namespace, extras


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hiercvx", description="Hierarchical classification as "
                                     "convex optimization: exact references with certificates.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Subcommand)
    p = sub.add_parser("info", help="versions, installed solvers and which are usable")
    p.set_defaults(func=cmd_info)
    p = sub.add_parser("data", help="load a dataset (Clus-HMC ARFF, LIBSVM, ...) and describe it")
    p.add_argument("file")
    p.set_defaults(func=cmd_data)
    p = sub.add_parser("methods", help="the registered methods: papers, equations, solvers, estimators")
    p.set_defaults(func=cmd_methods)
    p = sub.add_parser("show", help="a method's formulation: variables, objective and constraints "
                       "with the paper's equation numbers, sizes, problem class, solver")
    p.add_argument("method", metavar="METHOD", help=f"one of {', '.join(methods.names())}")
    p.add_argument("--dual", action="store_true", help="the declared dual instead of the primal")
    p.add_argument("--latex", action="store_true", help="LaTeX (align*) instead of plain text")
    p.add_argument("--standalone", action="store_true", help="with --latex (which it needs): a "
                   "complete document that pdflatex compiles as it is")
    p.set_defaults(func=cmd_show)
    p = sub.add_parser("verify", help="every fast solver against its certified reference, one table; "
                       "exit 1 on any disagreement")
    p.add_argument("methods", nargs="*", metavar="METHOD",
                   help=f"registered methods and 'inference' (label-set inference, program (19)); "
                        f"default: all of {', '.join(methods.names())}, inference")
    p.add_argument("--quick", action="store_true", help="the small built-in problems only")
    p.add_argument("--json", metavar="FILE", help="also write the rows as JSON to FILE")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--gurobi", action="store_true", help="also solve each reference primal with "
                   "Gurobi where its licence allows, as one more independent route")
    p.set_defaults(func=cmd_verify)
    p = sub.add_parser("demo", help="verify --quick, then one fit / predict on real data",
                       description="verify --quick, then the hierarchical and the flat SVM on "
                       "ImageCLEF07A (ImCLEF07A_Train.arff, ImCLEF07A_Test.arff; skipped when "
                       "absent).",
                       epilog=DATA_EPILOG)
    p.add_argument("--data", metavar="DIR", default=None, help=DATA_HELP)
    p.add_argument("--quiet", action="store_true", help="no progress bar (the table and the "
                   "results are printed still)")
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("reproduce", help="rebuild a paper's table: ours beside the paper's numbers, "
                       "CSV + PNG; replications on local cores or a Dask cluster",
                       epilog=DATA_EPILOG + f"; with --scheduler, --data goes to the Dask "
                       f"workers (which must see the folder at the same path), else they read "
                       f"their own {DATA_ENV}")
    p.add_argument("table", nargs="?", metavar="TABLE", help=f"one of {', '.join(reproduce.names())}")
    p.add_argument("--list", action="store_true", help="the registered tables")
    p.add_argument("--quick", action="store_true", help="a reduced version that checks every "
                   "step runs (seconds to a few minutes; its numbers are not the paper's)")
    p.add_argument("--replications", type=int, default=None, metavar="N",
                   help="replications (default: the table's quick count with --quick, else the "
                   "paper's number, or the table's own where no paper ran it)")
    p.add_argument("--n-jobs", type=int, default=None, metavar="J",
                   help="local worker processes (joblib; -1 = all cores; default 1)")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="run the replications on the Dask cluster at ADDRESS (tcp://host:8786)")
    p.add_argument("--out", metavar="DIR", default=None, help="where the CSV and PNG go "
                   "(default: ./reproduce); a run does not replace those of an earlier run "
                   "with another --quick, --seed or --replications there: it stops before any "
                   "work, naming the earlier run's settings (give another --out, or --force)")
    p.add_argument("--force", action="store_true", help="replace the CSV and PNG of an earlier "
                   "run in --out made with other settings")
    p.add_argument("--seed", type=int, default=None, help="seed of the whole table (default 0)")
    p.add_argument("--resume", action="store_true", help="reuse the replications an earlier run "
                   "with the same --out, --seed and --quick finished (kept in "
                   "DIR/TABLE.replications/); run only the others (a note on stderr says when "
                   "none matched).  Ctrl-C stops a run keeping the finished ones")
    p.add_argument("--collect", action="store_true", help="run and write nothing: print the "
                   "table of the replications already finished in DIR (a run still going, or "
                   "stopped), with the same --quick, --seed and --replications")
    p.add_argument("--data", metavar="DIR", default=None, help=DATA_HELP + "; the tables "
                   "that need real data exit with an error when their files are not there "
                   "(zhou-comparison runs its synthetic rows alone and names the absent files)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_reproduce)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except KeyboardInterrupt as exc:   # Ctrl-C: what is kept, not a traceback
        print(f"hiercvx {args.command}: {exc or 'interrupted'}", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `hiercvx data FILE | head`: the reader left, which is not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's flush at exit must not fail again
        return 0
    except (HierCVXError, OSError) as exc:
        print(f"hiercvx {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
