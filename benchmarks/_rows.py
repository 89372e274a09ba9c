"""The benchmarks page's row line: what a script prints so that ``benchmarks/page.py`` can read
its row whatever else the script prints.

A script calls :func:`page_row` once per row of the page, after its own human-readable lines;
the line is ``PAGE-ROW `` followed by one JSON object with the fields of ``page.Row`` (times in
seconds, ``null`` for a peer that did not run).  ``page.py`` takes every such line of a log,
from ``--run`` or from ``make bench-targets``, so a script's printed table can change freely.

    from _rows import estimator_label, labelset_data, page_row   # scripts run from benchmarks/
"""

from __future__ import annotations

import json
import math
import warnings

from sklearn.base import clone

PREFIX = "PAGE-ROW "
FIELDS = ("data", "ours", "seconds", "peer", "peer_seconds", "certificate")


def page_row(data: str, ours: str, seconds: float, peer: str, peer_seconds: float,
             certificate: str) -> str:
    """Print (and return) the row line of one benchmarks-page row.

    Parameters
    ----------
    data : str
        What was measured on, with its size (``n``, ``d``, nodes; a subset says so).
    ours : str
        The hiercvx estimator or solver, as a user writes it.
    seconds, peer_seconds : float
        hiercvx's time and the peer's, measured in the same run (NaN: no peer).
    peer : str
        The peer.
    certificate : str
        The certified gap and whatever else the row should say (AU(PRC), prediction time).
    """
    values = (data, ours, seconds, peer, peer_seconds, certificate)
    record = {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
              for k, v in zip(FIELDS, values)}
    line = PREFIX + json.dumps(record, ensure_ascii=False)
    print(line, flush=True)
    return line


def read_rows(lines) -> list[dict]:
    """The records of the row lines among ``lines`` (``None`` times become NaN); lines that
    are not row lines, or row lines that do not parse, are skipped."""
    out = []
    for line in lines:
        if not line.startswith(PREFIX):
            continue
        try:
            record = json.loads(line[len(PREFIX):])
        except json.JSONDecodeError:
            continue
        if not isinstance(record, dict) or set(record) != set(FIELDS):
            continue
        for key in ("seconds", "peer_seconds"):
            value = record[key]
            record[key] = math.nan if value is None else float(value)
        out.append(record)
    return out


def labelset_data(name: str, n: int, d: int, n_nodes: int, subset: bool) -> str:
    """The data cell of a label-set row: the Clus-HMC set, its training rows (train + valid,
    or a random subset of them) and its hierarchy's size."""
    rows = f"n = {n}" + (" (random subset of train + valid)" if subset else " (train + valid)")
    return f"{name} label sets, {rows}, d = {d}, {n_nodes} nodes"


def estimator_label(est) -> str:
    """``Name(param=value, ...)`` with the parameters a user set away from their defaults
    (the hierarchy left out): ``HierarchicalSVC()`` for the defaults."""
    defaults = type(est)().get_params(deep=False)
    changed = [f"{k}={v!r}" for k, v in est.get_params(deep=False).items()
               if k != "hierarchy" and repr(v) != repr(defaults.get(k))]
    return f"`{type(est).__name__}({', '.join(changed)})`"


def converged(est) -> bool:
    """Whether a fitted estimator reached its tolerance: its result's ``converged`` flag, or
    its certified gap against its ``tol``."""
    flag = getattr(getattr(est, "result_", None), "converged", None)
    if flag is not None:
        return bool(flag)
    return bool(est.gap_ <= est.tol)


def warm_up(est, X, y, Xt, rows: int = 60) -> None:
    """Fit a clone of ``est`` on the first ``rows`` samples for a few iterations, predict and
    score nodes with it: the compiled kernels of the estimator's path are built (or read from
    numba's cache) before the timed fit, whose time is then the fit's alone (a change to the
    package recompiles them on first use)."""
    small = clone(est).set_params(max_iter=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        small.fit(X[:rows], list(y[:rows]))
        small.predict(Xt[:rows])
        if hasattr(small, "node_decision_function"):
            small.node_decision_function(Xt[:rows])
