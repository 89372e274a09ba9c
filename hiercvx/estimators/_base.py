"""Pieces every hiercvx estimator shares: the input checks that open
``fit``, target handling and the multi-label decision rule."""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager

import numpy as np
import scipy.sparse as sp
from sklearn.utils._available_if import available_if
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from .. import targets
from .._validation import (check_features, check_hierarchy_argument, check_not_complex,
                           check_positive, check_target)
from ..bias import bias_scaling
from ..exceptions import InputError, InputTypeError, ProblemTooLargeError
from ..kernels import Kernel, check_psd
from ..metrics import NODE_MARGINS, fit_node_calibration, node_margins
from ..result import check_iteration_options
from ._labels import accuracy, predicted_labels, read_test_labels
# target handling lives in the core (hiercvx.targets); re-exported for the estimators
from ..targets import (class_array, flat_hierarchy, is_multilabel_target,  # noqa: F401
                       ravel_column_target, resolve_targets, sort_key)

SOLVERS = ("fast", "reference")

#: The largest regularization constant an estimator takes: ``C`` times the losses, and its
#: square in the dual quadratic terms, stay far inside float64 (a hard margin is reached long
#: before; above this the solvers would meet overflow, not a harder problem).
MAX_PENALTY = 1e100


def check_solver_options(penalty, penalty_name: str, tol, solver, max_iter=None,
                         who: str = "the estimator") -> None:
    """Refuse a non-positive regularization constant (``C`` or ``lam``, named ``penalty_name``
    in the message) or tolerance ``tol``, a ``max_iter`` that is not a positive integer
    (:func:`hiercvx.result.check_iteration_options`; ``None`` allowed) and a ``solver`` not in
    :data:`SOLVERS`.  Called at ``fit`` whichever solver runs, so no option is ignored."""
    if check_positive(penalty, penalty_name) > MAX_PENALTY:
        raise InputError(f"{penalty_name}={penalty!r} is over {MAX_PENALTY:g}: C times the losses "
                         "(and its square in the duals) would overflow float64 in the solvers; "
                         f"a hard-margin fit is reached long before (use {penalty_name} <= "
                         f"{MAX_PENALTY:g})")
    check_positive(tol, "tol")
    check_iteration_options(tol, max_iter, who=who)
    if solver not in SOLVERS:
        raise InputError(f"solver must be one of {SOLVERS}, got {solver!r}")


def validate_X(estimator, X, **options):
    """scikit-learn's ``validate_data(estimator, X, **options)`` with hiercvx's errors: the one
    boundary for ``X`` in every estimator's ``fit``, ``predict`` and ``decision_function``.
    Complex ``X`` is refused naming the fix (scikit-learn's refusal names neither);
    scikit-learn's ``ValueError`` (NaN or inf, wrong number of features, not 2-D, empty,
    strings) becomes :class:`InputError` (non-finite entries in the package's own words, with
    the first one's place) and its ``TypeError`` (sparse where dense is needed,
    an object that is no array) :class:`InputTypeError`, with the same message."""
    check_not_complex(X, "X")
    try:
        return validate_data(estimator, X, **options)
    except InputError:
        raise
    except TypeError as exc:
        raise InputTypeError(f"X: {exc}") from exc
    except ValueError as exc:
        if "NaN" in str(exc) or "infinity" in str(exc):
            check_features(X)  # the package's words: where the first one is, and the fix
        raise InputError(f"X: {exc}") from exc


def check_no_overflow(X, intercept_scaling=None) -> None:
    """Refuse features so large that squared norms and inner products ``<x, x'>`` (every linear
    model's scores, every kernel, every Gram matrix) overflow float64: found here rather than as
    an ``inf`` deep in a solver.  ``intercept_scaling``: the scaling of the bias feature appended
    to ``X`` (or ``intercept_scaling**2`` added to the kernel), which counts too; None without
    a bias."""
    data = X.data if hasattr(X, "toarray") else X
    largest = float(np.max(np.abs(data))) if data.size else 0.0
    with np.errstate(over="ignore"):
        overflow = not np.isfinite(largest * largest * X.shape[1])
    if overflow:
        raise InputError(f"X has entries up to {largest:.3g} in absolute value: squared norms of its "
                         "rows overflow float64. Rescale X (e.g. sklearn.preprocessing."
                         "StandardScaler or MaxAbsScaler in a pipeline)")
    s = 0.0 if intercept_scaling is None else abs(float(intercept_scaling))
    with np.errstate(over="ignore"):
        overflow = np.isfinite(s) and not np.isfinite(largest * largest * X.shape[1] + s * s)
    if overflow:
        raise InputError(f"intercept_scaling={intercept_scaling!r}: the bias feature's square (its "
                         "part of every squared norm, inner product and kernel value) overflows "
                         "float64. Use a smaller intercept_scaling (1.0 by default; a value "
                         "around the scale of X's entries leaves the bias lightly regularized)")


def _training_bias_scaling(estimator) -> float | None:
    """The scaling of the bias feature ``fit`` appends (None: no bias): the estimator's own
    ``_bias_scaling()``, else :func:`hiercvx.bias.bias_scaling` of its ``fit_intercept`` and
    ``intercept_scaling`` parameters, when it has them."""
    own = getattr(estimator, "_bias_scaling", None)
    if own is not None:
        return own()
    params = getattr(estimator, "get_params", dict)()
    if "fit_intercept" in params and "intercept_scaling" in params:
        return bias_scaling(params["fit_intercept"], params["intercept_scaling"])
    return None


def validate_training_X(estimator, X, *, precomputed: bool = False, check_kernel: bool = True):
    """``X`` for ``fit`` through scikit-learn's ``validate_data`` (float64, at least two rows,
    CSR kept unless ``X`` is a precomputed kernel).  A precomputed kernel must be square,
    symmetric and PSD (:func:`hiercvx.kernels.check_psd`); ``check_kernel=False`` leaves that
    to a solver that checks it itself.  Complex ``X`` is refused (InputError), and so are
    entries or an ``intercept_scaling`` that overflow (:func:`check_no_overflow`, with the
    scaling of the estimator's bias feature, its ``fit_intercept`` and ``intercept_scaling``
    checked)."""
    X = validate_X(estimator, X, accept_sparse=False if precomputed else "csr", dtype=np.float64,
                   ensure_min_samples=2)
    check_no_overflow(X, _training_bias_scaling(estimator))
    if precomputed and check_kernel:
        check_psd(X, what="precomputed kernel matrix")
    return X


def resolve_training_targets(y, hierarchy, n_samples: int):
    """:func:`hiercvx.targets.resolve_training_targets` behind the estimators' boundary checks:
    the ``hierarchy`` parameter is a :class:`~hiercvx.hierarchy.Hierarchy` or ``None``
    (:func:`~hiercvx._validation.check_hierarchy_argument`) and ``y`` is a usable target
    (:func:`~hiercvx._validation.check_target`), each refused with what to pass instead."""
    check_hierarchy_argument(hierarchy)
    check_target(y)
    return targets.resolve_training_targets(y, hierarchy, n_samples)


def check_training_weights(sample_weight, X, C=None):
    """``sample_weight`` as a float array over the rows of ``X`` (None stays None): non-negative,
    and positive somewhere, else nothing is left to train on; with ``C``, the largest weight
    times ``C`` at most :data:`MAX_PENALTY` (each sample's loss is weighted by ``C w_i``)."""
    if sample_weight is None:
        return None
    try:
        sample_weight = _check_sample_weight(sample_weight, X, ensure_non_negative=True)
    except ValueError as exc:  # scikit-learn's words, the package's error
        raise InputError(f"sample_weight: {exc}; give one finite non-negative weight per row of X "
                         f"({X.shape[0]})") from None
    if not np.any(sample_weight > 0):
        raise InputError("sample_weight is zero everywhere: at least one sample needs a "
                         "positive weight")
    if C is not None and float(C) * float(sample_weight.max()) > MAX_PENALTY:
        raise InputError(f"C times the largest sample_weight is {float(C) * sample_weight.max():.3g}, "
                         f"over {MAX_PENALTY:g}: each sample's loss is weighted by C * w_i, which "
                         "would overflow float64 in the solvers; a hard-margin fit is reached long "
                         f"before: lower C or the weights so that C * max(sample_weight) <= "
                         f"{MAX_PENALTY:g}")
    return sample_weight


def fit_label_set_threshold(scores: np.ndarray, Y: np.ndarray) -> float:
    """The multi-label decision rule: predict every class whose score is within ``t`` of the
    top score (the top class is always predicted).  ``t >= 0`` is chosen on the training
    data to maximize the mean example-based F1 (a simple stand-in for the size prediction
    of Cai thesis section 4.2); ties go to the smaller ``t``."""
    gaps = scores.max(axis=1, keepdims=True) - scores  # >= 0, 0 at the top class
    candidates = np.unique(np.concatenate([[0.0], np.quantile(gaps[~Y], np.linspace(0, 0.5, 21))
                                           if (~Y).any() else []]))
    best_t, best_f1 = 0.0, -1.0
    for t in candidates:
        pred = gaps <= t
        tp = (pred & Y).sum(axis=1)
        f1 = np.mean(2 * tp / (pred.sum(axis=1) + Y.sum(axis=1)))
        if f1 > best_f1 + 1e-12:
            best_t, best_f1 = float(t), f1
    return best_t


def predict_from_scores(scores: np.ndarray, classes: np.ndarray, multilabel: bool,
                        threshold: float = 0.0):
    """Top class per sample, or the label sets of :func:`fit_label_set_threshold`'s rule."""
    if not multilabel:
        return classes[np.argmax(scores, axis=1)]
    gaps = scores.max(axis=1, keepdims=True) - scores
    pred = gaps <= threshold
    return [frozenset(classes[row].tolist()) for row in pred]


def check_common_params(estimator) -> None:
    """The parameters many estimators share, checked where ``fit`` starts (each only where the
    estimator has it): ``random_state`` (None, a non-negative int or a numpy generator; the
    fast route's seed in ``solver_options``), ``intercept_scaling`` (a positive finite number),
    ``dc_max_iter`` (a positive int) and ``shuffle`` (a bool)."""
    name = type(estimator).__name__
    state = getattr(estimator, "random_state", None)
    if state is None and isinstance(getattr(estimator, "solver_options", None), dict):
        state = estimator.solver_options.get("random_state")  # the fast route's seed
    if state is not None and not isinstance(state, (np.random.RandomState, np.random.Generator)) and (
            isinstance(state, (bool, np.bool_)) or not isinstance(state, (int, np.integer))
            or not 0 <= int(state) < 2**32):
        raise InputError(f"{name}: random_state must be None, an integer in [0, 2**32) or a numpy "
                         f"random generator, got {state!r}")
    if hasattr(estimator, "intercept_scaling"):
        check_positive(estimator.intercept_scaling, "intercept_scaling")
    for key in ("dc_max_iter",):
        value = getattr(estimator, key, 1)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InputError(f"{name}: {key} must be a positive integer, got {value!r}")
    shuffle = getattr(estimator, "shuffle", True)
    if not isinstance(shuffle, (bool, np.bool_)):
        raise InputError(f"{name}: shuffle must be True or False, got {shuffle!r}")


def kernel_parts(kernel):
    """``(kernel, sigma)`` of an estimator's ``kernel`` parameter: a
    :class:`~hiercvx.kernels.Kernel` gives its name (its function for ``"callable"``) and its
    width; a name or a callable is returned as it is, with ``sigma=None``."""
    if isinstance(kernel, Kernel):
        return (kernel.function if kernel.name == "callable" else kernel.name), kernel.sigma
    return kernel, None


def is_precomputed(kernel) -> bool:
    """Whether an estimator's ``kernel`` parameter says that ``X`` is a precomputed Gram matrix."""
    name = kernel_parts(kernel)[0]
    return isinstance(name, str) and name == "precomputed"


#: ``solver_options`` keys every estimator reads itself, per route (the rest go to the solver)
ROUTE_KEYS = {"fast": ("method", "random_state", "warm_start", "keep_dual"),
              "reference": ("solver", "max_size", "keep_dual")}


def _is_options(value) -> bool:
    return (dataclasses.is_dataclass(value) and not isinstance(value, type)
            and type(value).__name__ == "Options")


@dataclasses.dataclass(frozen=True)
class Route:
    """The settings of the solver route an estimator's ``solver`` selects, read from its
    ``solver_options`` (:func:`solver_route`).

    Attributes
    ----------
    method : str or None
        Fast route: the algorithm (None: the estimator's default).
    random_state : int, numpy generator or None
        Fast route: the seed of the visiting order (None: the solver's default).
    warm_start : bool
        Fast route: start from the previous fit's dual variables.
    keep_dual : bool
        Pickle the solver's state (``result_`` with its dual variables) with the model.
    solver : str or None
        Reference route: the conic solver, as in CVXPY's ``problem.solve(solver=...)``.
    max_size : int or None
        Reference route: the limit on the declaration's estimated nonzeros, the builders'
        ``max_size`` (None: their default).
    settings : dict
        The other keys: fields of the fast solver's ``Options`` (fast route) or keywords of
        :meth:`hiercvx.ReferenceProblem.solve` (reference route).
    options : Options or None
        The fast solver's ``Options`` given as such.
    """

    method: str | None = None
    random_state: object = None
    warm_start: bool = False
    keep_dual: bool = False
    solver: str | None = None
    max_size: int | None = None
    settings: dict = dataclasses.field(default_factory=dict)
    options: object = None

    def fast_options(self, options_type):
        """The fast solver's ``Options`` (an instance of ``options_type``), or None for its
        defaults; unknown fields are refused naming the known ones."""
        if self.options is not None:
            if options_type is not None and not isinstance(self.options, options_type):
                raise InputTypeError(f"solver_options is a {type(self.options).__module__}.Options, but "
                                     f"this fit runs {options_type.__module__}: give its Options "
                                     "or a dict of its fields")
            return self.options
        if not self.settings:
            return None
        return _options_from(options_type, self.settings, "solver_options",
                             f"; the estimator reads {list(ROUTE_KEYS['fast'])}")

    def refuse(self, who: str, *keys: str) -> None:
        """Refuse the keys among ``keys`` (``"method"``, ``"random_state"``, ``"warm_start"``)
        that were given although this estimator's fast solver has no such setting."""
        given = [k for k in keys if getattr(self, k) not in (None, False)]
        if given:
            raise InputError(f"{who}: solver_options {given} are not settings of this "
                             "estimator's fast solver; drop them")

    def seeded(self) -> dict:
        """``{"random_state": ...}`` when one was given, else ``{}`` (the solver's default)."""
        return {} if self.random_state is None else {"random_state": self.random_state}


def _nested_type(field: dataclasses.Field):
    """The Options type of a field whose default is itself an Options dataclass, else None."""
    if field.default_factory is not dataclasses.MISSING:
        default = field.default_factory()
    else:
        default = field.default
    return type(default) if dataclasses.is_dataclass(default) else None


def _options_from(options_type, settings: dict, where: str, reads: str = ""):
    """``options_type(**settings)``, where a dict given for a field whose default is itself an
    Options (e.g. the margin engine's ``interior_point``) is built into that type the same
    way; unknown fields are refused naming the known ones."""
    fields = {f.name: f for f in dataclasses.fields(options_type)}
    unknown = sorted(set(settings) - set(fields))
    if unknown:
        raise InputError(f"{where}: {unknown} are not settings of {options_type.__module__}."
                         f"{options_type.__name__} (its fields: {list(fields)}{reads})")
    built = {}
    for key, value in settings.items():
        nested = _nested_type(fields[key]) if isinstance(value, dict) else None
        built[key] = value if nested is None else _options_from(nested, value, f"{where}[{key!r}]")
    return options_type(**built)


def solver_route(estimator) -> Route:
    """The estimator's ``solver_options`` read for its ``solver``: None (defaults), a dict (the
    keys of :data:`ROUTE_KEYS` read here, the rest left to the solver) or, for
    ``solver="fast"``, the fast solver's frozen ``Options``."""
    value = getattr(estimator, "solver_options", None)
    route = getattr(estimator, "solver", "fast")
    name = type(estimator).__name__
    if value is None or route not in ROUTE_KEYS:  # an unknown solver is refused by its check
        return Route()
    if _is_options(value):
        if route != "fast":
            raise InputTypeError(f"{name}: solver_options is a fast solver's Options but "
                                 f"solver={route!r}; give a dict such as {{'solver': 'CLARABEL'}}")
        return Route(options=value)
    if not isinstance(value, dict):
        raise InputTypeError(f"{name}: solver_options must be None, a dict or the fast solver's "
                             f"Options dataclass (e.g. hiercvx.solvers.margin_engine.Options(...) "
                             f"for HierarchicalSVC), got {type(value).__name__}")
    other = "reference" if route == "fast" else "fast"
    misplaced = sorted(set(value) & (set(ROUTE_KEYS[other]) - set(ROUTE_KEYS[route])))
    if misplaced:
        raise InputError(f"{name}: solver_options {misplaced} are settings of solver={other!r}, "
                         f"not of solver={route!r}")
    own = {k: value[k] for k in ROUTE_KEYS.get(route, ()) if k in value}
    for flag in ("warm_start", "keep_dual"):
        if not isinstance(own.get(flag, False), (bool, np.bool_)):
            raise InputError(f"{name}: solver_options[{flag!r}] must be True or False, "
                             f"got {own[flag]!r}")
    settings = {k: v for k, v in value.items() if k not in own}
    return Route(settings=settings, **own)


@contextmanager
def reference_limit_named(estimator):
    """A reference too large to build, refused with the estimator's way to raise the limit:
    ``solver_options={"max_size": ...}`` (the builders' keyword ``max_size`` is not a setting
    the estimator passes on)."""
    try:
        yield
    except ProblemTooLargeError as exc:
        if getattr(estimator, "solver", None) != "reference" or exc.size is None:
            raise
        raise ProblemTooLargeError.over_limit(
            exc.problem, exc.size, "solver_options={{'max_size': {}}}",
            who=f"{type(estimator).__name__}(solver='reference'): ") from None


def keeps_dual(estimator) -> bool:
    """Whether ``solver_options`` asks to pickle the solver's state (``"keep_dual": True``)."""
    value = getattr(estimator, "solver_options", None)
    return isinstance(value, dict) and bool(value.get("keep_dual", False))


#: the decodings ``node_decision_function`` offers: calibrated log-odds (the default) and the
#: node margins of :func:`hiercvx.metrics.node_margins`
NODE_SCORE_METHODS = ("calibrated",) + NODE_MARGINS


def held_nodes(labels, fitted, hierarchy) -> np.ndarray:
    """Bool ``(n, len(hierarchy.nodes))``: the training ``labels`` (one node or one set of nodes
    per sample, named on the ``fitted`` hierarchy: the caller's, or its copy with self leaves
    for labels that stop at internal nodes) closed upward, over the caller's ``hierarchy``
    (``None`` without one: there are no node scores to calibrate)."""
    if hierarchy is None:
        return None
    held = np.asarray(fitted.closure(labels), dtype=bool)
    if fitted is hierarchy or tuple(fitted.nodes) == tuple(hierarchy.nodes):
        return held
    return held[:, fitted.indices(list(hierarchy.nodes))]


def _takes_a_hierarchy(estimator) -> bool:
    """Whether the estimator has a ``hierarchy`` parameter: node scores exist only then
    (``MulticlassSVC`` is flat, so it has no ``node_decision_function``)."""
    return hasattr(estimator, "hierarchy")


def _held_of(Y, held, H, classes):
    """``held``, or the nodes of ``H`` each sample holds from its ``classes`` ``Y`` (a bool
    indicator over ``classes``), closed upward."""
    if held is not None:
        return held
    Y = Y.toarray() if sp.issparse(Y) else np.asarray(Y)
    below = H.ancestor_matrix[H.indices(classes)].astype(float)
    return (sp.csr_matrix(Y.astype(float)) @ below).toarray() > 0


def _calibration_of(scores, Y, held, H, classes, threshold, method):
    """:func:`hiercvx.metrics.fit_node_calibration` on the node margins of the class ``scores``
    (over ``classes``, with the label-set ``threshold``) and the nodes the samples hold
    (:func:`_held_of`): what ``fit`` kept for ``node_calibration_``."""
    margins = node_margins(np.asarray(scores, dtype=float), classes, H, method=method,
                           threshold=threshold)
    return fit_node_calibration(margins, _held_of(Y, held, H, classes), H, method=method)


class NodeScoresMixin:
    """``node_decision_function``: a score per node of the hierarchy, for the ranking measures
    of the hierarchical multi-label literature (AU(PRC), :func:`hiercvx.metrics.au_prc`).

    An estimator calls :meth:`_fit_node_calibration` at the end of ``fit`` on its training
    samples and their classes, which sets ``node_calibration_``
    (:class:`hiercvx.metrics.NodeCalibration`): the default decoding.  Given the training class
    scores, the logistic fit is deferred to the first read of ``node_calibration_`` (or to
    pickling), as most fits never ask for calibrated node scores: until then the estimator
    holds the training class scores and labels, ``n_samples x n_classes`` floats and bools.
    """

    #: the node margins the calibrated scores are fitted on
    _node_margin_method = "standardized"

    def _node_hierarchy(self):
        check_is_fitted(self)
        H = getattr(self, "hierarchy", None)
        if H is None:
            raise InputError(f"{type(self).__name__} was fitted without a hierarchy, and node scores "
                             "need one: refit it with hierarchy=H, or use decision_function for "
                             "the classes")
        return H

    def _class_score_matrix(self, X):
        scorer = getattr(self, "class_scores", None) or self.decision_function
        S = np.asarray(scorer(X), dtype=float)
        if S.ndim == 1:  # the binary convention of decision_function: one column
            S = np.column_stack([-S, S])
        return S

    def _margins_of_scores(self, S, method: str):
        return node_margins(S, list(self.classes_), self._node_hierarchy(), method=method,
                            threshold=float(getattr(self, "threshold_", 0.0)))

    def _node_margins(self, X, method: str):
        """Node margins ``(n, n_nodes)`` of the samples ``X`` (:func:`hiercvx.metrics.node_margins`
        of the class scores; an estimator whose class scores are no margins overrides it)."""
        return self._margins_of_scores(self._class_score_matrix(X), method)

    @property
    def node_calibration_(self):
        """The :class:`hiercvx.metrics.NodeCalibration` of ``node_decision_function`` (None
        without a hierarchy), fitted on first read from the training scores kept by ``fit``."""
        state = self.__dict__
        pending = state.get("_calibration_inputs")
        if pending is not None:
            state["node_calibration_"] = _calibration_of(*pending)
            state["_calibration_inputs"] = None
        if "node_calibration_" not in state:
            raise AttributeError(f"{type(self).__name__} has no attribute 'node_calibration_' "
                                 "(not fitted)")
        return state["node_calibration_"]

    @node_calibration_.setter
    def node_calibration_(self, value):
        self.__dict__["node_calibration_"] = value
        self.__dict__["_calibration_inputs"] = None

    def __getstate__(self):
        if self.__dict__.get("_calibration_inputs") is not None:
            self.node_calibration_   # a pickle holds the calibration, not its inputs
        state = dict(super().__getstate__())
        state.pop("_calibration_inputs", None)
        return state

    def _fit_node_calibration(self, X, Y=None, scores=None, *, held=None) -> None:
        """Fit ``node_calibration_`` (:func:`hiercvx.metrics.fit_node_calibration`) on the
        training samples ``X`` and their labels: ``Y``, a bool ``(n, n_classes)`` indicator over
        ``classes_``, or ``held``, the nodes of ``hierarchy`` each sample holds
        (:func:`held_nodes`).  ``scores``: the class scores of ``X`` when already computed,
        kept with the labels, the ``hierarchy``, ``classes_``, ``threshold_`` and margin method
        of this fit, and fitted from those on the first read of ``node_calibration_`` (a later
        ``set_params`` does not change it).  Without a ``hierarchy`` parameter there are no
        node scores and nothing is fitted."""
        self.node_calibration_ = None
        H = getattr(self, "hierarchy", None)
        if H is None:
            return
        method = self._node_margin_method
        if scores is not None:   # fitted on first read
            self.__dict__["_calibration_inputs"] = (
                scores, Y, held, H, list(self.classes_),
                float(getattr(self, "threshold_", 0.0)), method)
            return
        margins = self._node_margins(X, method)  # an estimator's own margins
        self.node_calibration_ = fit_node_calibration(
            margins, _held_of(Y, held, H, list(self.classes_)), H, method=method)

    @available_if(_takes_a_hierarchy)
    def cross_fitted_node_margins(self, X, y, *, cv: int = 5, random_state=0) -> np.ndarray:
        """Held-out node margins ``(n_samples, n_nodes)`` of the calibration's margin method:
        ``cv`` clones of the estimator, each fitted on all folds of ``(X, y)`` but one
        (scikit-learn's ``KFold``, shuffled with ``random_state``), score the fold they left
        out.  Unlike the training margins of the fitted model, which a large-margin fit has
        pushed apart, these are on the scale of new samples' margins."""
        from sklearn.base import clone
        from sklearn.model_selection import KFold

        H = self._node_hierarchy()
        if isinstance(cv, (bool, np.bool_)) or not isinstance(cv, (int, np.integer)) or cv < 2:
            raise InputError(f"cv must be an integer >= 2 (the number of folds), got {cv!r}")
        labels = list(y)
        X = X if sp.issparse(X) else np.asarray(X)
        if X.ndim != 2 or X.shape[0] != len(labels):
            raise InputError(f"X has shape {X.shape} and y {len(labels)} labels: pass the X and y "
                             "the estimator was fitted on, one row per label")
        if cv > len(labels):
            raise InputError(f"cv={cv} folds need at least {cv} samples, got {len(labels)}; "
                             "lower cv")
        # a precomputed kernel's columns are the training samples: a fold keeps its own
        gram = is_precomputed(getattr(self, "kernel", None))
        margins = np.empty((len(labels), len(H.nodes)))
        folds = KFold(int(cv), shuffle=True, random_state=random_state)
        for train, held_out in folds.split(np.zeros(len(labels))):
            fit_X, score_X = ((X[np.ix_(train, train)], X[np.ix_(held_out, train)]) if gram
                              else (X[train], X[held_out]))
            fold = clone(self).fit(fit_X, [labels[i] for i in train])
            margins[held_out] = fold._node_margins(score_X, self._node_margin_method)
        return margins

    @available_if(_takes_a_hierarchy)
    def fit_node_calibration_cv(self, X, y, *, cv: int = 5, shrinkage=None, random_state=0):
        """Refit ``node_calibration_`` (:func:`hiercvx.metrics.fit_node_calibration`) on the
        cross-fitted node margins of :meth:`cross_fitted_node_margins` instead of the
        training margins of the fitted model; the model's own weights are kept, ``cv`` more
        fits are paid.

        Parameters
        ----------
        X, y : the data the estimator was fitted on (``y``: node names or label sets of
            ``hierarchy``)
        cv : int, default 5
            Folds.
        shrinkage : float or None, default None
            One pooled (slope, intercept) pair (None) or a pair per node shrunk towards it.
        random_state : int, default 0
            Seed of the fold assignment.

        Returns
        -------
        self
        """
        if not hasattr(self, "node_calibration_"):
            raise InputError(f"{type(self).__name__} is not fitted: call fit(X, y) first")
        H = self._node_hierarchy()
        margins = self.cross_fitted_node_margins(X, y, cv=cv, random_state=random_state)
        self.node_calibration_ = fit_node_calibration(margins, H.closure(list(y)), H,
                                                      method=self._node_margin_method,
                                                      shrinkage=shrinkage)
        return self

    @available_if(_takes_a_hierarchy)
    def node_decision_function(self, X, method: str = "calibrated"):
        """Scores ``(n_samples, n_nodes)`` over the nodes of the ``hierarchy`` the estimator was
        given (``hierarchy.nodes`` order); no node scores above its ancestors, so every
        threshold gives an ancestor-closed label set.

        ``method="calibrated"`` (default): the log-odds that the sample holds node ``v``,
        ``log_odds_v + c + beta * m_v(x)`` (:class:`hiercvx.metrics.NodeCalibration`): the
        node's training frequency ``log_odds_v`` puts every node on one scale, the estimator's
        node margin ``m_v(x)`` orders the samples (``node_calibration_.method``: standardized
        class scores for the margin SVMs, max-marginals of the path scores for the NHSVM
        family, local routing margins for :class:`~hiercvx.estimators.TopDownSVC`), ``c`` and
        ``beta >= 0`` fitted by maximum likelihood on the training samples.  The other methods
        return node margins (:func:`hiercvx.metrics.node_margins`): ``"max_marginal"``,
        ``"threshold"`` (for the estimators that predict the classes within ``threshold_`` of
        the top score, ``>= 0`` exactly on the nodes of ``predict``'s label sets closed
        upward), ``"standardized"``, ``"best_class"`` (the best class at or below the node,
        :func:`hiercvx.metrics.node_scores`).
        """
        if not isinstance(method, str) or method not in NODE_SCORE_METHODS:
            raise InputError(f"method must be one of {NODE_SCORE_METHODS}, got {method!r}")
        self._node_hierarchy()
        if method != "calibrated":
            return self._node_margins(X, method)
        calibration = getattr(self, "node_calibration_", None)
        if calibration is None:
            raise InputError(f"{type(self).__name__} has no node calibration: refit it, or "
                             "pass method='max_marginal'")
        return calibration.scores(self._node_margins(X, calibration.method))


def example_f1(y_true, y_pred, sample_weight=None) -> float:
    """The (weighted) mean example-based F1 of label sets, ``2 |P & T| / (|P| + |T|)`` per
    sample; a sample whose true and predicted sets are both empty scores 0, as in
    scikit-learn's ``f1_score(..., average="samples")``."""
    f1 = [2 * len(set(p) & set(t)) / max(len(set(p)) + len(set(t)), 1)
          for p, t in zip(y_pred, y_true)]
    return float(np.average(f1, weights=sample_weight))


class LabelSetScoreMixin:
    """``score``: accuracy for single-label fits, mean example-based F1 of the predicted
    label sets for multi-label fits (put before ``ClassifierMixin`` in the bases)."""

    def score(self, X, y, sample_weight=None):
        """Accuracy (single-label) or mean example-based F1 of the most specific predicted
        labels (:func:`example_f1`); ``y`` is read as ``fit`` reads it (label sets with their
        ancestors are reduced to their most specific labels; a 0/1 indicator's rows are label
        sets), whatever form ``predict`` answers in."""
        check_is_fitted(self)
        multilabel = getattr(self, "multilabel_", False)
        y = read_test_labels(y, getattr(self, "hierarchy", None), multilabel)
        pred = predicted_labels(self, X)
        if not multilabel:
            return accuracy(y, pred, sample_weight)
        if len(y) != len(pred):
            raise InputError(f"y has {len(y)} entries but X has {len(pred)} rows")
        return example_f1(y, pred, sample_weight)
