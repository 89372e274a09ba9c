"""The oracle for label-set inference: a user's routine for ``argmax_{y in Y_m} s(y) + Delta(y, t)``
(Choi, Sasaki, Srebro, *Normalized Hierarchical SVM*, arXiv:1508.02479, 2016: the multi-label
space of section 3, loss-augmented inference (18) and the integer program (19)) checked against
the certified CVXPY reference :func:`hiercvx.inference.reference`.

- :func:`inference_problems`: seeded node scores on a tree and on a DAG with a node of two
  parents, each plain and loss-augmented (the paper's leaf Hamming loss ``Delta_L`` and the
  Hamming loss over all nodes);
- :func:`check_inference` ``(fn, ...)``: every returned set must be a member of ``Y_m`` and score
  the certified optimum; a failure names the problem, the sample, what is wrong with the set
  (which closure, child or leaf row of (19) it breaks) and the optimum's set;
- :data:`INFERENCE_BUGS` / :func:`inference_kill_matrix`: planted mistakes of an inference routine
  (sets not closed upward, one path instead of a set, the loss ignored or with its sign flipped,
  a DAG read as a tree, the LP rounded, greedy descent, the root alone) and whether the check
  catches each.
"""

from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass, field

import numpy as np

from .. import inference
from ..exceptions import InputError
from ..hierarchy import Hierarchy
from ..methods.cases import DAG, TREE
from ..result import comparison_scale
from .check import SkippedProblemWarning, SolverCheckError

__all__ = ["INFERENCE_BUGS", "InferenceProblem", "check_inference", "inference_kill_matrix",
           "inference_problems"]


@dataclass
class InferenceProblem:
    """Node scores ``S`` ``(n, M)`` on ``H`` and, for loss-augmented inference, the ``loss`` and
    each sample's true set ``true_indicator`` ``(n, M)``;
    :meth:`~hiercvx.testing.inference.InferenceProblem.reference` is the certified optimum of (19)
    (solved once)."""

    name: str
    H: Hierarchy
    S: np.ndarray
    loss: str | None = None
    true_indicator: np.ndarray | None = None
    _reference: object = field(default=None, repr=False)

    @property
    def options(self) -> dict:
        """What the user's ``fn`` receives as keywords."""
        if self.loss is None:
            return {}
        return {"loss": self.loss, "true_indicator": self.true_indicator}

    def reference(self):
        """The certified :class:`~hiercvx.result.Solution` of (19) on these scores."""
        if self._reference is None:
            self._reference = inference.reference(self.S, self.H, **self.options)
        return self._reference

    def values(self, sets: np.ndarray) -> np.ndarray:
        """``s(y_i) + Delta(y_i, t_i)`` of each row of ``sets``."""
        if self.loss is None:
            return inference.label_set_scores(self.S, sets)
        S, constant = inference.loss_augmented_scores(self.S, self.H, self.true_indicator, self.loss)
        return inference.label_set_scores(S, sets) + constant

    def __repr__(self):
        return f"InferenceProblem({self.name})"


def inference_problems(seed: int = 0, n: int = 12) -> list:
    """Plain and loss-augmented problems on the tree and the DAG of :mod:`hiercvx.methods.cases`,
    scores drawn ``N(0, 1)`` at ``seed``; true sets of one or two leaves, closed upward."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise InputError(f"seed must be a non-negative integer, got {seed!r}")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise InputError(f"n must be a positive integer, got {n!r}")
    out = []
    for shape, H in (("tree", TREE), ("dag", DAG)):
        rng = np.random.default_rng([seed, len(H)])
        S = rng.standard_normal((n, len(H)))
        leaves = list(H.leaves)
        labels = [set(rng.choice(leaves, size=1 + (i % 2), replace=False)) for i in range(n)]
        T = np.asarray(H.closure(labels))
        out.append(InferenceProblem(f"{shape} seed={seed} n={n}", H, S))
        for loss in ("leaf_hamming", "hamming"):
            out.append(InferenceProblem(f"{shape} seed={seed} n={n}, loss {loss!r}", H, S, loss, T))
    return out


def _as_sets(result, problem: InferenceProblem) -> np.ndarray:
    """A bool ``(n, M)`` array from a 0/1 array over ``H.nodes`` (a nested list of 0/1 rows of
    length ``M`` too) or a list of label sets (node names, closed or not -- taken as given)."""
    H = problem.H
    if isinstance(result, (list, tuple)) and result and _indicator_rows(result, H):
        result = np.asarray(result)
    elif isinstance(result, (list, tuple)) and result and not np.isscalar(result[0]):
        Z = np.zeros((len(result), len(H)), dtype=bool)
        for i, labels in enumerate(result):
            for name in labels:
                Z[i, H.index(name)] = True
        return Z
    Z = np.asarray(result)
    if Z.shape != problem.S.shape:
        raise InputError(f"an inference routine must return one set per sample: a 0/1 array of shape "
                         f"{problem.S.shape} over H.nodes, or a list of label sets; got shape {Z.shape}")
    if Z.dtype != bool and not np.isin(Z, (0, 1)).all():
        bad = np.asarray(Z[~np.isin(Z, (0, 1))].flat[0]).item()
        raise InputError(f"an inference routine's array must hold 0/1 (or bool) over H.nodes; it "
                         f"holds {bad!r}: return 1 for a node in the set and 0 otherwise")
    return Z.astype(bool)


def _indicator_rows(result, H: Hierarchy) -> bool:
    """Whether a list reads as 0/1 rows over ``H.nodes``: every row a list, tuple or array (not
    a set) of ``len(H)`` entries each 0 or 1.  On a hierarchy with nodes named 0 or 1 such rows
    could be names as well: :class:`~hiercvx.exceptions.InputError` asks for an unambiguous form."""
    rows = [r for r in result if isinstance(r, (list, tuple, np.ndarray)) and len(r) == len(H)
            and all(isinstance(v, (bool, int, np.bool_, np.integer)) and v in (0, 1) for v in r)]
    if len(rows) != len(result):
        return False
    if any(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v in (0, 1)
           for v in H.nodes):
        raise InputError("an inference routine returned lists of 0 and 1 on a hierarchy whose nodes "
                         "are named 0 or 1: they could be indicator rows or node names; return a "
                         "NumPy 0/1 array of shape (n, len(H.nodes)) or a list of sets of node names")
    return True


def _why_invalid(z: np.ndarray, H: Hierarchy) -> str:
    """Which row of (19) the set breaks."""
    nodes = H.nodes
    if not z[0]:
        return f"the root {nodes[0]!r} is not in it"
    for p, c in H.edge_index:
        if z[c] and not z[p]:
            return f"it holds {nodes[c]!r} but not its parent {nodes[p]!r} (not closed upward)"
    for v in np.flatnonzero(z & ~H.leaf_mask):
        if not any(z[H.index(c)] for c in H.children(nodes[v])):
            return f"internal node {nodes[v]!r} is in it with none of its children"
    return "it holds no leaf"


def _names(z: np.ndarray, H: Hierarchy) -> str:
    return "{" + ", ".join(str(H.nodes[k]) for k in np.flatnonzero(z)) + "}"


def run_inference(fn, problem: InferenceProblem, rtol: float) -> tuple[list, bool]:
    """``(reasons, per_sample)``: why ``fn`` fails on ``problem`` (empty: it passes), one reason
    per failing sample, or (``per_sample`` False) one about its whole answer."""
    try:
        Z = _as_sets(fn(problem.S, problem.H, **problem.options), problem)
    except InputError as exc:
        return [str(exc)], False
    except Exception as exc:  # noqa: BLE001 -- the user's code failing is a finding
        return [f"fn raised {type(exc).__name__}: {str(exc)[:300]}"], False
    ref = problem.reference()
    best = np.asarray(ref.extras["value"], dtype=float)
    valid = inference.is_valid_label_set(Z, problem.H)
    mine = problem.values(Z)
    reasons = []
    for i in range(len(Z)):
        if not valid[i]:
            reasons.append(f"sample {i}: {_names(Z[i], problem.H)} is not a label set of Y_m: "
                           f"{_why_invalid(Z[i], problem.H)}")
        elif mine[i] < best[i] - rtol * comparison_scale(best[i]):
            reasons.append(f"sample {i}: your set {_names(Z[i], problem.H)} scores {mine[i]:.8g}; the "
                           f"certified optimum {best[i]:.8g} is {_names(ref.weights[i], problem.H)}")
    return reasons, True


def _takes(fn, keys) -> bool:
    params = inspect.signature(fn).parameters.values()
    names = {p.name for p in params}
    return all(k in names for k in keys) or any(p.kind == p.VAR_KEYWORD for p in params)


def check_inference(fn, *, problems=None, rtol: float = 1e-9, random_state: int = 0,
                    strict: bool = False) -> list:
    """Check a label-set inference routine against the certified reference of program (19).

    Parameters
    ----------
    fn : callable
        ``fn(scores, H, *, loss=None, true_indicator=None)`` -> one label set per row of
        ``scores`` ``(n, M)`` (columns in ``H.nodes`` order): a 0/1 array ``(n, M)`` or a list of
        sets of node names.  With ``loss`` it must maximize ``s(y) + Delta(y, t_i)`` (NHSVM (18)).
    problems : list of InferenceProblem, optional
        Default :func:`inference_problems` ``(random_state)``.
    rtol : float
        Relative shortfall of a set's value below the optimum allowed.
    random_state : int
        Seed of the default problems (used when ``problems`` is None).
    strict : bool
        Fail (instead of warning) when ``fn`` takes no ``loss`` / ``true_indicator`` and the
        loss-augmented problems are skipped.

    Returns
    -------
    list of str
        The names of the problems checked.

    Raises
    ------
    SolverCheckError
        Naming the first failing problem, the failing samples and why; with ``strict``, also
        when the loss-augmented problems cannot be run.
    """
    __tracebackhide__ = True
    if isinstance(rtol, bool) or not isinstance(rtol, (int, float)) or not np.isfinite(rtol) or rtol <= 0:
        raise InputError(f"rtol must be a positive finite number, got {rtol!r}")
    todo = inference_problems(random_state) if problems is None else list(problems)
    skipped = [p for p in todo if p.loss is not None and not _takes(fn, ("loss", "true_indicator"))]
    if strict and skipped:
        raise SolverCheckError(f"check_inference(strict=True): fn takes no loss / true_indicator, so "
                               f"{len(skipped)} loss-augmented problem(s) were not run", [], [])
    checked = []
    for problem in (p for p in todo if p not in skipped):
        reasons, per_sample = run_inference(fn, problem, rtol)
        if reasons and not per_sample:
            raise SolverCheckError(f"check_inference failed on {problem.name}: {reasons[0]}", [], [])
        if reasons:
            raise SolverCheckError(
                f"check_inference failed on {problem.name}: {len(reasons)} of {len(problem.S)} "
                "samples wrong\n" + "\n".join(f"  {r}" for r in reasons[:6]), [], [])
        checked.append(problem.name)
    if skipped:
        warnings.warn(SkippedProblemWarning(
            f"check_inference skipped {len(skipped)} loss-augmented problem(s): fn takes no loss / "
            "true_indicator (strict=True makes this a failure)"), stacklevel=2)
    return checked


# ---------------------------------------------------------------------- planted bugs
def _exact(S, H, loss=None, true_indicator=None):
    return inference.best_label_set(S, H, "enumerate" if not H.is_tree else "dp", loss=loss,
                                    true_indicator=true_indicator)


def _leaves_only(S, H, **kw):
    return _exact(S, H, **kw) & H.leaf_mask[None, :]


def _single_path(S, H, loss=None, true_indicator=None):
    if loss is not None:
        S, _ = inference.loss_augmented_scores(S, H, true_indicator, loss)
    return inference.best_leaf(S, H, return_indicator=True)[1]


def _loss_ignored(S, H, loss=None, true_indicator=None):
    return _exact(S, H)


def _loss_sign(S, H, loss=None, true_indicator=None):
    if loss is None:
        return _exact(S, H)
    A, _ = inference.loss_augmented_scores(S, H, true_indicator, loss)
    return _exact(2 * S - A, H)


def _first_parent_tree(H: Hierarchy) -> Hierarchy:
    return Hierarchy.from_parents({v: (H.parents(v)[0] if H.parents(v) else None) for v in H.nodes})


def _dag_as_tree(S, H, loss=None, true_indicator=None):
    if loss is not None:
        S, _ = inference.loss_augmented_scores(S, H, true_indicator, loss)
    tree = _first_parent_tree(H)
    order = [tree.index(v) for v in H.nodes]
    Z = inference.best_label_set(S[:, np.argsort(order)], tree, "dp")
    return Z[:, order]


def _lp_rounded(S, H, loss=None, true_indicator=None):
    sol = inference.reference(S, H, loss=loss, true_indicator=true_indicator, relaxation=True)
    return np.asarray(sol.weights) > 0.5


def _greedy(S, H, loss=None, true_indicator=None):
    if loss is not None:
        S, _ = inference.loss_augmented_scores(S, H, true_indicator, loss)
    Z = np.zeros(S.shape, dtype=bool)
    for i in range(len(S)):
        v = H.root
        Z[i, 0] = True
        while H.children(v):
            v = max(H.children(v), key=lambda c: S[i, H.index(c)])
            Z[i, H.index(v)] = True
    return Z


def _root_only(S, H, **kw):
    Z = np.zeros(S.shape, dtype=bool)
    Z[:, 0] = True
    return Z


#: ``(key, what, fn, where)``: where it applies (``"all"``, ``"loss"``: loss-augmented problems,
#: ``"dag"``)
INFERENCE_BUGS = (
    ("not_closed", "the leaves of the best set without their ancestors", _leaves_only, "all"),
    ("single_path", "one leaf and its ancestors (Y_s) instead of a set of Y_m", _single_path, "all"),
    ("loss_ignored", "loss-augmented inference without the loss", _loss_ignored, "loss"),
    ("loss_sign", "the loss subtracted instead of added", _loss_sign, "loss"),
    ("dag_as_tree", "a DAG read as the tree of first parents", _dag_as_tree, "dag"),
    ("lp_rounded", "the LP relaxation rounded at 1/2", _lp_rounded, "dag"),
    ("greedy", "greedy descent to the best child", _greedy, "all"),
    ("root_only", "the root alone", _root_only, "all"),
)


def inference_kill_matrix(seed: int = 0) -> list:
    """``[(bug, caught, first line)]`` of every planted inference bug over the problems where
    it applies."""
    problems = inference_problems(seed)
    rows = []
    for key, _, fn, where in INFERENCE_BUGS:
        chosen = [p for p in problems if where == "all" or (where == "loss" and p.loss is not None)
                  or (where == "dag" and not p.H.is_tree)]
        try:
            check_inference(fn, problems=chosen)
        except SolverCheckError as exc:
            rows.append((key, True, str(exc).splitlines()[0]))
            continue
        rows.append((key, False, "passed: not caught"))
    return rows
