"""scikit-learn habits every hiercvx estimator shares: ``verbose`` and pickling.

``verbose``: the solvers report their progress through :mod:`logging` (logger ``hiercvx``,
INFO when asked: iteration, primal and dual objective, relative gap).  For the duration of a
``fit`` with ``verbose`` ``True`` or a number > 0 (:func:`verbosity`; 0 and negative numbers
are quiet), :func:`reports_progress` sends those records to stderr with the time since the fit
started, as LIBLINEAR prints its iterations, without the caller configuring logging (a caller
whose own logging already shows hiercvx's INFO records keeps it as it is);
``verbose="progress"`` shows a tqdm bar instead (the number of reports and the latest gap),
once the fit has run for :data:`BAR_DELAY` seconds.  The fit ends with one summary line.

Pickling: a fitted estimator keeps the solver's :class:`~hiercvx.result.Solution` in
``result_`` (its dual variables warm-start the next fit).  :class:`LightPickleMixin` pickles
only its certificate (objective, bound, gap, status, iterations, times) unless the estimator
was built with ``solver_options={"keep_dual": True}``: the pickled model is its coefficients,
not the solver state.
"""

from __future__ import annotations

import copy
import functools
import logging
import re
import sys
import time
from contextlib import contextmanager
from numbers import Number, Real

from tqdm.auto import tqdm

from ..exceptions import InputError
from ..result import Solution
from ._base import check_common_params, keeps_dual, reference_limit_named

__all__ = ["reports_progress", "progress", "LightPickleMixin", "certificate_only",
           "check_verbose", "verbosity", "PROGRESS", "BAR_DELAY"]

#: the ``verbose`` value that asks for a progress bar rather than lines
PROGRESS = "progress"
#: seconds a fit runs before its progress bar appears (short fits stay quiet)
BAR_DELAY = 2.0

PACKAGE_LOGGER = "hiercvx"
logger = logging.getLogger(__name__)


def check_verbose(verbose, who: str):
    """``verbose``: a bool, an int (> 0 prints) or ``"progress"``."""
    if isinstance(verbose, str) and verbose != PROGRESS:
        raise InputError(f"{who}: verbose must be a bool, an int or {PROGRESS!r}, got {verbose!r}")
    return verbose


def verbosity(verbose):
    """What an estimator's ``verbose`` asks for, as its docstring says: ``"progress"`` (a bar),
    ``True`` (progress lines: ``True`` or a number > 0) or ``False`` (``False``, ``None``, 0
    or a negative number).  Every place that reads an estimator's ``verbose`` reads it
    through here, so that ``verbose=-1`` is as quiet everywhere as ``verbose=0``."""
    if isinstance(verbose, str):
        return verbose
    if isinstance(verbose, Real) and not isinstance(verbose, bool):
        return bool(verbose > 0)
    return bool(verbose)


class _Elapsed(logging.Formatter):
    """``[   1.25s] message``: the time since the fit started, then the solver's line."""

    def __init__(self, start: float):
        super().__init__()
        self.start = start

    def format(self, record):
        return f"[{record.created - self.start:8.2f}s] {record.getMessage()}"


class _BarHandler(logging.Handler):
    """One tick of a tqdm bar per progress record, the latest gap as its postfix."""

    GAP = re.compile(r"gap\s+([-+0-9.eE]+|nan|inf)")

    def __init__(self, bar):
        super().__init__(logging.INFO)
        self.bar = bar

    def emit(self, record):
        found = self.GAP.search(record.getMessage())
        if found:
            self.bar.set_postfix_str(f"gap {found.group(1)}", refresh=False)
        self.bar.update(1)


def _caller_shows_info(log: logging.Logger) -> bool:
    """Does the caller's logging configuration already print hiercvx's INFO records?"""
    if not log.isEnabledFor(logging.INFO):
        return False
    while log is not None:
        if any(h.level <= logging.INFO for h in log.handlers):
            return True
        if not log.propagate:
            return False
        log = log.parent
    return False


@contextmanager
def progress(estimator):
    """Route the ``hiercvx`` logger's INFO records to stderr (or a tqdm bar) while the body
    runs, when ``estimator.verbose`` asks for it; nested fits share the outer fit's output."""
    verbose = verbosity(check_verbose(getattr(estimator, "verbose", False),
                                      type(estimator).__name__))
    log = logging.getLogger(PACKAGE_LOGGER)
    if not verbose or getattr(log, "_hiercvx_progress", False) or _caller_shows_info(log):
        yield
        return
    bar = None
    if isinstance(verbose, str):
        bar = tqdm(desc=type(estimator).__name__, unit=" reports", delay=BAR_DELAY,
                   file=sys.stderr)
        handler = _BarHandler(bar)
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_Elapsed(time.time()))
        handler.setLevel(logging.INFO)
    saved = log.level, log.propagate
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False  # the records go to stderr once, not also to the root's handlers
    log._hiercvx_progress = True
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(saved[0])
        log.propagate = saved[1]
        log._hiercvx_progress = False
        if bar is not None:
            bar.close()


#: what the closing line calls ``n_iter_``, ``objective_`` and ``gap_``; an estimator whose
#: attributes mean something else (HPSI: DC steps, the psi cost, its convex steps' gaps) sets
#: its own ``_summary_names``
SUMMARY_NAMES = ("iterations", "objective", "certified relative gap")


def _summary(est, seconds: float) -> str:
    iterations, objective_name, gap_name = getattr(est, "_summary_names", SUMMARY_NAMES)
    parts = [f"{type(est).__name__}: fitted in {seconds:.2f} s"]
    n_iter = getattr(est, "n_iter_", None)
    if n_iter is not None:
        parts.append(f"{n_iter} {iterations}")
    objective, gap = getattr(est, "objective_", None), getattr(est, "gap_", None)
    if objective is not None:
        parts.append(f"{objective_name} {objective:.10g}")
    if gap is not None:
        parts.append(f"{gap_name} {gap:.3e}")
    return ", ".join(parts)


def reports_progress(fit):
    """Decorate an estimator's ``fit``: :func:`progress` around it, and a summary line."""
    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        check_common_params(self)
        with progress(self), reference_limit_named(self):
            start = time.perf_counter()
            out = fit(self, *args, **kwargs)
            if verbosity(getattr(self, "verbose", False)):
                logger.info("%s", _summary(self, time.perf_counter() - start))
        return out
    return wrapper


def certificate_only(result):
    """A :class:`~hiercvx.result.Solution` without the solver's state: no weights (the
    estimator keeps its coefficients), variable values, duals, traces or extras other than
    numbers and strings.  Any other result type (a perceptron's update log) is dropped."""
    if not isinstance(result, Solution):
        return None
    light = copy.copy(result)
    for name, value in (("weights", None), ("values", {}), ("duals", {}), ("dual", None),
                        ("history", {})):
        object.__setattr__(light, name, value)
    object.__setattr__(light, "extras", {k: v for k, v in result.extras.items()
                                         if isinstance(v, (str, Number))})
    return light


class LightPickleMixin:
    """Pickle a fitted estimator without its solver state (``solver_options={"keep_dual": True}``
    keeps it)."""

    def __getstate__(self):
        state = super().__getstate__()
        if not keeps_dual(self) and "result_" in state:
            state = dict(state)
            state["result_"] = certificate_only(state["result_"])
        return state
