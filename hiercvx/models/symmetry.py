"""Interchangeable classes of a margin model, collapsed to one class each.

A class that no example holds (never relevant) is only ever a competitor.  When several such
classes are *interchangeable* (swapping any two of them maps the problem onto itself), the
optimal weights treat them alike, and the problem is the same with the group replaced by
one class.  This is what makes a wide hierarchy cost what its data use: on a 5000-leaf star
with examples on one leaf, 4999 leaves are interchangeable and the model has two classes.

**Condition** (on the class kernel ``Q = Lam Lam^T`` and the loss): classes ``a, b`` of a
group ``G`` are never relevant, ``Q_aa = Q_bb``, ``Q_ac = Q_bc`` for every class ``c`` outside
``{a, b}``, and ``loss[y, a] = loss[y, b]`` for every class ``y`` some example holds.  Then
the transposition of ``a`` and ``b`` preserves the primal (4.10) and the dual (4.15); the
primal is strictly convex in ``W``, so the optimal ``W`` is fixed by it, and averaging a dual
optimum over the group's permutations gives an optimal ``alpha`` that is equal on the group.

**Collapsed model.** Let ``m = |G|`` and ``T`` the ``(q, q')`` map that spreads a group's
coefficient evenly over its members (``1/m`` each).  The symmetric points of the dual are
``alpha_(i,y,a) = beta_(i,y) / m``, and on them the model is the model with classes
``T^T``-combined:

    Lam' = T^T Lam   (the group's row is the mean of its members' rows),  Q' = T^T Q T,
    Q'_rr = (Q_aa + (m - 1) Q_ab) / m,   Q'_rc = Q_ac  (c outside G),

the pairs ``(i, y, r)`` carrying ``beta``, the same loss and budgets.  Its node weights
``W = Lam'^T G'^T X`` are the full model's ``W(alpha)`` at the spread ``alpha`` (thesis
(4.12)), so a solution of the collapsed model is lifted exactly and then certified on the
full model (:meth:`CollapsedModel.lift_dual`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from .margin import MarginData, MarginModel, margin_data

__all__ = ["CollapsedModel", "collapse_interchangeable", "interchangeable_groups"]


def _close(A: np.ndarray, b: np.ndarray, scale: float, rtol: float) -> bool:
    return bool(np.all(np.abs(A - b) <= rtol * scale))


def interchangeable_groups(data: MarginData, rtol: float = 1e-12) -> list[np.ndarray]:
    """The groups (sorted class indices, at least two each) of interchangeable classes of
    ``data`` (the condition of the module docstring).

    Parameters
    ----------
    data : MarginData
        The class kernel ``Q``, the loss and the examples' relevant classes.
    rtol : float, default 1e-12
        Relative tolerance of the condition's equalities: class kernels and losses are built
        from the same few numbers, so they agree to rounding; the certificate on the full
        model guards the rest.

    Returns
    -------
    list of ndarray
        One array of class indices per group.
    """
    Q, loss = data.Q, data.loss
    q = data.n_classes
    seen = data.Y.any(axis=0)
    unseen = np.flatnonzero(~seen)
    if unseen.size < 2:
        return []
    held = np.flatnonzero(seen)
    scale = max(1.0, float(np.abs(Q).max(initial=0.0)), float(np.abs(loss).max(initial=0.0)))
    # candidates: equal diagonal, equal kernel to and loss from every held class
    signature = np.column_stack([np.diag(Q)[unseen], Q[np.ix_(unseen, held)],
                                 loss[np.ix_(held, unseen)].T])
    signature = np.round(signature / (scale * 1e-9)) if signature.size else signature
    _, group_of, counts = np.unique(signature, axis=0, return_inverse=True, return_counts=True)
    group_of = np.asarray(group_of).reshape(-1)
    groups = []
    for g in np.flatnonzero(counts >= 2):
        members = unseen[group_of == g]
        outside = np.setdiff1d(np.arange(q), members, assume_unique=True)
        rows = Q[np.ix_(members, outside)]
        inner = Q[np.ix_(members, members)]
        diagonal = np.diag(inner).copy()
        np.fill_diagonal(inner, inner[0, 1])  # off-diagonal entries all equal to Q_ab
        if (_close(rows, rows[0], scale, rtol) and _close(diagonal, diagonal[0], scale, rtol)
                and _close(inner, inner[0, 1], scale, rtol)):
            groups.append(members)
    return groups


@dataclass
class CollapsedModel:
    """A margin model with each group of interchangeable classes replaced by one class.

    ``model`` is the collapsed model (same type and options as ``full``); ``class_map[c]``
    the collapsed class of full class ``c``; ``share[c]`` the share of the collapsed
    coefficient class ``c`` gets (``1/m`` in a group of ``m``, else 1)."""

    full: MarginModel
    model: MarginModel
    class_map: np.ndarray
    share: np.ndarray

    @property
    def n_removed(self) -> int:
        return self.full.data.n_classes - self.model.data.n_classes

    def lift_dual(self, alpha) -> np.ndarray:
        """The full model's ``alpha`` spreading each collapsed pair ``(i, y, r)`` evenly over
        the group of ``r``: ``alpha_(i,y,a) = beta_(i,y,r) / m``."""
        full, red = self.full.data, self.model.data
        q_red = red.n_classes
        red_key = (red.pair_i * q_red + red.pair_y) * q_red + red.pair_ybar
        key = ((full.pair_i * q_red + self.class_map[full.pair_y]) * q_red
               + self.class_map[full.pair_ybar])
        at = np.searchsorted(red_key, key)
        return np.asarray(alpha, dtype=float)[at] * self.share[full.pair_ybar]


def collapse_interchangeable(model: MarginModel, rtol: float = 1e-12) -> CollapsedModel | None:
    """The :class:`CollapsedModel` of ``model``, or None when no two classes are
    interchangeable (within the relative tolerance ``rtol``, see
    :func:`interchangeable_groups`).  Needs the model's pairs sorted by example, relevant
    class, irrelevant class (as :func:`~.margin.margin_data` builds them)."""
    data = model.data
    groups = interchangeable_groups(data, rtol)
    if not groups:
        return None
    q = data.n_classes
    drop = np.zeros(q, dtype=bool)
    share = np.ones(q)
    representative = np.arange(q)
    for members in groups:
        drop[members[1:]] = True
        share[members] = 1.0 / members.size
        representative[members] = members[0]
    keep = np.flatnonzero(~drop)
    position = np.full(q, -1, dtype=np.int64)
    position[keep] = np.arange(keep.size)
    class_map = position[representative]
    if data.Lam is not None:  # the group's row: the mean of its members' rows (T^T Lam)
        Lam = np.asarray(data.Lam, dtype=float)[keep].copy()
        for members in groups:
            Lam[position[members[0]]] = np.asarray(data.Lam, dtype=float)[members].mean(axis=0)
        reduced = margin_data(data.Y[:, keep], data.loss[np.ix_(keep, keep)], Lam=Lam,
                              rescaling=data.rescaling, sample_weight=data.Cw)
    else:  # T^T Q T
        Q = data.Q[np.ix_(keep, keep)].copy()
        for members in groups:
            r = position[members[0]]
            inner = data.Q[np.ix_(members, members)]
            Q[r, r] = inner.sum() / members.size ** 2
        reduced = margin_data(data.Y[:, keep], data.loss[np.ix_(keep, keep)], Q=Q,
                              rescaling=data.rescaling, sample_weight=data.Cw)
    small = copy.copy(model)  # same type and options (kernel, bias, ...), fewer classes
    small.data = reduced
    if model.classes is not None:
        small.classes = tuple(np.asarray(model.classes, dtype=object)[keep].tolist())
    if isinstance(getattr(model, "loss", None), np.ndarray) and model.loss.shape == (q, q):
        small.loss = model.loss[np.ix_(keep, keep)]
    return CollapsedModel(full=model, model=small, class_map=class_map, share=share)
