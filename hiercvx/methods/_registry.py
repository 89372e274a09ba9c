"""The records of the method registry: :class:`Method`, :class:`FastSolver`, :class:`Case`."""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass, field
from importlib import import_module, resources
from pathlib import Path
from typing import Any, Callable, Mapping

from ..exceptions import InputError
from ._scale import with_scale_advice

__all__ = ["Method", "FastSolver", "Case", "STRUCTURES"]

#: the kinds of built-in problems a method may support
STRUCTURES = ("flat", "tree", "dag", "multilabel", "partial", "sparse")


@dataclass(frozen=True)
class FastSolver:
    """A fast solver of a registered method.

    ``solve(model, **params, tol=..., max_iter=..., verbose=...)`` runs on the model that the
    method's ``prepare`` returns and returns a :class:`hiercvx.result.Solution` whose
    ``weights`` have the shape of the reference's ``solution.weights``.  ``options`` are the
    keyword options ``hiercvx verify`` passes (a tight ``tol``); ``rtol`` the relative
    objective difference to the reference that counts as agreement at those options.
    """

    name: str
    solve: Callable
    algorithm: str
    options: Mapping[str, Any] = field(default_factory=dict)
    rtol: float = 1e-6

    @property
    def options_type(self):
        """The solver's frozen ``Options`` dataclass (the ``Options`` of its module), or None."""
        return getattr(sys.modules[inspect.unwrap(self.solve).__module__], "Options", None)

    def __post_init__(self):
        # a stalled fit on raw-unit features says so (:mod:`hiercvx.methods._scale`)
        if not getattr(self.solve, "_scale_advice", False):
            run = with_scale_advice(self.solve)
            run._scale_advice = True
            object.__setattr__(self, "solve", run)


@dataclass
class Case:
    """A built-in problem: data, the model options (passed to ``prepare`` and to every
    reference builder) and the regularization parameters (passed to references and solvers)."""

    name: str
    structure: str
    X: Any
    Y: Any
    H: Any
    model_options: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Method:
    """One method of a source paper and everything hiercvx has for it.

    - ``references``: role (``"primal"``, ``"dual"``) -> builder
      ``(X, Y, H, **params, **model_options) -> ReferenceProblem``;
    - ``prepare``: ``(X, Y, H, **model_options) -> Model`` (see :mod:`hiercvx.models`);
    - ``fast_solvers``: name -> :class:`FastSolver`;
    - ``estimator``: the dotted name of the scikit-learn estimator (the estimators import the
      registry, so the registry names them rather than importing them);
    - ``cases(quick)``: the built-in problems ``hiercvx verify`` and the tests run;
    - ``paper``: the source cited in words (authors, title, venue, year, chapters);
      ``bibtex``: its BibTeX entry (or entries), printed by ``hiercvx methods`` and
      ``hiercvx show``;
    - ``instead``: role -> what to use in place of a reference the method cannot declare (said
      by :meth:`build` and ``hiercvx show`` when that role is asked for).
    """

    name: str
    title: str
    paper: str
    equations: Mapping[str, str]
    prepare: Callable
    references: Mapping[str, Callable]
    fast_solvers: Mapping[str, FastSolver]
    estimator: str
    sheet: str
    params: Mapping[str, float]
    structures: tuple
    cases: Callable
    bibtex: str = ""
    instead: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        unknown = set(self.structures) - set(STRUCTURES)
        if unknown:
            raise InputError(f"method {self.name}: unknown structures {sorted(unknown)}; "
                             f"known: {STRUCTURES}")
        if "primal" not in self.references:
            raise InputError(f"method {self.name}: a registered method needs a 'primal' reference")
        if not self.bibtex.lstrip().startswith("@"):
            raise InputError(f"method {self.name}: a registered method needs the BibTeX entry of its "
                             f"paper (bibtex='@article{{...}}')")

    @property
    def sheet_path(self) -> Path | None:
        """Where the sheet is on this machine: the copy installed with the package
        (``hiercvx/sheets/``), else the source checkout's ``formulations/``; ``None`` if neither."""
        name = Path(self.sheet).name
        installed = resources.files("hiercvx").joinpath("sheets", name)
        if installed.is_file():
            return Path(str(installed))
        checkout = Path(__file__).resolve().parents[2] / self.sheet
        return checkout if checkout.is_file() else None

    @property
    def estimator_class(self):
        """The estimator class, resolved from its dotted name."""
        module, _, name = self.estimator.rpartition(".")
        return getattr(import_module(module), name)

    def build(self, role: str, case: Case):
        """The reference ``role`` (``"primal"`` / ``"dual"``) declared on ``case``."""
        if role not in self.references:
            hint = f"; {self.instead[role]}" if role in self.instead else ""
            raise InputError(f"method {self.name} declares no {role!r} reference; it has "
                             f"{sorted(self.references)}{hint}")
        return self.references[role](case.X, case.Y, case.H, **case.params, **case.model_options)

    def model(self, case: Case):
        """The method's model on ``case``."""
        return self.prepare(case.X, case.Y, case.H, **case.model_options)

    def run_fast(self, solver: str, case: Case, model=None, **options):
        """Run the fast solver ``solver`` on ``case`` (with its registered options, updated by
        ``options``)."""
        fast = self.fast_solvers[solver]
        model = self.model(case) if model is None else model
        return fast.solve(model, **case.params, **{**fast.options, **options})
