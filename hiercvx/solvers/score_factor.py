"""The score factor of the margin-family passes: class rows or node rows.

The dual coordinate passes (:mod:`.working_set`, Cai thesis Algorithm 2) read an example's
class scores and, after a visit, move them by the visit's change of the expansion coefficients
``dG_i`` (thesis (4.12)).  They keep the scores in a factor ``F`` with class scores
``s = P (F x_i)`` (``F[:, i]`` for a Gram matrix) and the update ``F += (B^T dG_i) x_i^T``
(``K[i]``), in one of two forms:

* ``"classes"``: ``F = Q G^T X`` (class weights ``Lam W``), ``P = I``, ``B = Q``: a visit reads
  the scores of its pairs' classes and writes every class row that shares a node below the
  pairs' common ancestors;
* ``"nodes"``: ``F = W = Lam^T G^T X`` (node weights), ``P = B = Lam``: a visit reads the nodes
  of its pairs' classes and writes the nodes on the paths that differ.

On a deep, narrow tree a visit touches few node rows and many class rows; on a flat hierarchy
the class form is the smaller.  :func:`choose_factor` counts the row operations of both.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..models import margin as _margin

__all__ = ["ScoreFactor", "choose_factor", "nonzero_pattern"]


class ScoreFactor:
    """The form of ``F`` (module docstring) and the two sparse maps the passes use it through.

    ``read`` is ``P`` and ``move`` is ``B``, both CSR triples ``(ptr, idx, val)`` over the
    classes; ``n_rows`` is the number of rows of ``F``."""

    def __init__(self, form: str, data: _margin.MarginData):
        if form not in ("classes", "nodes"):
            raise ValueError(f"form must be 'classes' or 'nodes', got {form!r}")
        self.form = form
        q = data.n_classes
        if form == "nodes":
            Lam = nonzero_pattern(data.Lam)  # dense or already sparse
            self.read = self.move = _csr_triple(Lam)
            self.n_rows = Lam.shape[1]
        else:
            self.read = _csr_triple(sp.identity(q, format="csr"))
            self.move = _csr_triple(nonzero_pattern(np.asarray(data.Q, dtype=float)))
            self.n_rows = q


def _csr_triple(A):
    A = sp.csr_matrix(A)
    return (np.ascontiguousarray(A.indptr, dtype=np.int64),
            np.ascontiguousarray(A.indices, dtype=np.int64),
            np.ascontiguousarray(A.data, dtype=float))


def choose_factor(data: _margin.MarginData, gram: bool = False, *, share: float = 0.8,
                  sample: int = 20000) -> str:
    """``"nodes"`` or ``"classes"`` (:class:`ScoreFactor`): the form whose visits of one pair
    ``(y, ybar)`` take fewer row operations, averaged over ``sample`` evenly spaced pairs.

    Classes: 2 dot products and ``nnz(Q_y - Q_ybar)`` row updates; nodes:
    ``|nodes(y) u nodes(ybar)|`` dot products and ``|nodes(y) symdiff nodes(ybar)|`` updates.
    With a Gram matrix a dot product is a read (``F[j, i]``) and only the updates count.  The
    node form is taken when its count is below ``share`` of the class form's (it reads the
    scores through ``Lam``: a few more index lookups per row)."""
    if data.Lam is None or data.n_pairs == 0:
        return "classes"
    take = np.unique(np.linspace(0, data.n_pairs - 1, min(data.n_pairs, sample))
                     .astype(np.int64))
    y, yb = data.pair_y[take], data.pair_ybar[take]
    Q = np.asarray(data.Q, dtype=float)
    class_updates = np.count_nonzero(Q[y] != Q[yb], axis=1)
    Lam = nonzero_pattern(data.Lam)  # dense or already sparse
    Ly, Lb = Lam[y], Lam[yb]
    node_updates = np.diff(nonzero_pattern(Ly - Lb).indptr)
    node_reads = np.diff(nonzero_pattern(abs(Ly) + abs(Lb)).indptr)
    dot = 0.0 if gram else 1.0
    classes = float(np.mean(2 * dot + class_updates))
    nodes = float(np.mean(node_reads * dot + node_updates))
    return "nodes" if nodes < share * classes else "classes"


def nonzero_pattern(A):
    """``A`` as CSR without stored zeros, its indices sorted."""
    A = sp.csr_matrix(A)
    A.eliminate_zeros()
    A.sort_indices()
    return A
