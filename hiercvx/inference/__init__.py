"""Argmax over the label sets of a hierarchy: the tree DP, the integer program (19) and its LP
relaxation over DAGs, brute-force enumeration, and the bounds that answer most samples first.

The multi-label space of Choi, Sasaki and Srebro, "Normalized Hierarchical SVM",
arXiv:1508.02479, 2016 (section 3) is ``Y_m = {anc(L) : L a non-empty set of leaves}``: label
sets that are ancestor-closed (the root is always in), extendable downwards (every chosen
internal node has a chosen child) and non-empty.  Given node scores ``s`` (``s_n = sqrt(alpha_n)
W_n . x`` for NHSVM, ``W_n . x`` for the hierarchical SVM of Cai's thesis, chapter 4),
prediction and loss-augmented inference ask for ``argmax_{y in Y_m} sum_{n in y} s_n``, the
paper's (18) once a decomposable loss is folded into the scores.  With ``z`` the indicator of
``y`` this is the paper's integer program (19), written as a maximization::

    max  s . z   over z in {0, 1}^M
    s.t. z_c <= z_p                    for every edge p -> c        (closure)
         sum_{c in C(n)} z_c >= z_n    for every internal node n    (a chosen node has a chosen child)
         sum_{l in leaves} z_l >= 1                                  (non-empty)
         z_root = 1

Modules, by responsibility:

:mod:`.labelsets`   ``Y_m`` itself: membership, enumeration, set scores, the single-label rule;
:mod:`.losses`      node-decomposable losses folded into the scores ((18) -> (19));
:mod:`.tree_dp`     the O(M) dynamic program on trees (method ``"dp"``);
:mod:`.bounds`      lower and per-node upper bounds on (19) that certify most samples;
:mod:`.programs`    (19) and its LP relaxation in HiGHS or Gurobi (methods ``"ilp"``, ``"lp"``);
:mod:`.components` (19) split at a root whose children have disjoint descendants, solved per part;
:mod:`.oracle`      :class:`LabelSetOracle` and :func:`best_label_set`, dispatching on the method;
:mod:`.certified`   (19) declared in CVXPY and certified (:func:`reference`), for the tests;
:mod:`.options`     :class:`Options`, the settings of all of them.

Ties are broken deterministically: the DP adds an optional child only when its subtree gains
strictly (> 0) and, when it must add one, takes the first best child in ``H.nodes`` order;
enumeration returns the first best leaf subset in bit order; the solvers are deterministic for
a given input.  Different methods may return different optimal sets on exact ties; their
objective values agree.
"""

from __future__ import annotations

from .bounds import DagBounds
from .certified import reference
from .labelsets import (auto_method, best_leaf, enumerate_label_sets, is_valid_label_set,
                        label_set_scores)
from .losses import DecomposableLoss, as_loss, loss_augmented_scores
from .options import METHODS, SOLVERS, Options
from .oracle import InferenceInfo, LabelSetOracle, best_label_set
from .programs import BACKENDS, new_highs
from .tree_dp import TreeDP

__all__ = [
    "METHODS",
    "SOLVERS",
    "Options",
    "best_label_set",
    "best_leaf",
    "LabelSetOracle",
    "InferenceInfo",
    "DecomposableLoss",
    "as_loss",
    "loss_augmented_scores",
    "is_valid_label_set",
    "enumerate_label_sets",
    "auto_method",
    "label_set_scores",
    "reference",
    "new_highs",
]
