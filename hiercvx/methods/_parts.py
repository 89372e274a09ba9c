"""What an estimator uses of a method besides its :class:`~hiercvx.methods.Method` record.

A registered method gives its model (``prepare``), its reference builders on raw data and its
fast solvers.  An estimator also needs the references declared on a model it has prepared
(``solver="reference"``), and the method's own scoring and prediction rules (the recursive
classifier of Zhou et al. (1), the best leaf and label-set inference of the NHSVM paper (19),
the top-down rule ``d^H`` of Wang et al., the class scores of Cai thesis (3.8)).  They are
collected here, per method, so that :mod:`hiercvx.estimators` reaches the models, the
declarations, the solvers and the inference only through :mod:`hiercvx.methods`.

>>> from hiercvx import methods
>>> hsvm = methods.parts("hsvm")
>>> sorted(hsvm.from_model)
['dual', 'primal']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .. import inference
from ..exceptions import InputError
from ..formulations import hpsi, hsvm, nhsvm, orthogonal
from ..models import margin
from ..models import orthogonal as orthogonal_model
from ..models import sibling as sibling_model
from ..models.hsvm import resolve_attributes
from ..models.nhsvm import scaled_alpha
from ..solvers import perceptron
from ..solvers.dc import check_dc_options

__all__ = ["Parts", "PARTS", "parts"]


@dataclass(frozen=True)
class Parts:
    """The pieces of one method an estimator needs besides its registry entry.

    ``from_model``: role -> reference builder ``(model, *params, **options) ->
    ReferenceProblem`` on a model the method's ``prepare`` built; ``functions``: name -> the
    method's scoring, prediction and option-checking functions (and the option values they
    take), also read as attributes (``parts.best_leaf``).
    """

    name: str
    from_model: Mapping[str, Callable] = field(default_factory=dict)
    functions: Mapping[str, Any] = field(default_factory=dict)

    def __getattr__(self, key):
        if key.startswith("__"):
            raise AttributeError(key)
        try:
            return self.__dict__["functions"][key]
        except KeyError:
            raise AttributeError(f"method {self.name!r} has no part {key!r}; it has "
                                 f"{sorted(self.__dict__['functions'])}") from None


_MARGIN = {"class_scores": margin.class_scores, "coefficients": margin.coefficients,
           "class_attributes": resolve_attributes}
_ORTHOGONAL = Parts("orthogonal", {"primal": orthogonal.primal_from_model},
                    {"methods": orthogonal_model.METHODS,
                     "predict_top_down": orthogonal_model.predict_top_down,
                     "top_down_errors": orthogonal_model.top_down_errors})

#: method name -> its parts (the five problems of Zhou et al. share one estimator and one set)
PARTS: dict[str, Parts] = {
    "hsvm": Parts("hsvm", {"primal": hsvm.primal_from_model, "dual": hsvm.dual_from_model},
                  {**_MARGIN,
                   # role -> (estimated size of its declaration, the name its refusal gives)
                   "reference_sizes": {"primal": (hsvm.primal_size, hsvm.PRIMAL_NAME),
                                       "dual": (hsvm.dual_size, hsvm.DUAL_NAME)}}),
    "multiclass": Parts("multiclass", {}, _MARGIN),
    # the hierarchical perceptrons (Cai thesis Algorithms 3-7) train on the hsvm model
    "perceptron": Parts("perceptron", {}, {"train": perceptron.perceptron,
                                           "variants": perceptron.VARIANTS,
                                           "updates": perceptron.UPDATES,
                                           "Options": perceptron.Options,
                                           "check_gram_block": perceptron.check_gram_block,
                                           **_MARGIN}),
    "nhsvm": Parts("nhsvm", {"primal": nhsvm.primal_from_model,
                             "cutting_plane": nhsvm.cutting_plane_from_model},
                   {"path_weights": nhsvm.path_weights,
                    "check_path_weights": nhsvm.check_path_weights,
                    "dag_T": nhsvm.DAG_T, "node_scores": nhsvm.node_scores,
                    "best_leaf": inference.best_leaf,
                    "label_set_oracle": inference.LabelSetOracle,
                    "inference_methods": inference.METHODS}),
    "shared_norm": Parts("shared_norm", {"primal": nhsvm.shared_primal_from_model},
                         {"scaled_alpha": scaled_alpha, "best_leaf": inference.best_leaf,
                          "label_set_oracle": inference.LabelSetOracle}),
    **{name: _ORTHOGONAL for name in orthogonal_model.METHODS},
    "sibling_svm": Parts("sibling_svm", {"primal": hpsi.primal_from_model},
                         {"sibling_pairs": sibling_model.sibling_pairs,
                          "node_pair_table": sibling_model.node_pair_table,
                          "predict_top_down": sibling_model.predict_top_down,
                          "reference_sizes": {"primal": (hpsi.primal_size, hpsi.PRIMAL_NAME)}}),
    "hpsi": Parts("hpsi", {"dc": hpsi.dc_from_model}, {"check_dc_options": check_dc_options}),
}


def parts(name: str) -> Parts:
    """The :class:`Parts` of method ``name`` (a registered method, or ``"perceptron"``)."""
    try:
        return PARTS[name]
    except KeyError:
        raise InputError(f"no estimator parts for {name!r}; known: {', '.join(PARTS)}") from None
