"""Running a registered table: replications through joblib (locally or on a Dask cluster),
mean ± standard deviation per cell, the paper's number beside ours, CSV and PNG output."""

from __future__ import annotations

import contextlib
import csv
import difflib
import json
import math
import os
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs, parallel_config
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from tqdm.auto import tqdm

from ..datasets._common import HMC_DATA_ENV
from ..exceptions import HierCVXError, InputError
from . import nhsvm, wang
from ._checkpoints import Checkpoints, data_sets_present, hiercvx_version, left_out
from ._table import DataUnavailable, Table

try:  # only --scheduler needs it; the local path works without Dask installed
    from distributed import Client
except ImportError:  # pragma: no cover
    Client = None

TABLES: dict[str, Table] = {t.name: t for t in wang.TABLES + nhsvm.TABLES}
CONNECT_TIMEOUT = "20s"   # how long to wait for a Dask scheduler given by address


def names() -> list[str]:
    return list(TABLES)


def get(name: str) -> Table:
    try:
        return TABLES[name]
    except KeyError:
        close = difflib.get_close_matches(str(name), list(TABLES), n=3)
        hint = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
        raise InputError(f"unknown table {name!r}; {hint}`hiercvx reproduce --list` shows the "
                         f"registered ones: {', '.join(TABLES)}") from None


def replication_seeds(seed: int, replications: int) -> list[int]:
    """The seed of replication r is drawn from ``(seed, r)`` alone: the same whatever the
    number of replications, the order they finish in or the machine they run on."""
    return [int(np.random.SeedSequence([int(seed), r]).generate_state(1)[0]) for r in range(replications)]


@dataclass
class TableResult:
    """What :func:`run_table` returns: ``cells`` (one dict per setting, method and metric:
    ``n``, ``mean``, ``std``, ``paper_mean``, ``paper_sd``, ``within``), the per-replication
    ``rows`` (ours only: not the rows of
    :class:`Table.published_methods <hiercvx.reproduce.Table>`, whose cells have ``n`` None), and
    the files written.  ``skipped`` says why the table did not run (its data files are absent);
    then there are no cells, rows or files."""

    table: Table
    quick: bool
    replications: int
    seed: int
    cells: list[dict]
    rows: list[dict]
    files: list[Path] = field(default_factory=list)
    skipped: str | None = None
    resumed: int = 0
    left_out: str | None = None   # a part of the table its rows lack, and why (Table.optional_data)
    planned: int | None = None   # collect: the replications asked for, of which these finished
    beyond: int = 0              # collect: replications kept past the first ``planned``, left out

    def __str__(self) -> str:
        return format_result(self)


def within_spread(ours: float, ours_sd: float, paper, resolution: float, width: float = 2.0):
    """Whether our mean lies within the paper's mean ± ``width`` sd (its replication spread;
    2 by default, :class:`Table.spread_width <hiercvx.reproduce.Table>`), widened by the paper's
    rounding: the cell's own (``paper.resolution``, from the digits it is printed with), else
    ``resolution``.  For an exact row (a Bayes error: no sd printed) the spread is ours: the paper's
    value within our mean ± ``width`` sd.  ``None`` where the paper has no number, and for an exact
    row whose sd of ours is undefined (one replication: ``ours_sd`` NaN)."""
    if paper is None or not math.isfinite(ours):
        return None
    spread = paper.sd if paper.sd is not None else ours_sd
    if not math.isfinite(spread):
        return None
    rounding = paper.resolution if paper.resolution is not None else resolution
    return bool(abs(ours - paper.mean) <= width * spread + rounding + 1e-12)


def has_paper_numbers(table: Table) -> bool:
    """Whether ``table`` has paper numbers to compare ours with (the rows of
    :class:`Table.published_methods <hiercvx.reproduce.Table>` only show theirs beside ours)."""
    return any(method not in table.published_methods for _, method, _ in table.reported)


def ours(table: Table, rows: list[dict]) -> list[dict]:
    """``rows`` without those of :class:`Table.published_methods <hiercvx.reproduce.Table>`: the
    values we computed."""
    return [row for row in rows if row["method"] not in table.published_methods]


def aggregate(table: Table, rows: list[dict]) -> list[dict]:
    """Mean and standard deviation (ddof = 1; NaN for one replication, where it is undefined)
    of each (setting, method, metric) over the replications, in first-seen order, with the
    paper's.  The rows of :class:`Table.published_methods <hiercvx.reproduce.Table>` are not ours:
    any in ``rows`` are left out, and each setting of ``rows`` gets their cells from
    :class:`Table.reported <hiercvx.reproduce.Table>`, after its own, with no mean or sd of ours
    (NaN), no count (``n`` None: nothing was run) and no verdict."""
    groups: dict[tuple, list[float]] = {}
    for row in ours(table, rows):
        groups.setdefault((row["setting"], row["method"], row["metric"]), []).append(row["value"])
    cells = []
    for (setting, method, metric), values in groups.items():
        v = np.asarray(values, dtype=float)
        mean, std = float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else float("nan")
        paper = table.paper_value(setting, method, metric)
        cells.append({"setting": setting, "method": method, "metric": metric, "n": int(v.size),
                      "mean": mean, "std": std,
                      "paper_mean": paper.mean if paper else float("nan"),
                      "paper_sd": paper.sd if paper and paper.sd is not None else float("nan"),
                      "within": within_spread(mean, std, paper, table.resolution,
                                              table.spread_width)})
    settings = list(dict.fromkeys(row["setting"] for row in rows))
    for setting, method, metric in table.reported:
        if method in table.published_methods and setting in settings:
            paper = table.reported[(setting, method, metric)]
            cells.append({"setting": setting, "method": method, "metric": metric, "n": None,
                          "mean": float("nan"), "std": float("nan"), "paper_mean": paper.mean,
                          "paper_sd": paper.sd if paper.sd is not None else float("nan"),
                          "within": None})
    return sorted(cells, key=lambda c: settings.index(c["setting"]))   # stable: per setting


@contextlib.contextmanager
def _backend(n_jobs, scheduler):
    """joblib's backend: local processes (``n_jobs``) or, with ``scheduler`` (an address such
    as ``tcp://host:8786`` or a ``dask.distributed.Client``), the Dask cluster behind it."""
    if scheduler is None:
        yield n_jobs
        return
    if Client is None:
        raise HierCVXError("--scheduler needs Dask: pip install dask distributed")
    if isinstance(scheduler, Client):
        client, own = scheduler, False
    else:
        try:
            client, own = Client(str(scheduler), timeout=CONNECT_TIMEOUT), True
        except ValueError as exc:   # Dask's parser: no port, an unknown scheme
            raise InputError(f"{scheduler!r} is not a Dask scheduler address ({exc}); give it as "
                             "tcp://HOST:PORT, the address `dask scheduler` prints (its port is "
                             "8786 by default)") from exc
        except (OSError, TimeoutError) as exc:
            raise HierCVXError(f"cannot reach the Dask scheduler at {scheduler!r}: {exc}; start "
                               "one with `dask scheduler` and `dask worker ADDRESS`, or drop "
                               "--scheduler to run locally") from exc
    try:
        with parallel_config(backend="dask", client=client):
            yield -1
    finally:
        if own:
            client.close()


class Interrupted(KeyboardInterrupt):
    """A run stopped by the user (Ctrl-C): says how many replications are kept and how to run
    the others (``--resume``)."""


#: the file, in a table's checkpoint folder, that records the settings of the run whose CSV
#: and PNG are in ``out``
OUTPUT_RECORD = "outputs.json"


def _settings_text(quick: bool, seed: int, replications: int) -> str:
    return f"{_run_flags(quick, seed)}, --replications {replications}"


def check_earlier_outputs(table: Table, out, quick: bool, seed: int, replications: int) -> None:
    """Refuse, before any work, a run whose CSV and PNG would replace those of an earlier run
    of ``table`` in ``out`` made with another ``quick``, ``seed`` or ``replications`` (the
    settings are recorded in ``out/<name>.replications/outputs.json`` beside the checkpoints).

    Raises
    ------
    InputError
        An earlier run's outputs are there with other settings, or with none recorded; the
        message names them and the two ways out: another ``out``, or ``force``.
    """
    out = Path(out)
    name = table.name
    there = [p for p in (out / f"{name}.csv", out / f"{name}_replications.csv",
                         out / f"{name}.png") if p.exists()]
    if not there:
        return
    try:
        with open(out / f"{name}.replications" / OUTPUT_RECORD) as fh:
            record = json.load(fh)
        earlier = (bool(record["quick"]), int(record["seed"]), int(record["replications"]))
    except (OSError, ValueError, KeyError, TypeError):
        earlier = None
    if earlier == (bool(quick), int(seed), int(replications)):
        return
    what = ("a run whose settings are not recorded" if earlier is None
            else f"a run with {_settings_text(*earlier)}")
    raise InputError(f"{out} holds {there[0].name} of {what}; this run "
                     f"({_settings_text(quick, seed, replications)}) would replace it: give "
                     "another --out, or --force to replace it")


def _record_outputs(result: TableResult, out: Path) -> Path:
    """Write the settings of ``result`` beside its checkpoints (``check_earlier_outputs``)."""
    folder = out / f"{result.table.name}.replications"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / OUTPUT_RECORD
    with open(path, "w") as fh:
        json.dump({"table": result.table.name, "quick": bool(result.quick),
                   "seed": int(result.seed), "replications": int(result.replications),
                   "version": hiercvx_version(),
                   "data_sets": data_sets_present(result.table, result.quick)}, fh)
    return path


@contextlib.contextmanager
def _data_dir(path):
    """``$HIERCVX_HMC_DATA`` set to ``path`` (nothing when ``None``) while the block runs, in the
    process that runs it: the client, a local worker or a Dask worker."""
    if path is None:
        yield
        return
    before = os.environ.get(HMC_DATA_ENV)
    os.environ[HMC_DATA_ENV] = str(path)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(HMC_DATA_ENV, None)
        else:
            os.environ[HMC_DATA_ENV] = before


def _numbered(run, r, quick, seed, data_dir=None):
    """``(r, run(r, quick, seed))``: a replication's rows with its number (they come back as
    they finish), run with ``data_dir`` as its Clus-HMC folder when given."""
    with _data_dir(data_dir):
        return r, run(r, quick, seed)


def execute(table: Table, quick: bool, seeds: list[int], n_jobs=1, scheduler=None,
            verbose=True, done: dict[int, list[dict]] | None = None, on_done=None,
            data_dir=None) -> list[dict]:
    """All replications' rows, in replication order, with a progress bar unless quiet.

    ``done``: rows of replications already finished (by index), not run again; ``on_done(r,
    rows)`` is called as each other replication finishes (in the order they finish).  With
    fewer replications to run than local jobs, the replications run one after another and the
    jobs go to the joblib tasks inside them (grid and cross-validation fits of the tables that
    declare them with ``Parallel(n_jobs=None)``); the numbers are the same either way.
    ``data_dir``: the Clus-HMC folder every replication reads, wherever it runs."""
    done = dict(done or {})
    todo = [r for r in range(len(seeds)) if r not in done]
    tasks = (delayed(_numbered)(table.run, r, quick, seeds[r], data_dir) for r in todo)
    inner = contextlib.nullcontext()
    if scheduler is None and len(todo) < effective_n_jobs(n_jobs):
        inner, n_jobs = parallel_config(n_jobs=n_jobs), 1
    with _backend(n_jobs, scheduler) as jobs, inner:
        # as they finish, not in order: a slow replication must not hold back the keeping
        # of those finished after it (a stopped run would lose them)
        results = Parallel(n_jobs=jobs, return_as="generator_unordered")(tasks)
        for r, part in tqdm(results, total=len(todo), desc=table.name, unit="replication",
                            disable=not verbose):
            done[r] = part
            if on_done is not None:
                on_done(r, part)
    return [dict(replication=r, **row) for r in range(len(seeds)) for row in done[r]]


def check_out_dir(out) -> None:
    """Refuse, before any work, an ``out`` where the CSV, PNG and checkpoints cannot be written.

    Parameters
    ----------
    out : path-like
        The output directory; it is created when missing, so its nearest existing ancestor
        must be a writable directory.

    Raises
    ------
    InputError
        ``out`` is a file, or sits under one, or is not writable; the message names a fix.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: it is a file, not a directory; give a directory for "
                         "the CSV and PNG (it is created when missing)")
    existing = next(p for p in (out, *out.absolute().parents) if p.exists())
    if not existing.is_dir():
        raise InputError(f"--out {out}: {existing} is a file, so the directory cannot be "
                         "created; choose another --out")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"--out {out}: {existing} is not writable; choose a directory you "
                         "can write to")


def run_table(name: str, *, quick: bool = False, replications: int | None = None, n_jobs: int = 1,
              scheduler=None, out=None, seed: int = 0, verbose: bool = True,
              resume: bool = False, collect: bool = False, data_dir=None,
              force: bool = False) -> TableResult:
    """Rebuild table ``name``: ``replications`` runs (default: the table's
    ``quick_replications`` with ``quick``, else its ``paper_replications``), each seeded from
    ``(seed, r)``, through joblib with ``n_jobs`` local workers or on the Dask cluster
    ``scheduler``; aggregated, compared with the paper and, if ``out`` is given, written there
    as ``<name>.csv``, ``<name>_replications.csv`` and ``<name>.png``.  The numbers depend on
    ``seed`` and ``replications`` only.  A table whose data files are absent
    (``Table.missing_data``, or a replication raising :class:`DataUnavailable`) is not an
    error: the result says ``skipped`` and why.

    The outputs of an earlier run in ``out`` made with another ``quick``, ``seed`` or
    ``replications`` are not replaced: the run is refused before any work
    (``check_earlier_outputs``) unless ``force``.

    With ``out``, every finished replication is also kept in ``out/<name>.replications/``
    (``Checkpoints``); ``resume=True`` reads back those of the same table, ``quick`` and
    ``seed`` and runs only the others (``result.resumed`` counts them; a note on stderr says
    when none matched).  A kept file that is damaged, or made with other optional data sets
    (``Table.optional_data``), is refused with an ``InputError`` before any work.  A paper-scale table can so be run in pieces: stop it any time (a
    Ctrl-C raises ``Interrupted``, saying how many are kept), run the same command with
    ``--resume``.  ``collect=True`` runs and writes nothing: the table of the replications
    among the first ``replications`` that are already kept there (the state of a run still
    going, or stopped).

    ``data_dir``: the folder of the Clus-HMC ARFF files, for this run only: ``$HIERCVX_HMC_DATA``
    in this process and in every worker that runs a replication, local or on the Dask cluster
    (whose workers must see the folder at the same path, as on a shared file system).  Without
    it, each process reads its own ``$HIERCVX_HMC_DATA``.
    """
    if data_dir is not None:
        check_data_dir(data_dir, "data_dir")
        data_dir = os.path.abspath(data_dir)
    with _data_dir(data_dir):
        return _run_table(name, quick, replications, n_jobs, scheduler, out, seed, verbose,
                          resume, collect, data_dir, force)


def check_data_dir(path, option: str) -> None:
    """Refuse a Clus-HMC folder (``--data``, ``data_dir``) that is not a folder."""
    if Path(path).is_dir():
        return
    what = "it is a file, not a folder" if Path(path).exists() else "no such folder"
    raise InputError(f"{option} {path}: {what}; give the folder that holds the Clus-HMC ARFF "
                     "files")


def _run_table(name, quick, replications, n_jobs, scheduler, out, seed, verbose, resume,
               collect, data_dir, force) -> TableResult:
    """:func:`run_table` with its data folder in place."""
    table = get(name)
    if (resume or collect) and out is None:
        raise InputError(f"{'collect' if collect else 'resume'}=True reads the finished "
                         "replications from out: give out (the directory of the run)")
    if replications is None:
        replications = table.quick_replications if quick else table.paper_replications
    if int(replications) != replications or replications < 1:
        raise InputError(f"replications must be a positive integer, got {replications!r}")
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"seed must be a non-negative integer, got {seed!r}")
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0:
        raise InputError(f"n_jobs must be a non-zero integer (1: one process, -1: every core, "
                         f"k > 1: k workers), got {n_jobs!r}")
    if collect:
        _refuse_with_collect(resume=resume, n_jobs=n_jobs, scheduler=scheduler, force=force)
    if out is not None:   # before the work: a run must not be lost to an unwritable --out
        check_out_dir(out)
        if not collect and not force:
            check_earlier_outputs(table, out, quick, seed, int(replications))
    reason = table.missing_data() if table.missing_data is not None else None
    if reason:
        return TableResult(table, quick, int(replications), int(seed), [], [], skipped=reason)
    seeds = replication_seeds(seed, int(replications))
    done, on_done = {}, None
    if collect:
        return _collected(table, quick, int(seed), seeds, Checkpoints(out, table, quick, seed),
                          Path(out))
    if out is not None:
        checkpoints = Checkpoints(out, table, quick, seed)
        present = data_sets_present(table, quick)
        if resume:   # every kept file checked before any work
            kept = checkpoints.read(seeds)
            checkpoints.check_same_data(kept, present)
            done = {r: k.rows for r, k in kept.items()}
            if not done:
                every = (f"all {len(seeds)} replications" if len(seeds) > 1
                         else "the one replication")
                print(f"note: --resume found no checkpoint of {table.name} with "
                      f"{_run_flags(quick, seed)} among the first {len(seeds)} in "
                      f"{checkpoints.dir}; running {every}"
                      + _resume_advice(checkpoints, quick, seed, len(seeds)),
                      file=sys.stderr, flush=True)
        finished = []

        def on_done(r, rows):
            checkpoints.save(r, seeds[r], rows, present)
            finished.append(r)
    try:
        rows = execute(table, quick, seeds, n_jobs, scheduler, verbose, done, on_done, data_dir)
    except DataUnavailable as exc:
        return TableResult(table, quick, int(replications), int(seed), [], [], skipped=str(exc))
    except KeyboardInterrupt:
        raise _interrupted(table, seeds, out, len(done) + len(finished) if out is not None else 0) from None
    result = TableResult(table, quick, int(replications), int(seed),
                         aggregate(table, rows), ours(table, rows), resumed=len(done),
                         left_out=left_out(table, quick, rows))
    if out is not None:
        result.files = write(result, Path(out))
        _record_outputs(result, Path(out))
    return result


def _interrupted(table: Table, seeds: list[int], out, kept: int) -> Interrupted:
    """The ``Interrupted`` of a stopped run: what is kept, and how to go on."""
    n = len(seeds)
    if out is None:
        return Interrupted(f"{table.name} interrupted; nothing is kept without an output "
                           "folder (give --out to keep the finished replications)")
    where = Path(out) / f"{table.name}.replications"
    if kept == 0:
        return Interrupted(f"{table.name} interrupted before a replication finished; nothing "
                           f"is kept in {where}")
    return Interrupted(f"{table.name} interrupted: {kept} of the {n} replications are kept in "
                       f"{where}; run the same command with --resume to run only the other "
                       f"{n - kept}")


def _refuse_with_collect(**given) -> None:
    """``collect`` runs nothing: the options of a run beside it are a contradiction."""
    unused = {"resume": given["resume"], "n_jobs": given["n_jobs"] != 1,
              "scheduler": given["scheduler"] is not None, "force": given["force"]}
    names = [k for k, v in unused.items() if v]
    if names:
        raise InputError(f"collect=True runs and writes nothing, so it takes no "
                         f"{', '.join(names)}; drop them to collect what is kept, or drop "
                         "collect (with resume=True) to run the missing replications")


def _collected(table, quick, seed, seeds, checkpoints, out) -> TableResult:
    """The table of the kept replications among ``seeds`` (see ``collect`` of :func:`run_table`);
    nothing is written."""
    kept = checkpoints.read(seeds)
    checkpoints.check_same_data(kept, None)
    done = {r: k.rows for r, k in kept.items()}
    if not done:
        advice = _other_runs(checkpoints, quick, seed, out, len(seeds))
        raise InputError(f"no finished replication of {table.name} ({_run_flags(quick, seed)}) "
                         f"in {checkpoints.dir}: {advice}")
    rows = [dict(replication=r, **row) for r in sorted(done) for row in done[r]]
    beyond = sum(r >= len(seeds) for r in checkpoints.kept())
    return TableResult(table, quick, len(done), seed, aggregate(table, rows), ours(table, rows),
                       resumed=len(done), planned=len(seeds), beyond=beyond,
                       left_out=left_out(table, quick, rows))


def _run_flags(quick: bool, seed: int) -> str:
    """The options that select a run's checkpoints, as a user would type them."""
    return f"{'--quick' if quick else 'without --quick'}, --seed {seed}"


def _runs_there(checkpoints: Checkpoints) -> set[tuple[bool, int]]:
    """The (``quick``, ``seed``) of the runs whose checkpoints are in the table's folder."""
    runs_there = set()
    for path in checkpoints.dir.glob("*-seed*-r*.json"):
        kind, _, rest = path.stem.partition("-seed")
        number = rest.partition("-r")[0]
        if kind in ("quick", "full") and number.isdigit():
            runs_there.add((kind == "quick", int(number)))
    return runs_there


def _resume_advice(checkpoints: Checkpoints, quick: bool, seed: int, n: int) -> str:
    """What the table's folder holds instead, for the note of a resume that found nothing."""
    runs_there = _runs_there(checkpoints)
    if (bool(quick), int(seed)) in runs_there:
        return f" (those kept with these settings are past the first {n}: raise --replications)"
    if not runs_there:
        return " (there are none there)"
    runs = "; ".join(_run_flags(q, s) for q, s in sorted(runs_there))
    return f" (the checkpoints there are of runs with {runs})"


def _other_runs(checkpoints: Checkpoints, quick: bool, seed: int, out, n: int) -> str:
    """The advice when none of the first ``n`` replications of (``quick``, ``seed``) is kept:
    the options of the runs whose checkpoints are there, else how to make some."""
    runs_there = _runs_there(checkpoints)
    if (bool(quick), int(seed)) in runs_there:
        return f"those kept there are past the first {n}: raise --replications"
    if not runs_there:
        return f"run the table with --out {out} first"
    runs = "; ".join(_run_flags(q, s) for q, s in sorted(runs_there))
    return f"the replications kept there are of runs with {runs}: give the same options"


# ----------------------------------------------------------------------------- output
def _cell_text(cell, digits: int) -> str:
    """``ours (paper) flag``: ours ``mean±sd`` (the mean alone when the sd is undefined, ``-``
    for a published row), the flag only where a verdict was reached."""
    ours = "-" if math.isnan(cell["mean"]) else f"{cell['mean']:.{digits}f}"
    if not math.isnan(cell["std"]):
        ours += f"±{cell['std']:.{digits}f}"
    if math.isnan(cell["paper_mean"]):
        return ours
    sd = "" if math.isnan(cell["paper_sd"]) else f"±{cell['paper_sd']:.{digits}f}"
    flag = {True: " ok", False: " NO"}.get(cell["within"], "")
    return f"{ours} ({cell['paper_mean']:.{digits}f}{sd}){flag}"


def _provenance(result: TableResult) -> str:
    """Where the replications of ``result`` came from, for the table's header."""
    if result.planned is not None:       # collected from checkpoints, nothing run
        if result.replications < result.planned:
            text = (f"; collected from an unfinished run: {result.replications} of the "
                    f"{result.planned} planned")
        else:
            text = (f"; collected from the kept checkpoints: all {result.planned} asked for, "
                    "nothing run")
        if result.beyond:
            text += (f"; {result.beyond} more kept there, past the first {result.planned}, are "
                     f"left out (raise --replications to include them)")
        return text
    if result.resumed:
        return f"; {result.resumed} of them read back from an earlier run"
    return ""


def _header(result: TableResult) -> list[str]:
    """The lines above the table: the paper, the protocol and how to read a cell."""
    t, n = result.table, result.replications
    band = f"{t.spread_width:g}"
    compared = has_paper_numbers(t)
    if not compared:
        cells = "ours mean±sd over replications" if n > 1 else "ours over one replication"
        if t.published_methods:
            cells += "; the published rows: the papers' numbers in parentheses, not compared"
    elif n > 1:
        cells = (f"ours mean±sd over replications (paper mean±sd); ok = ours within the paper's "
                 f"mean ± {band} sd (+ its rounding; exact rows: ± {band} of our sd)")
    else:
        cells = (f"ours over one replication (paper mean±sd); ok = ours within the paper's mean ± "
                 f"{band} sd (+ its rounding); no verdict on exact rows (one replication has no "
                 "sd)")
    paper_n = f" (paper: {t.paper_replications})" if compared else ""
    lines = [f"{t.name}: {t.title}", f"  paper: {t.paper}, {t.reference}",
             f"  numbers read from: {t.source}",
             (f"  {t.quick_protocol if result.quick else t.protocol}; {n} "
              f"replication{'s' if n != 1 else ''}{paper_n}, seed {result.seed}"
              + _provenance(result)),
             f"  cells: {cells}"]
    if result.left_out:
        lines.append(f"  left out: {result.left_out}")
    return lines


def _summary(result: TableResult) -> str:
    """The line under the table: how many cells are within the paper's spread, and why the
    cells with a paper number but no verdict have none."""
    t = result.table
    flags = [c["within"] for c in result.cells if c["within"] is not None]
    open_ = sum(c["within"] is None and not math.isnan(c["paper_mean"])
                and c["method"] not in t.published_methods for c in result.cells)
    why = "one replication gives no sd, and the paper prints none for them"
    if flags:
        return (f"{sum(flags)} of {len(flags)} cells within the paper's spread"
                + (f"; {open_} more without a verdict ({why})" if open_ else ""))
    if open_:
        return f"(no verdict: {why}; run two replications or more)"
    if t.published_methods:
        return ("(no paper numbers to compare with: the published rows are shown beside ours, "
                "not compared)")
    return "(no paper numbers to compare with: ours only)"


def format_result(result: TableResult) -> str:
    """One line per setting and method, one column per metric: ``ours mean±sd (paper
    mean±sd) ok|NO``, ``ok`` meaning within the paper's spread."""
    t = result.table
    if result.skipped:
        return f"{t.name}: {t.title}\nskipped: {result.skipped}"
    head = _header(result)
    by_row: dict[tuple, dict] = {}
    for cell in result.cells:
        by_row.setdefault((cell["setting"], cell["method"]), {})[cell["metric"]] = cell
    digits = min(3, round(-math.log10(2 * t.resolution)) + 1)   # one more than the paper prints
    texts = {key: [_cell_text(row[m], digits) if m in row else "-" for m in t.metrics]
             for key, row in by_row.items()}
    w_set = max(len("setting"), *(len(k[0]) for k in texts))
    w_met = max(len("method"), *(len(k[1]) for k in texts))
    widths = [max(len(m), *(len(v[j]) for v in texts.values())) for j, m in enumerate(t.metrics)]
    lines = head + ["", "  ".join([f"{'setting':<{w_set}}", f"{'method':<{w_met}}"]
                                  + [f"{m:<{w}}" for m, w in zip(t.metrics, widths)])]
    for (setting, method), values in texts.items():
        lines.append("  ".join([f"{setting:<{w_set}}", f"{method:<{w_met}}"]
                               + [f"{v:<{w}}" for v, w in zip(values, widths)]))
    lines.append("\n" + _summary(result))
    if t.notes:
        lines.append(f"note: {t.notes}")
    return "\n".join(lines)


def write(result: TableResult, out: Path) -> list[Path]:
    """``<name>.csv`` (the cells), ``<name>_replications.csv`` (every replication's values)
    and ``<name>.png`` (ours vs the paper's, error bars one sd) in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    name = result.table.name
    files = [out / f"{name}.csv", out / f"{name}_replications.csv", out / f"{name}.png"]
    _write_csv(files[0], result.cells)
    _write_csv(files[1], result.rows)
    plot(result).savefig(files[2], dpi=110)
    return files


def _write_csv(path: Path, rows: list[dict]):
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def plot(result: TableResult) -> Figure:
    """One panel per metric: ours (mean ± sd) and the paper's at every setting and method.
    The paper's points are drawn only where the table has paper numbers; each row of
    :class:`Table.published_methods <hiercvx.reproduce.Table>` is a series of its own, labelled
    with its name.  A long title is wrapped to the figure's width."""
    t = result.table
    labels = list(dict.fromkeys((c["setting"], c["method"]) for c in result.cells))
    width = max(6.0, 0.45 * len(labels) + 2)
    fig = Figure(figsize=(width, 2.6 * len(t.metrics)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(t.metrics), 1, squeeze=False, sharex=True)[:, 0]
    x = np.arange(len(labels))
    published = [m for m in t.published_methods if any(c["method"] == m for c in result.cells)]
    compared = has_paper_numbers(t)
    for ax, metric in zip(axes, t.metrics):
        cells = {(c["setting"], c["method"]): c for c in result.cells if c["metric"] == metric}

        def column(key, methods=None):
            return [cells[k][key] if k in cells and (methods is None or k[1] in methods)
                    else np.nan for k in labels]
        ax.errorbar(x - 0.12, column("mean"), yerr=np.nan_to_num(column("std")), fmt="o",
                    capsize=3, label="hiercvx")
        if compared:
            others = {m for _, m in labels} - set(published)
            ax.errorbar(x + 0.12, column("paper_mean", others),
                        yerr=np.nan_to_num(column("paper_sd", others)), fmt="s", capsize=3,
                        label="paper")
        for marker, method in zip("D^vP*X", published):
            ax.plot(x, column("paper_mean", {method}), marker, label=method)
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
    axes[-1].set_xticks(x, [f"{s}\n{m}" for s, m in labels], fontsize=7, rotation=90)
    axes[0].legend(loc="best", fontsize=8)
    n = result.replications
    title = (f"{t.name}: {t.reference} ({n} replication{'s' if n != 1 else ''}"
             f"{', quick' if result.quick else ''})")
    # about 13 characters of a 9-point font per inch of figure
    fig.suptitle(textwrap.fill(title, width=int(13 * width)), fontsize=9)
    return fig
