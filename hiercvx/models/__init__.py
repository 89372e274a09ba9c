"""The model layer: one module per paper, under both the CVXPY declarations and the fast solvers.

``models.<paper>.prepare(X, Y, H, ...)`` validates the inputs *once* and returns a model that
holds the numpy pieces both sides use.  Every model answers the same questions
(:class:`Model`):

- ``objective(weights, **params)``: the paper's primal objective at given weights;
- ``lower_bound(dual, **params)``: a certified lower bound (weak duality) at a dual point;
- ``scores(weights, X)``: class (or node) scores of new points;
- ``oracle(scores, ...)``: the loss-augmented most violating labels, through
  :mod:`hiercvx.inference` where the label space is structured;
- ``variables``: the meaning and shape of every primal and dual variable.

``formulations/<paper>.py`` declares the CVXPY primal / dual from a model; the solvers in
``solvers/`` run on a model.  Neither re-validates what the model holds.

Modules: :mod:`.margin` (the pairwise-ranking model of Crammer–Singer and Cai–Hofmann),
:mod:`.multiclass`, :mod:`.hsvm`, :mod:`.orthogonal`, :mod:`.nhsvm`, :mod:`.sibling`.
"""

from ._base import Model, Variable

__all__ = ["Model", "Variable"]
