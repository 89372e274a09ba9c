"""Fast algorithms, one module per algorithm; each returns a :class:`SolverResult`.

- :mod:`.working_set` — Cai–Hofmann hierarchical SVM, variable selection (thesis Alg. 2)
- :mod:`.crammer_singer` — flat Crammer–Singer, sequential dual with shrinking
- :mod:`.rda` — regularized dual averaging with optimality bounds (Zhou et al., Alg. 1)
- :mod:`.perceptron` — hierarchical perceptrons and Hieron (thesis Alg. 3–7)
- :mod:`.shared_norm` — closed-form alpha step and alternating shared-norm SVM (NHSVM)
"""

from ._result import SolverResult

__all__ = ["SolverResult"]
