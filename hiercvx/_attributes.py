"""Class attributes Lambda (Cai thesis (3.7)): the rows a class contributes to each node on its
path, defined apart from :mod:`hiercvx.hierarchy` (which re-exports :func:`class_attributes`)
so that module stays small; ``H`` is any :class:`~hiercvx.hierarchy.Hierarchy`."""

from __future__ import annotations

from typing import Callable

import numpy as np

from .exceptions import LabelError

__all__ = ["class_attributes"]

# ---------------------------------------------------------------------- class attributes
_SCHEMES = ("indicator", "tree_depth", "class_depth", "normalized")


def class_attributes(H, classes=None, scheme: str | Callable = "indicator", *,
                     alpha=None, include_root: bool = True) -> np.ndarray:
    """Class-attribute matrix Lambda, ``(n_classes, n_nodes)``: row y holds t_v(y) for v in anc(y).

    Schemes (Cai thesis eq. (3.7): ``Lambda_v(y) = t_v(y)`` if ``v in anc(y)`` else 0):

    - ``"indicator"``: ``t_v(y) = 1`` (thesis (3.7) with t = 1).
    - ``"tree_depth"``: ``t = 1/sqrt(D)`` with D the depth of the hierarchy, thesis 7.2's
      ``D = max_y |anc(y)| - 1`` over all the nodes of ``H`` (not only ``classes``): on a tree,
      its depth; on a DAG, its largest count of proper ancestors, so no row exceeds unit
      norm.  The root gets 0.  Rows have unit norm for the classes with D proper ancestors.
    - ``"class_depth"``: ``t = 1/sqrt(depth(y))`` (thesis 7.2, OHSUMED); root 0; every
      row has unit norm (for trees; for a DAG the number of ancestors is used).
    - ``"normalized"``: ``t_v = sqrt(alpha_v)`` (NHSVM eq. (5)); ``alpha`` over ``H.nodes``
      is required (see ``hiercvx.formulations.nhsvm.path_weights``).
    - a callable ``t(H, v, y) -> float``.

    ``classes`` defaults to ``H.leaves``.  ``include_root=False`` zeroes the root column
    (it is dropped by no scheme: columns always follow ``H.nodes``).
    """
    classes = H.leaves if classes is None else tuple(classes)
    if len(classes) == 0:
        raise LabelError("class_attributes needs at least one class")
    cls_idx = H.indices(classes)
    anc = H.ancestor_matrix[cls_idx].tocoo()
    rows, cols = anc.row, anc.col
    n_anc = np.asarray(H.ancestor_matrix[cls_idx].sum(axis=1)).ravel()  # |anc(y)| inclusive
    if callable(scheme):
        vals = np.array([float(scheme(H, H.nodes[c], classes[r])) for r, c in zip(rows, cols)])
    elif scheme == "indicator":
        vals = np.ones(len(rows))
    elif scheme == "tree_depth":
        # the hierarchy's D, not the deepest class passed: a model's attributes must not
        # depend on which classes its training data happened to contain
        depth = int(np.asarray(H.ancestor_matrix.sum(axis=1)).max()) - 1
        vals = np.full(len(rows), 1.0 / np.sqrt(max(depth, 1)))
    elif scheme == "class_depth":
        d = np.maximum(n_anc - 1, 1)
        vals = 1.0 / np.sqrt(d[rows])
    elif scheme == "normalized":
        if alpha is None:
            raise LabelError("scheme='normalized' needs alpha (one weight per node of H.nodes); "
                             "compute it with hiercvx.formulations.nhsvm.path_weights(H)")
        alpha = np.asarray(alpha, dtype=float)
        if alpha.shape != (len(H),) or not np.all(np.isfinite(alpha)) or np.any(alpha < 0):
            raise LabelError(f"alpha must be a finite non-negative array of length {len(H)} "
                             f"(one per node), got shape {alpha.shape}")
        vals = np.sqrt(alpha[cols])
    else:
        raise LabelError(f"unknown class-attribute scheme {scheme!r}; choose one of {_SCHEMES} "
                         "or pass a callable t(H, node, cls)")
    lam = np.zeros((len(classes), len(H)))
    lam[rows, cols] = vals
    if scheme in ("tree_depth", "class_depth") or not include_root:
        lam[:, 0] = 0.0  # the depth schemes give the root t = 0 (thesis 7.2)
    return lam
