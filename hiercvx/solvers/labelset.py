"""The margin family on label sets by cutting planes over pairs (n-slack, with the oracle).

With label sets (Cai thesis, chapter 4: (4.10) on sets) every example i has one slack over all
pairs ``(i, y, ybar)``, ``y in Y_i``, ``ybar not in Y_i``; on a FunCat tree that is a thousand
pairs per example, on a GO DAG ten thousand.  Only few of them ever carry a multiplier.  This
engine never works on the list of all pairs: it keeps a working set of pairs per example,
solves the margin model restricted to it, and asks the loss-augmented oracle
(``hiercvx.models._labelset_kernels``: per example
``max_{ybar not in Y_i} max_{y in Y_i} v_(i,y,ybar)``, ``O(|Y_i| q)``) which pairs the
restricted answer violates -- the n-slack cutting-plane method of Tsochantaridis, Joachims,
Hofmann & Altun ("Large margin methods for structured and interdependent output variables",
JMLR 6, 2005) and Joachims, Finley & Yu ("Cutting-plane training of structural SVMs", Machine
Learning 77, 2009, the n-slack variant):

1. the working set starts with the ``enter`` most violated pairs of every example at ``W = 0``
   (and, given a warm start ``alpha0``, the pairs that carry its multipliers, from which the
   first inner solve starts);
2. the restricted model (the same inputs, kernel, bias, weights and rescaling; only its pair
   list is the working set) is solved by the working-set solver (:mod:`.working_set`, thesis
   Algorithm 2 with its exact face and support steps), warm-started from the previous round's
   multipliers, to an inner gap that tightens with the outer one (or, with
   ``Options.inner="proximal"``, once the outer gap is small, by the proximal dual of
   :mod:`.labelset_alm`, semismooth Newton on the weights, warm-started from the last weights
   and multipliers; or, with ``Options.inner="interior_point"``, once the outer gap is small,
   by the interior point with matrix-free Newton systems of :mod:`.interior_point_cg`);
3. the oracle scores every pair at the restricted answer; per example up to ``enter`` pairs
   violated beyond the restricted slack join the working set; pairs never leave it.

Certificate, as everywhere in hiercvx: the primal (4.10) recomputed at the returned weights
over *all* pairs (the oracle's slacks, ``xi_i = max(0, max_p v_p)``), and the dual (4.14) at
the restricted multipliers, which are a feasible point of the full dual (4.15) (zero on the
pairs outside the working set, the per-example budgets unchanged).  It stops when their
relative gap (:func:`hiercvx.result.relative_gap`) reaches ``tol``.  When no violated pair is
left outside, the full and restricted problems share their optimum, so the outer loop ends
as soon as the inner solve certifies ``tol``.

Entry point: ``solve(model, C)`` for any :class:`~hiercvx.models.margin.MarginModel` (linear
with class attributes, or a kernel); settings in :class:`Options`.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .._validation import check_positive
from ..exceptions import InputError
from ..models import margin as _margin
from ..models.margin import MarginModel
from ..result import Solution, check_iteration_options, reached, relative_gap
from . import interior_point_cg, labelset_alm, labelset_smoothing, margin_dual, working_set
from ..models._labelset_kernels import violated_pairs
from .score_factor import choose_factor

logger = logging.getLogger(__name__)

__all__ = ["Options", "oracle", "full_slacks", "solve"]


@dataclass(frozen=True)
class Options:
    """Settings of the label-set engine.  Each default with its reason.

    Attributes
    ----------
    enter : int
        Pairs per example joining the working set per round (one, as in the n-slack method,
        needs a round per support pair; the support of a label-set example holds tens).
    inner_first : float
        Inner relative gap of the first round: the first working sets are far from the final
        ones, so their restricted optimum need not be accurate.
    inner_share : float
        Later rounds solve to this share of the outer gap (never below ``tol``): an inner
        answer much more accurate than the working set is wasted.
    entry_rtol : float
        A pair joins only when its violation exceeds the restricted slack by this share of the
        largest loss (round-off must not enter pairs that are tied at the maximum).
    polish_below : float
        The inner solver takes its exact steps (:mod:`.margin_polish`) only once the inner gap
        asked for is below this: on working sets that are still growing an exact step on the
        working pairs is wasted (on FunCat label sets the working set has nearly settled once
        the outer gap is a few percent, and a face step from there saves most of the passes
        of the last decades; from 10 % it fails).
    round_passes : int
        Passes of the inner solver per round at most: a working set that is still missing
        pairs is not worth solving accurately, the oracle's next round is (a pass and an oracle
        call cost about the same).
    settled_share : float
        Once a round adds at most this share of the working set, the set may have settled:
        the next inner solve may run longer than ``round_passes`` (every round restarts the
        inner solver's schedules, which a capped round on a settled set only repeats) ...
    settled_growth : float
        ... up to this many times the last round's cap, back to ``round_passes`` when a round
        adds more (``inf``: no cap once settled).  Few pairs join while the capped rounds are
        still far from the restricted optimum, so a set can look settled long before it is;
        a cap that doubles keeps the passes spent on such a set within twice those of the
        round that showed it (on FunCat and GO label sets of a few hundred genes, side by
        side with ``inf``, it took 5-25 % less CPU time).
    max_rounds : int
        Rounds of the outer loop (it needs a handful; this bounds a pathological run).
    inner : str
        The inner solver of the restricted models: ``"working_set"`` (:mod:`.working_set`
        throughout; the default: on FunCat label sets of a few hundred genes, run side by side,
        it certified ``tol`` in about half the time of the other), ``"proximal"``
        (:mod:`.labelset_alm`, the proximal dual by semismooth Newton on the weights, once the
        outer gap is below ``proximal_below``; linear models with class attributes and dense
        features, others keep the working set) or ``"interior_point"``
        (:mod:`.interior_point_cg`, Mehrotra's predictor-corrector with matrix-free Newton
        systems, once the outer gap is below ``interior_below``; any kernel).  On label sets
        the restricted dual is degenerate (tens of tied support pairs per example), which
        slows coordinate ascent near the optimum; Newton steps on the weights do not depend on
        the multipliers' ties, but each costs conjugate-gradient passes over the working
        pairs, and the interior point's systems grow ill-conditioned as its barrier parameter
        falls (its block preconditioners then need thousands of conjugate-gradient steps per
        system on FunCat label sets).
    proximal_below : float
        With ``inner="proximal"``, the rounds run the working set until the outer gap is below
        this, the proximal dual after: the first working sets are far from the final ones and
        cheap coordinate passes find their pairs.
    proximal_max_weights : int
        The proximal dual only on models with at most this many node weights (nodes x
        features): a FunCat tree has tens of thousands, a GO DAG hundreds of thousands, where
        its conjugate-gradient passes cost most.
    working_set : working_set.Options
        The inner solver's settings (:class:`.working_set.Options`).  The default solves a
        visit's reduced QP to half the visit's own tolerance, without the single-label cap (on
        label sets the tens of tied pairs of an example make an exact reduced QP the most
        expensive part of a pass), ends a visit at half the skip threshold rather than a tenth
        (the next pass revisits the example anyway) and lets the skipped examples carry a fifth
        of the gap's bound rather than a twentieth (a pass then visits only the examples that
        carry most of it); on FunCat label sets these reach the same certified gap in less
        CPU time than the single-label settings.  Its face counts as settled when at most a
        fifth of the support changed between certificates rather than a hundredth: tied pairs
        of an example keep entering and leaving the support of a label-set dual, whose face
        is identified long before it stops changing by 1 % (the face step's corrections and
        its certificate take care of the rest).
    proximal : labelset_alm.Options
        The proximal dual's settings (:class:`.labelset_alm.Options`).
    interior_below : float
        With ``inner="interior_point"``, the rounds run the working set until the outer gap is
        below this, the interior point after (it does not warm start: each round it solves
        from scratch, so it is kept for the rounds of a working set that has nearly settled).
    interior_max_steps : int
        Newton steps per round of the interior point at most (it needs 15-40).
    interior_point : interior_point_cg.Options
        The interior point's settings (:class:`.interior_point_cg.Options`).
    primal_below : float
        Linear models with class attributes: once the outer gap is below this, a round's
        primal point may be improved by L-BFGS on the smoothed primal over every pair
        (:mod:`.labelset_smoothing`), from the round's ``w(alpha)``.  On label sets the
        passes' dual converges far ahead of the primal at their weights (on cellcycle_FUN's
        label sets the dual is within 3e-4 of its optimum while the primal at ``w(alpha)`` is
        1e-2 above it), so the certified gap is the primal's; above a few percent the working
        set is still growing and the dual is the laggard.  ``0`` (the default): never.  The
        polish lowers the passes a certified gap takes (the rounds' inner solves also stop
        once the polished primal certifies ``tol``), not the time: on FunCat label sets an
        evaluation of the smoothed primal costs about two passes and the passes it saves pay
        for the L-BFGS iterations and no more; 0.05 is a value to try where passes cost more.
    primal_passes : float
        ... and again after this many inner passes per evaluation of the smoothed primal the
        last polish took (an evaluation costs about two passes on FunCat label sets, so the
        polishes take at most about a sixth of the time).  Each polish smooths by a share of
        the current gap and starts from the round's ``w(alpha)``, which the rising dual
        brings nearer the optimum.
    primal_polish : labelset_smoothing.Options
        The polish's settings (:class:`.labelset_smoothing.Options`).
    """

    enter: int = 8
    inner_first: float = 1e-1
    inner_share: float = 0.1
    entry_rtol: float = 1e-9
    polish_below: float = 1e-2
    round_passes: int = 20
    settled_share: float = 0.01
    settled_growth: float = 2.0
    max_rounds: int = 1000
    inner: str = "working_set"
    proximal_below: float = 0.05
    proximal_max_weights: int = 100_000
    working_set: working_set.Options = field(
        default_factory=lambda: working_set.Options(
            sub_share=0.5, sub_cap=np.inf, local=0.5, skip_mass=0.2,
            dual=margin_dual.Options(settled_change=0.2)))
    proximal: labelset_alm.Options = field(default_factory=labelset_alm.Options)
    interior_below: float = 0.05
    interior_max_steps: int = 60
    interior_point: interior_point_cg.Options = field(default_factory=interior_point_cg.Options)
    primal_below: float = 0.0
    primal_passes: float = 10.0
    primal_polish: labelset_smoothing.Options = field(default_factory=labelset_smoothing.Options)


# --------------------------------------------------------------------------------------------
# The oracle on a model
# --------------------------------------------------------------------------------------------

oracle = _margin.oracle  # the loss-augmented oracle: per example its most violated pair
full_slacks = _margin.oracle_slacks  # xi_i over every pair of example i, by the oracle


def _model_scores(model: MarginModel, weights, Lam=None) -> np.ndarray:
    """Class scores ``(n, q)`` of the training examples at the model's own weights (node
    weights with the bias column, or representer coefficients ``G``); ``Lam``: the model's
    class attributes already converted (:func:`~hiercvx.models.margin.sparse_attributes`)."""
    if model.node_weights:
        return _margin.class_scores(weights, model.X, model.data.Lam if Lam is None else Lam)
    return model.K @ weights @ model.data.Q


def _full_objective(model: MarginModel, weights, C: float, S) -> float:
    """(4.10) at the model's own weights, whose class scores are ``S``, the slacks from the
    oracle over every pair."""
    data = model.data
    xi = full_slacks(S, data)
    # the kernel form's regularizer <G, K G Q> reads the scores S = K G Q
    reg = float(np.sum(weights * (weights if model.node_weights else S)))
    return 0.5 * reg + C * float(data.Cw @ xi)


# --------------------------------------------------------------------------------------------
# The working set of pairs
# --------------------------------------------------------------------------------------------

class _Pairs:
    """The working set as sorted keys ``(i q + y) q + ybar`` (the order of
    :func:`hiercvx.models.margin.label_pairs`) and the restricted model built on it."""

    def __init__(self, model: MarginModel):
        self.model, self.data = model, model.data
        self.q = self.data.n_classes
        self.keys = np.zeros(0, dtype=np.int64)
        self.rel = _margin.relevant_lists(self.data.Y)
        self.loss = np.ascontiguousarray(self.data.loss, dtype=float)
        # CSR once (when mostly zeros), not at every product of every round
        self.Lam = None if self.data.Lam is None else _margin.sparse_attributes(self.data.Lam)

    def arrays(self, keys=None):
        keys = self.keys if keys is None else keys
        q = self.q
        return keys // (q * q), (keys // q) % q, keys % q

    def add(self, S, floor, enter: int) -> int:
        """The pairs violated above ``floor`` (up to ``enter`` per example) join; returns how
        many were new."""
        n = S.shape[0]
        out_y = np.empty((n, enter), np.int64)
        out_b = np.empty((n, enter), np.int64)
        violated_pairs(np.ascontiguousarray(S, dtype=float), self.rel[0], self.rel[1],
                       self.loss, self.data.rescaling == "slack",
                       np.ascontiguousarray(floor, dtype=float), out_y, out_b)
        ok = out_y >= 0
        rows = np.broadcast_to(np.arange(n, dtype=np.int64)[:, None], ok.shape)[ok]
        new = (rows * self.q + out_y[ok]) * self.q + out_b[ok]
        before = self.keys.size
        self.keys = np.union1d(self.keys, new)
        return self.keys.size - before

    def restricted(self) -> MarginModel:
        """The model on the working set: same inputs and settings, its pairs only."""
        small = copy.copy(self.model)
        small.data = _margin.restrict(self.data, *self.arrays())
        small.data.Lam = self.Lam
        return small

    def carry(self, old_keys, old_alpha) -> np.ndarray:
        """The multipliers of ``old_keys`` placed on the current working set (0 for new pairs)."""
        alpha = np.zeros(self.keys.size)
        if old_keys.size:
            alpha[np.searchsorted(self.keys, old_keys)] = old_alpha
        return alpha

    def join(self, keys) -> None:
        """The pairs ``keys`` join the working set."""
        self.keys = np.union1d(self.keys, keys)

    def full_dual(self, keys, alpha):
        """The multipliers ``alpha`` of the pairs ``keys`` as a sparse vector over the model's
        whole pair list (:func:`hiercvx.models.margin.sparse_dual`; the list is not formed)."""
        return _margin.sparse_dual(self.data, *self.arrays(keys), alpha)

    def warm_start(self, alpha0, C: float):
        """The pairs and multipliers of a warm start ``alpha0`` (one value per pair of the
        model's list, dense or sparse, as :func:`solve` returns them in ``dual``), checked and
        projected onto the dual feasible set of ``C`` on its support (the budgets of an
        example involve its own pairs only): its support joins the working set; returns
        ``(keys, alpha)`` of that support."""
        P = self.data.n_pairs
        if np.shape(alpha0) != (P,):
            raise InputError(f"alpha0 must hold one value per pair of the model ({P}), got "
                             f"shape {np.shape(alpha0)}")
        if not sp.issparse(alpha0):
            dense = np.asarray(alpha0, dtype=float)
            support = np.flatnonzero(dense)
            alpha0 = sp.coo_array((dense[support], (support,)), shape=(P,))
        if not np.all(np.isfinite(sp.coo_array(alpha0).data)):
            raise InputError("alpha0 must hold finite values")
        values, support = _margin.on_support(alpha0, self.data)
        values = _margin.project_dual(values, support, C)
        keep = values > 0
        keys = ((support.pair_i * self.q + support.pair_y) * self.q + support.pair_ybar)[keep]
        self.join(keys)
        return keys, values[keep]


# --------------------------------------------------------------------------------------------
# The solver
# --------------------------------------------------------------------------------------------

def solve(model: MarginModel, C: float = 1.0, *, tol: float = 1e-6, max_iter: int = 10_000,
          verbose: bool = False, alpha0=None, random_state=0,
          options: Options | None = None) -> Solution:
    """The margin model (thesis (4.10) / (4.15) on label sets) by n-slack cutting planes.

    Parameters
    ----------
    model : MarginModel
        ``hiercvx.models.hsvm.prepare(X, Y, H, ...)`` with label sets (or single labels), any
        kernel, rescaling, sample weights and bias.
    C : float
        Positive; example i's budget is ``C * data.Cw[i]``.
    tol : float
        Certified relative duality gap to reach.
    max_iter : int
        Passes of the inner working-set solver over all rounds (a Newton step of the interior
        point counts as one); a ``ConvergenceWarning`` is issued when they run out.
    verbose : bool
        Log the rounds at INFO level (DEBUG otherwise).
    alpha0 : array or sparse vector, optional
        A warm start: multipliers on the model's pair list (a previous solve's ``dual``, e.g.
        at another ``C``), projected onto this ``C``'s dual feasible set; the pairs that carry
        them join the first working set, which starts from them.
    random_state : int
        Seed of the inner solver's order of examples.
    options : Options, optional
        The engine's settings (default ``Options()``).

    Returns
    -------
    Solution
        ``weights`` node weights ``W`` ``(M, d)`` (linear kernel with class attributes; the
        bias in ``extras["intercept"]``) or expansion coefficients ``G`` ``(n, q)``;
        ``objective`` (4.10) recomputed over all pairs; ``lower_bound`` the dual (4.14) at
        ``dual``, the multipliers on the model's pair list as a sparse vector
        (``scipy.sparse.coo_array`` of shape ``(n_pairs,)``, zero outside the working set;
        the list itself is never formed, :func:`hiercvx.models.margin.sparse_dual`).
        Extras: ``coefficients``, ``working_pairs`` (the working set's ``(i, y, ybar)``),
        ``working_dual`` (its multipliers), ``rounds``.
    """
    if not isinstance(model, MarginModel):
        raise InputError("model must be a margin model: hiercvx.models.hsvm.prepare(X, Y, H, ...)"
                         f", got {type(model).__name__}")
    C = check_positive(C)
    check_iteration_options(tol, max_iter, who="labelset.solve")
    options = Options() if options is None else options
    return _Run(model, C, float(tol), options, verbose).run(int(max_iter), random_state, alpha0)


class _Run:
    def __init__(self, model, C, tol, options: Options, verbose):
        self.model, self.C, self.tol, self.options = model, C, tol, options
        self.log = logger.info if verbose else logger.debug
        self.pairs = _Pairs(model)
        self.history = {k: [] for k in ("round", "objective", "lower_bound", "gap", "pairs",
                                        "n_iter", "time")}
        # the proximal dual multiplies dense node scores X W^T: dense features only
        self.proximal = (options.inner == "proximal" and model.node_weights
                         and not sp.issparse(model.X)
                         and model.data.Lam.shape[1] * model.X.shape[1]
                         <= options.proximal_max_weights)
        self.warm = (None, None)
        self.polish_carry = None  # step 8b's credit across the rounds' inner solves
        self.gap = np.inf
        # the certificate's two sides, each the best met over the rounds: the primal point
        # (objective, weights over the model's own features, the inner result whose w(alpha)
        # it is, or None for a polished point) and the dual (inner result, its working set)
        self.primal = (np.inf, None, None)
        self.dual = None
        self.passes = 0  # inner passes of the finished rounds
        self.polish_next = 0.0  # inner passes (in all) before which no primal polish is due
        if not model.node_weights:
            model.K  # formed once, shared by the restricted models (copy keeps the cache)

    def run(self, max_iter, random_state, alpha0=None) -> Solution:
        t0 = time.perf_counter()
        opts, data = self.options, self.model.data
        n = data.n_samples
        scale = float(np.max(data.loss)) if data.loss.size else 1.0
        warm = None if alpha0 is None else self.pairs.warm_start(alpha0, self.C)
        self.pairs.add(np.zeros((n, data.n_classes)), np.full(n, -np.inf), opts.enter)
        alpha = np.zeros(self.pairs.keys.size) if warm is None else self.pairs.carry(*warm)
        inner, passes = opts.inner_first, 0
        cap = opts.round_passes
        factor = opts.working_set.factor
        if factor == "auto":  # chosen once, on the first working set, not every round
            factor = choose_factor(self.pairs.restricted().data, gram=not self.model.node_weights)
        self.inner_options = dataclasses.replace(opts.working_set, polish=False, factor=factor)
        for rnd in range(opts.max_rounds):
            small = self.pairs.restricted()
            res = self._inner(small, alpha, max(inner, self.tol),
                              max(min(max_iter - passes, cap), 1), random_state)
            passes += res.n_iter
            self.passes = passes
            own = small.augmented_weights(res.weights, res.extras.get("intercept")) \
                if small.node_weights else res.weights
            S = _model_scores(self.model, own, self.pairs.Lam)
            objective = _full_objective(self.model, own, self.C, S)
            if objective < self.primal[0]:
                self.primal = (objective, own, res)
            if self.dual is None or res.lower_bound > self.dual[0].lower_bound:
                self.dual = (res, self.pairs.keys.copy())
            gap = self._polished_gap(own)
            self.gap = min(self.gap, gap)
            if self.proximal and res.solver != "labelset_alm":
                self.warm = (own, None)  # the proximal dual starts from the last working set
            self._record(rnd, self.primal[0], self.dual[0].lower_bound, gap, passes, t0)
            if reached(gap, self.tol) or passes >= max_iter:
                break
            xi_small = _margin.slacks(S, small.data)  # the same inputs: the same scores
            old_keys, old_alpha = self.pairs.keys.copy(), res.dual
            added = self.pairs.add(S, xi_small + opts.entry_rtol * scale, opts.enter)
            alpha = self.pairs.carry(old_keys, old_alpha)
            settled = added <= opts.settled_share * old_keys.size
            cap = (int(min(max_iter, cap * opts.settled_growth)) if settled
                   else opts.round_passes)
            inner = max(self.tol, min(inner, opts.inner_share * gap))
            self.inner_options = dataclasses.replace(
                self.inner_options, polish=opts.working_set.polish and inner <= opts.polish_below)
            if added == 0 and reached(res.gap, self.tol):
                break  # nothing to add and the restricted problem is solved: round-off only
        return self._result(passes, t0)

    def _polished_gap(self, start, lower=None, passes=None) -> float:
        """The gap of the best primal point and the best dual bound (or ``lower``), after a
        primal polish when one is due (:attr:`Options.primal_below`,
        :attr:`Options.primal_passes`; ``passes``: the inner passes so far): L-BFGS on the
        smoothed primal from ``start``, a ``w(alpha)`` of the passes (nearer the optimum in
        norm than any polished point: ``||w(alpha) - w*||^2 <= 2 (D* - D(alpha))``), kept
        when its exact objective (4.10) is lower."""
        opts, model = self.options, self.model
        lower = self.dual[0].lower_bound if lower is None else lower
        passes = self.passes if passes is None else passes
        gap = relative_gap(self.primal[0], lower)
        if not (gap <= opts.primal_below and passes >= self.polish_next and model.node_weights
                and not reached(gap, self.tol)):
            return gap
        W, n_eval = labelset_smoothing.polish(model, start, self.C, self.primal[0] - lower,
                                              self.pairs.rel, self.pairs.Lam, opts.primal_polish)
        self.polish_next = passes + opts.primal_passes * n_eval
        objective = _full_objective(model, W, self.C, _model_scores(model, W, self.pairs.Lam))
        self.log("primal polish: %.10g -> %.10g (%d evaluations)", self.primal[0], objective,
                 n_eval)
        if objective < self.primal[0]:
            self.primal = (objective, W, None)
        return relative_gap(self.primal[0], lower)

    def _mid_round(self, small):
        """``stop_when`` of a round's inner solve (linear models): at its certificates, a
        primal polish from its ``w(alpha)`` when one is due, and stop once the best primal
        point and its dual bound certify ``tol`` (rounds run thousands of passes near the
        end; the outer gap is otherwise seen only between them)."""
        def stop(n_iter, pass_work, alpha) -> bool:
            passes = self.passes + n_iter
            if self.dual is None or passes < self.polish_next:
                return False
            lower = small.lower_bound(alpha, self.C)
            own = _margin.weights_from_coefficients(
                _margin.coefficients(_margin.project_dual(alpha, small.data, self.C),
                                     small.data), small.X, self.pairs.Lam)
            return reached(self._polished_gap(own, lower, passes), self.tol)
        return stop if small.node_weights and self.options.primal_below > 0 else None

    def _inner(self, small, alpha, tol, max_iter, random_state) -> Solution:
        """The restricted model solved to ``tol`` from ``alpha`` (and the last weights)."""
        with warnings.catch_warnings():  # an unfinished round is no news: the outer decides
            warnings.simplefilter("ignore")
            if self.options.inner == "interior_point" and \
                    self.gap <= self.options.interior_below:
                return interior_point_cg.solve(small, self.C, tol=tol,
                                               max_iter=self.options.interior_max_steps,
                                               warn=False, options=self.options.interior_point)
            if self.proximal and self.gap <= self.options.proximal_below:
                res = labelset_alm.solve(small, self.C, W0=self.warm[0], alpha0=alpha,
                                         sigma0=self.warm[1], tol=tol,
                                         options=self.options.proximal)
                self.warm = (res.extras["W_last"], None)  # new pairs: sigma starts again
                return res
            res = working_set.solve(small, self.C, tol=tol, max_iter=max_iter, alpha0=alpha,
                                    random_state=random_state, options=self.inner_options,
                                    polish_carry=self.polish_carry,
                                    stop_when=self._mid_round(small))
            self.polish_carry = res.extras["polish_carry"]
            return res

    def _record(self, rnd, objective, lower, gap, passes, t0):
        for key, val in (("round", rnd), ("objective", objective), ("lower_bound", lower),
                         ("gap", gap), ("pairs", int(self.pairs.keys.size)),
                         ("n_iter", passes), ("time", time.perf_counter() - t0)):
            self.history[key].append(val)
        self.log("round %d: %d working pairs, primal %.10g dual %.10g gap %.3e (%d passes)",
                 rnd, self.pairs.keys.size, objective, lower, gap, passes)

    def _result(self, passes, t0) -> Solution:
        """The best primal point (its weights, objective) and the best dual point (its
        multipliers, bound), which may come from different rounds: each side is certified on
        its own (the objective recomputed over every pair, the bound at a feasible point)."""
        res, keys = self.dual
        objective, own, source = self.primal
        gap = relative_gap(objective, res.lower_bound)
        pi, py, pyb = self.pairs.arrays(keys)
        sub_alpha = np.asarray(res.dual, dtype=float)
        full = self.pairs.full_dual(keys, sub_alpha)
        if source is not None:  # the weights w(alpha) of an inner solve, as it reported them
            weights = source.weights
            extras = {k: v for k, v in source.extras.items()
                      if k in ("coefficients", "intercept", "at_zero")}
        else:  # a polished point: node weights over the model's own features
            weights, intercept = self.model.split_weights(own)
            extras = {"intercept": intercept} if "intercept" in res.extras else {}
        extras.update(working_pairs=(pi, py, pyb), working_dual=sub_alpha,
                      rounds=len(self.history["round"]))
        sol = Solution(weights=weights, objective=float(objective),
                       lower_bound=float(res.lower_bound), n_iter=passes,
                       converged=reached(gap, self.tol), tol=self.tol, dual=full,
                       history=self.history, solve_time=time.perf_counter() - t0,
                       solver="labelset", name="hsvm label-set cutting planes (n-slack)",
                       extras=extras)
        sol.warn_unless_converged("passes", stacklevel=4)
        return sol
