"""What every method of the sibling-margin QP reads of one prepared model.

For the QP (8) of Wang, Shen & Pan (JMLR 12, 2011) and its dual (9)-(11) on a
:class:`~hiercvx.models.sibling.SiblingModel`: the functions ``W(gamma)`` of a dual point
(:meth:`PairProblem.functions`), the pairs the dual can use (:meth:`PairProblem.live_pairs`),
the biases of the nodes no such pair touches (:meth:`PairProblem.complete_biases`), and the
record :class:`StepResult` every method returns.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ...models.sibling import SiblingModel

__all__ = ["PairProblem", "StepResult"]


class StepResult(NamedTuple):
    """One method's certified answer for (8): functions ``W`` and biases ``b``, the primal
    value there, the dual bound (9) at the feasible point ``feas``, iterations, whether the
    gap reached the tolerance, the history of the certificate, ``beta`` as iterated, and what
    ``n_iter`` counts (``unit``, the word of the ``ConvergenceWarning``)."""

    W: np.ndarray
    b: np.ndarray
    primal: float
    lower: float
    feas: np.ndarray
    n_iter: int
    converged: bool
    history: dict
    beta: np.ndarray
    unit: str = "iterations"


class PairProblem:
    """The model, its pairs and the sparse incidences every method shares.

    Attributes: ``model``, ``pairs`` (:class:`~hiercvx.models.sibling.SiblingPairs`),
    ``n`` examples, ``M`` nodes, ``P`` pairs, ``pos`` / ``neg`` the winning and beaten node
    of every pair, ``Bm`` ``(n, P)`` the examples' budget rows of (11), ``on_path`` the nodes
    on some label's path."""

    def __init__(self, model: SiblingModel):
        self.model = model
        pr = model.pairs
        self.pairs = pr
        self.n, self.M, self.P = model.n, model.M, pr.n_pairs
        self.pos = np.ascontiguousarray(pr.pair_pos, dtype=np.int64)
        self.neg = np.ascontiguousarray(pr.pair_neg, dtype=np.int64)
        self.Bm = sp.csr_matrix((np.ones(self.P), (pr.pair_i, np.arange(self.P))),
                                shape=(self.n, self.P))
        # nodes on some label's path: the others are only ever the beaten side of a pair
        self.on_path = np.zeros(self.M, dtype=bool)
        self.on_path[pr.pair_pos] = True
        self._gram = None

    def functions(self, beta, lam):
        """``W(gamma)`` (linear) or the coefficients ``Gamma(gamma)^T`` (kernel) at
        ``gamma = beta - lam``, root row 0 (the stationarity condition of (8) in ``w``)."""
        A = self.model.gmat(beta - lam)
        if self.model.linear:
            X = self.model.X
            W = np.asarray((X.T @ A).T if sp.issparse(X) else A.T @ X)
        else:
            W = np.ascontiguousarray(A.T)
        W[0] = 0.0
        return W

    def at_zero(self, C, lam) -> float:
        """(8) at zero functions: the scale of the relative gap when the optimum is 0, and the
        decrease from zero that a tiny ``C`` leaves to certify."""
        m = self.model
        W0 = np.zeros((self.M, m.X.shape[1] if m.linear else self.n))
        return m.primal_value(W0, np.zeros(self.M), C, lam)

    def live_pairs(self, lam):
        """Pairs the dual can use: those whose beaten node ``t`` is on some label's path or
        carries a DC term.  A node off every path that no DC term touches appears in (10) only
        as ``-sum_{p: t_p = t} beta_p = 0``, so its pairs have ``beta = 0`` at every feasible
        point; its weight is 0 and its bias is set by :meth:`complete_biases`.  On a wide
        star with few labelled leaves this keeps the work proportional to the labelled
        classes.  Returns the indices of the live pairs, or ``None`` when all are live."""
        dead = ~self.on_path
        if lam.any():
            dead[self.neg[lam > 0]] = False
        if not dead.any():
            return None
        live = ~dead[self.neg]
        return None if live.all() else np.flatnonzero(live)

    def n_live(self, lam) -> int:
        """The number of live pairs (:meth:`live_pairs`)."""
        live = self.live_pairs(lam)
        return self.P if live is None else live.size

    def complete_biases(self, W, b, live):
        """Biases of the nodes no live pair involves (see :meth:`live_pairs`): each such
        node's bias is put 2 below the lowest score its winners reach, so all its pairs have
        margin >= 2 and no loss; then every sibling group is centred (margins are sibling
        differences, so they do not change).  Returns the centred ``(W, b)``."""
        if live is None:
            return self.model.center(W, b)
        pr = self.pairs
        dead_pair = np.ones(self.P, dtype=bool)
        dead_pair[live] = False
        dead_node = np.zeros(self.M, dtype=bool)
        dead_node[self.neg[dead_pair]] = True
        dead_node[self.neg[live]] = False
        dead_node[self.pos] = False
        sel = np.flatnonzero(dead_node[self.neg])
        b = b.copy()
        if sel.size:
            i, j, t = pr.pair_i[sel], self.pos[sel], self.neg[sel]
            S = self.model.train_scores(W, b)
            room = S[i, j] - (S[i, t] - b[t])           # m_p = room - b_t
            lowest = np.full(self.M, np.inf)
            np.minimum.at(lowest, t, room)
            fin = dead_node & np.isfinite(lowest)
            b[fin] = lowest[fin] - 2.0
        return self.model.center(W, b)

    def gram(self):
        """The Gram matrix of the training inputs ``(n, n)`` (linear: ``X X^T``), kept."""
        if self._gram is None:
            m = self.model
            if m.linear:
                G = m.X @ m.X.T
                G = G.toarray() if sp.issparse(G) else np.asarray(G, dtype=float)
            else:
                G = m.K
            self._gram = np.ascontiguousarray(G, dtype=float)
        return self._gram
