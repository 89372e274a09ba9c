"""Node-decomposable losses folded into node scores: loss-augmented inference as plain
inference.

A loss that decomposes over nodes (Choi, Sasaki and Srebro, "Normalized Hierarchical SVM",
arXiv:1508.02479, 2016, section 7.1) turns the loss-augmented argmax (18) into the argmax of
program (19) on shifted scores ``s + a(t)`` (:class:`DecomposableLoss`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..exceptions import InputError, LabelError
from ..hierarchy import Hierarchy
from ._checks import check_hierarchy, check_scores, check_true_sets


@dataclass(frozen=True)
class DecomposableLoss:
    """A loss that decomposes over nodes (NHSVM section 7.1)::

        Delta(y, t) = sum_n  fp_n * 1{n in y, n not in t}  +  fn_n * 1{n not in y, n in t}

    for a predicted set ``y`` and a true set ``t``.  Because ``1{n not in y} = 1 - 1{n in y}``,

        Delta(y, t) = sum_{n in y} a_n(t) + c(t),   a_n(t) = fp_n [n not in t] - fn_n [n in t],
                                                     c(t)   = sum_{n in t} fn_n,

    so loss-augmented inference ``argmax_y s(y) + Delta(y, t)`` is plain inference on the
    scores ``s + a(t)`` (:meth:`node_terms`).  ``false_positive`` / ``false_negative`` are
    finite non-negative arrays over ``H.nodes``.
    """

    false_positive: np.ndarray
    false_negative: np.ndarray

    def __post_init__(self):
        for name in ("false_positive", "false_negative"):
            w = np.asarray(getattr(self, name), dtype=float)
            if w.ndim != 1 or not np.all(np.isfinite(w)) or np.any(w < 0):
                raise InputError(f"{name} costs must be a finite non-negative 1-D array over the "
                                 f"nodes, got {w!r}")
            w = w.copy()
            w.flags.writeable = False
            object.__setattr__(self, name, w)
        if self.false_positive.shape != self.false_negative.shape:
            raise InputError(f"false_positive has {self.false_positive.shape[0]} entries but "
                             f"false_negative has {self.false_negative.shape[0]}; give one per node")

    @classmethod
    def hamming(cls, H: Hierarchy, on: str = "nodes", weight=1.0) -> "DecomposableLoss":
        """Symmetric-difference losses of the paper.

        ``on="nodes"``: ``Delta^H(y, t) = |y xor t|`` over all nodes (the Hamming loss of eq. (2)).
        ``on="leaves"``: ``Delta_L(y, t) = |(y xor t) cap leaves|``, the decomposing surrogate of
        section 7.1 (its per-node terms are the ``+-1`` leaf terms of ``r_n`` below (19)).
        ``weight``: a scalar or one weight per node (multiplies both error kinds).
        """
        H = check_hierarchy(H)
        if on == "nodes":
            mask = np.ones(len(H))
        elif on == "leaves":
            mask = H.leaf_mask.astype(float)
        else:
            raise InputError(f"on must be 'nodes' or 'leaves', got {on!r}")
        w = np.asarray(weight, dtype=float)
        if w.shape not in ((), (len(H),)):
            raise InputError(f"weight must be a scalar or one weight per node ({len(H)}, in "
                             f"H.nodes order), got shape {w.shape}")
        w = np.broadcast_to(w, (len(H),)) * mask
        return cls(w, w)

    def node_terms(self, true_indicator) -> tuple[np.ndarray, np.ndarray]:
        """``(a, c)``: added node scores ``a`` (same shape as ``true_indicator``) and the
        constant ``c`` (a float for a 1-D input, else ``(n_samples,)``), with
        ``Delta(y, t) = sum_{n in y} a_n + c`` for every ``y``."""
        t = np.asarray(true_indicator, dtype=bool)
        added = np.where(t, -self.false_negative, self.false_positive)
        constant = np.where(t, self.false_negative, 0.0).sum(axis=-1)
        return added, constant

    def __call__(self, predicted, true) -> np.ndarray:
        """``Delta(y, t)`` per row, computed directly from the two indicators."""
        y = np.asarray(predicted, dtype=bool)
        t = np.asarray(true, dtype=bool)
        return ((y & ~t) * self.false_positive + (~y & t) * self.false_negative).sum(axis=-1)


def as_loss(loss, H: Hierarchy) -> DecomposableLoss:
    """``loss`` (a name, a :class:`DecomposableLoss` or per-node costs) as a DecomposableLoss on ``H``."""
    if isinstance(loss, DecomposableLoss):
        out = loss
    elif isinstance(loss, str):
        if loss == "hamming":
            out = DecomposableLoss.hamming(H, on="nodes")
        elif loss == "leaf_hamming":
            out = DecomposableLoss.hamming(H, on="leaves")
        else:
            raise InputError(f"unknown loss {loss!r}; use 'hamming', 'leaf_hamming', a "
                             "DecomposableLoss, or an array of per-node costs")
    else:
        w = np.asarray(loss, dtype=float)
        out = DecomposableLoss(w, w)
    if out.false_positive.shape != (len(H),):
        raise InputError(f"the loss has {out.false_positive.shape[0]} node costs but the hierarchy "
                         f"has {len(H)} nodes; give one cost per node of H.nodes")
    return out


def loss_augmented_scores(scores, H: Hierarchy, true_indicator, loss="leaf_hamming"):
    """Fold a node-decomposable loss into the node scores (NHSVM eq. (18) -> (19)).

    Returns ``(augmented, constant)`` with ``augmented = scores + a(t)`` and
    ``sum_{n in y} augmented_n + constant = sum_{n in y} scores_n + Delta(y, t)`` for every
    label set ``y``; see :class:`DecomposableLoss`.  ``loss``: a :class:`DecomposableLoss`,
    ``"hamming"`` (all nodes), ``"leaf_hamming"`` (leaves, the paper's Delta_L), or an array
    of per-node costs (symmetric Hamming with those weights).  ``true_indicator``: bool over
    ``H.nodes``, 1-D (shared by all samples) or ``(n_samples, n_nodes)`` (a single row for 1-D
    ``scores``).
    """
    H = check_hierarchy(H)
    arr, single = check_scores(scores, H)
    t = check_true_sets(true_indicator, H, "true_indicator")
    if single and t.ndim == 2 and t.shape[0] == 1:  # one sample's true set, as H.closure gives it
        t = t[0]
    if t.ndim == 2 and (single or t.shape[0] != arr.shape[0]):
        raise LabelError(f"true_indicator has {t.shape[0]} rows but scores has "
                         f"{1 if single else arr.shape[0]} sample(s); give one true set per sample "
                         "(or a single 1-D set shared by all samples)")
    added, constant = as_loss(loss, H).node_terms(t)
    augmented = arr + added
    constant = np.broadcast_to(constant, (arr.shape[0],)).astype(float)
    if single:
        return augmented[0], float(constant[0])
    return augmented, constant
