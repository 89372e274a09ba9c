"""Option probes: for every model option of a registered method, a generated problem on which that
option is the only one away from its default (with the one it needs, such as ``fit_intercept``
for ``intercept_scaling``).

A solver that ignores an option solves a different problem; the probe is where that shows.  The
values are chosen so that ignoring them moves the optimum: unequal class weights (``"balanced"``
is all ones on the balanced generated data), per-sample weights spread over [0.2, 2], a bias
scaling of 2, the other rescaling, a loss and class attributes other than the defaults, and an
RBF kernel of width 1.

Parameters get a probe too (:data:`PARAMETER_PROBE_FACTOR`): a method's cases may all share one
``C`` (or ``lam``), and a solver that solves at that value whatever it is given would pass them.
"""

from __future__ import annotations

import numpy as np

from ..methods import Method

__all__ = ["OPTION_PROBES", "PARAMETER_PROBE_FACTOR", "option_probes"]


def _sample_weight(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed + 101).uniform(0.2, 2.0, n)


def _class_weight(Y) -> dict:
    classes = sorted({int(v) for v in np.asarray(Y)})
    return {c: float(w) for c, w in zip(classes, np.linspace(0.4, 2.0, len(classes)))}


_INTERCEPT = (("fit_intercept", "tree", {"fit_intercept": True}),
              ("intercept_scaling", "tree", {"fit_intercept": True, "intercept_scaling": 2.0}))
_FLAT_INTERCEPT = tuple((name, "flat", options) for name, _, options in _INTERCEPT)

#: per method: ``(option, structure, model options)``; a callable value is computed from the
#: generated ``(n, Y, seed)`` (per-sample and per-class weights)
OPTION_PROBES = {
    "multiclass": (("sample_weight", "flat", {"sample_weight": _sample_weight}),
                   ("class_weight", "flat", {"class_weight": _class_weight}),
                   *_FLAT_INTERCEPT),
    "hsvm": (("sample_weight", "tree", {"sample_weight": _sample_weight}),
             ("loss", "tree", {"loss": "zero_one"}),
             ("attributes", "tree", {"attributes": "indicator"}),
             ("rescaling", "tree", {"rescaling": "margin"}),
             *_INTERCEPT),
    "orthogonal": (("alpha", "tree", {"alpha": 0.5}), *_INTERCEPT),
    "flatmult": _INTERCEPT,
    "hiermult": _INTERCEPT,
    "transfer": _INTERCEPT,
    "treeloss": (("classes", "tree", {"classes": "leaves"}), *_INTERCEPT),
    "nhsvm": (("variant", "tree", {"variant": "13"}),
              ("loss", "multilabel", {"loss": "hamming"}),
              *_INTERCEPT),
    "shared_norm": (("loss", "tree", {"loss": "half_symmetric"}), *_INTERCEPT),
    "sibling_svm": (("kernel", "tree", {"kernel": "rbf", "sigma": 1.0}),),
    "hpsi": (("kernel", "tree", {"kernel": "rbf", "sigma": 1.0}),),
}


#: the parameter probe: the first case's problem with one parameter (``C``, ``lam``) times this
#: factor, a value no built-in case uses, so that a solver ignoring the parameter moves away from
#: the optimum
PARAMETER_PROBE_FACTOR = 0.3


def resolve(options: dict, n: int, Y, seed: int) -> dict:
    """The probe's options with the data-dependent values computed."""
    out = {}
    for key, value in options.items():
        if callable(value):
            value = value(n, seed) if key == "sample_weight" else value(Y)
        out[key] = value
    return out


def option_probes(method: Method, structures=None) -> list:
    """``[(option, structure, options)]`` of ``method`` whose structure the method supports (and
    is among ``structures`` when given)."""
    wanted = tuple(method.structures) if structures is None else tuple(structures)
    return [(name, structure, options) for name, structure, options in OPTION_PROBES.get(method.name, ())
            if structure in method.structures and structure in wanted]
