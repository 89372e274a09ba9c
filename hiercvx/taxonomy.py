"""Learning a class hierarchy from data (Cai thesis, chapter 6, Algorithm 8) and random
hierarchies with prescribed level sizes (thesis 7.4.3).

Algorithm 8, step by step (``learn_hierarchy``):

1. class centroids ``c_k = mean{x_i : k in Y_i}`` (multi-label examples count for each of their
   classes);
2. Euclidean distances between centroids, (6.1): ``d(c, c')^2 = <c, c> + <c', c'> - 2 <c, c'>``.
   Only inner products are needed, so with a kernel ``k`` the centroids' Gram matrix is
   ``A^T K A`` with ``A[i, k] = [k in Y_i] / n_k``; a precomputed Gram matrix or a precomputed
   class-distance matrix (:func:`hierarchy_from_distances`) are accepted too;
3. average-linkage agglomerative clustering of the centroids, (6.2)
   (``scipy.cluster.hierarchy.linkage(method="average")``);
4. the inconsistency coefficient of each link: ``(m - mean(S)) / std(S)`` over ``S`` = the
   link's merge distance and those of the non-singleton clusters it merges, sample standard
   deviation, 0 when ``S`` has one element or its distances are equal up to the relative
   tolerance ``rtol`` (the statistics of ``scipy.cluster.hierarchy.inconsistent(Z, 2)``, with a
   two-pass standard deviation);
5. the threshold: the mean of the non-zero coefficients;
6. the cut: a link whose coefficient exceeds the threshold by more than the relative tolerance
   ``rtol`` is removed, and with it every link above it (``fcluster(criterion="inconsistent")``);
   the classes still connected form one flat cluster.  Coefficients equal in exact arithmetic
   (a chain of single classes joining one cluster gives ``1/sqrt(2)`` at every link) differ in
   floating point in their last bits only, so without the tolerance rounding, and with it the
   order of the examples, would decide the cut;
7. the hierarchy: root -> one node per flat cluster -> its classes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.cluster import hierarchy as sch
from scipy.spatial.distance import squareform

from ._validation import check_features, check_target, random_generator
from .exceptions import HierarchyError, InputError, LabelError
from .hierarchy import Hierarchy
from .kernels import Kernel, check_psd, make_kernel
from .targets import resolve_targets

__all__ = [
    "TaxonomyResult",
    "LINKAGE_METHODS",
    "inconsistency",
    "learn_hierarchy",
    "learn_taxonomy",
    "hierarchy_from_distances",
    "centroid_distances",
    "random_hierarchy",
    "hierarchy_level_sizes",
]

_ROOT = "<root>"

#: the linkage rules of ``scipy.cluster.hierarchy.linkage`` (the thesis' (6.2) is "average")
LINKAGE_METHODS = ("single", "complete", "average", "weighted", "centroid", "median", "ward")


@dataclass
class TaxonomyResult:
    """Everything Algorithm 8 computes.

    ``clusters[k]`` is the flat cluster (0-based, numbered by first appearance in ``classes``)
    of class ``classes[k]``; ``linkage`` is scipy's ``Z`` over the classes in that order;
    ``inconsistency`` holds the statistics of scipy's ``R`` (mean, std, count, coefficient per
    link; :func:`inconsistency`); the coefficients are ``inconsistency[:, 3]``.
    """

    hierarchy: Hierarchy
    classes: tuple
    clusters: np.ndarray
    distances: np.ndarray
    linkage: np.ndarray
    inconsistency: np.ndarray
    threshold: float
    cluster_names: tuple

    @property
    def n_clusters(self) -> int:
        return len(self.cluster_names)


# --------------------------------------------------------------------------------------------
# Centroids and distances
# --------------------------------------------------------------------------------------------

def _class_matrix(y):
    """``(classes, Y, counts)`` with ``Y`` a bool ``(n, q)`` CSR membership matrix.  Every
    sample needs a label (a None or NaN label, an empty label set and an all-zero indicator
    row are refused): a sample without one would silently take no part in any centroid."""
    try:
        check_target(y, "y", allow_mixed=True, caller="taxonomy learning")
        H, classes, labels, _ = resolve_targets(y, None)
    except LabelError as exc:
        raise LabelError(f"taxonomy learning clusters classes: {exc}") from None
    ind = H.label_indicator(labels)
    Y = sp.csr_matrix(ind[:, H.indices(classes.tolist())], dtype=bool)
    empty = np.flatnonzero(np.asarray(Y.sum(axis=1)).ravel() == 0)
    if len(empty):
        raise LabelError(f"taxonomy learning clusters classes: sample {int(empty[0])} has no label "
                         f"({len(empty)} sample(s) without one); every sample needs a label: drop "
                         "the samples without one, or give each its class")
    counts = np.asarray(Y.sum(axis=0)).ravel()
    if np.any(counts == 0):
        k = int(np.flatnonzero(counts == 0)[0])
        raise LabelError(f"class {classes[k]!r} has no examples, so it has no centroid; drop it")
    return tuple(classes.tolist()), Y, counts


def _check_block(block) -> int:
    """``block`` as a positive int, else an :class:`InputError` saying what it may be."""
    if (isinstance(block, (bool, np.bool_)) or not isinstance(block, (int, np.integer))
            or block < 1):
        raise InputError(f"block must be a positive integer (rows of the kernel computed at a "
                         f"time, e.g. the default 2048), got {block!r}")
    return int(block)


def centroid_distances(X, y, kernel="linear", sigma: float | None = None, block: int = 2048):
    """``(classes, D)``: the classes of ``y`` and the ``(q, q)`` Euclidean distances between
    their centroids in the kernel's feature space, thesis (6.1).

    ``kernel``: ``"linear"``, ``"rbf"``, a callable ``k(A, B)``, a
    :class:`~hiercvx.kernels.Kernel`, or ``"precomputed"`` (then ``X`` is the ``(n, n)`` Gram
    matrix of the examples), resolved by :func:`~hiercvx.kernels.make_kernel` with ``X`` as
    training data: a Gaussian without a width (``sigma=None``, ``Kernel("rbf")``) takes the
    median heuristic on ``X``; ``sigma`` beside a ``Kernel`` is refused.  ``block``: a
    positive integer, the rows of a nonlinear kernel computed at a time (2048: a
    ``(block, n)`` slice stays small in memory while each slice is one large matrix product).
    """
    block = _check_block(block)
    classes, Y, counts = _class_matrix(y)
    precomputed = ((isinstance(kernel, str) and kernel == "precomputed")
                   or (isinstance(kernel, Kernel) and kernel.name == "precomputed"))
    X = check_features(X, allow_sparse=not precomputed)
    n = X.shape[0]
    if Y.shape[0] != n:
        raise InputError(f"y has {Y.shape[0]} entries but X has {n} rows")
    A = sp.csr_matrix(Y.multiply(1.0 / counts[None, :]))  # (n, q): centroid = A^T phi(X)
    k = make_kernel(kernel, X=None if precomputed else X, sigma=sigma)
    if k.is_linear:
        C = np.asarray((A.T @ X).toarray() if sp.issparse(X) else A.T @ X)
        G = C @ C.T
    elif k.name == "precomputed":
        if X.shape != (n, n):
            raise InputError(f"a precomputed kernel must be the ({n}, {n}) Gram matrix of the examples, "
                             f"got shape {X.shape}")
        check_psd(X, what="precomputed kernel matrix")
        G = np.asarray(A.T @ (A.T @ X).T)
    else:
        AtK = np.zeros((len(classes), n))
        for a in range(0, n, block):
            b = min(a + block, n)
            AtK += np.asarray(A[a:b].T @ k(X[a:b], X))
        G = np.asarray(AtK @ A)
    G = 0.5 * (G + G.T)
    # a valid kernel gives a PSD centroid Gram matrix A^T K A; refuse anything else
    check_psd(G, what="Gram matrix of the class centroids (A^T K A)")
    g = np.diag(G)
    D = np.sqrt(np.maximum(g[:, None] + g[None, :] - 2.0 * G, 0.0))
    np.fill_diagonal(D, 0.0)
    return classes, D


# --------------------------------------------------------------------------------------------
# Algorithm 8
# --------------------------------------------------------------------------------------------

def _fresh_name(base: str, taken: set) -> str:
    name = base
    while name in taken:
        name = name + "_"
    return name


def inconsistency(Z, depth: int = 2, rtol: float = 1e-9) -> np.ndarray:
    """The inconsistency statistics of every link of the linkage ``Z`` (Cai thesis Algorithm 8,
    lines 13-24).

    Parameters
    ----------
    Z : ndarray of shape (q - 1, 4)
        A scipy linkage matrix.
    depth : int
        Link levels in the statistics: the link itself and the links up to ``depth - 1``
        levels below it (Algorithm 8: the link and those of the clusters it merges, 2).
    rtol : float
        Merge distances equal up to this relative tolerance count as equal: their standard
        deviation, and the coefficient, are 0 (rounding would otherwise turn equal distances
        into an arbitrary coefficient).

    Returns
    -------
    ndarray of shape (q - 1, 4)
        Per link the mean and sample standard deviation (two-pass) of the merge distances
        ``S``, their number, and the coefficient ``(m - mean(S)) / std(S)`` (0 when ``S`` has
        one element or its standard deviation is 0): ``scipy.cluster.hierarchy.inconsistent``'s
        ``R``, whose one-pass standard deviation carries an error of about ``1e-8 * m``.
    """
    q = len(Z) + 1
    R = np.zeros((len(Z), 4))
    for i in range(len(Z)):
        level, heights = [i], [Z[i, 2]]
        for _ in range(depth - 1):
            level = [int(c) - q for j in level for c in Z[j, :2] if c >= q]
            heights.extend(Z[j, 2] for j in level)
        S = np.asarray(heights)
        std = float(S.std(ddof=1)) if len(S) > 1 else 0.0
        if std <= rtol * float(np.abs(S).max()):
            std = 0.0
        R[i] = S.mean(), std, len(S), (Z[i, 2] - S.mean()) / std if std > 0 else 0.0
    return R


def _check_cut_options(method, depth, threshold, rtol):
    """``(depth, threshold, rtol)`` as numbers, each refused with the values it may take."""
    if not isinstance(method, str) or method not in LINKAGE_METHODS:
        raise InputError(f"method must be one of {LINKAGE_METHODS} (scipy's linkage rules; the "
                         f"thesis uses 'average'), got {method!r}")
    try:
        ok = not isinstance(depth, (bool, np.bool_)) and int(depth) == depth and depth >= 1
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise InputError(f"depth must be a positive integer (link levels in the inconsistency "
                         f"statistics; Algorithm 8 uses 2), got {depth!r}")
    if threshold is not None:
        threshold = _finite(threshold, "threshold", " or None (the mean of the non-zero "
                            "inconsistency coefficients)")
    rtol = _finite(rtol, "rtol", " (a relative tolerance, e.g. 1e-9)")
    if rtol < 0:
        raise InputError(f"rtol must be non-negative (a relative tolerance, e.g. 1e-9), "
                         f"got {rtol!r}")
    return int(depth), threshold, rtol


def _finite(value, name: str, what: str) -> float:
    """``value`` as a finite float, else an :class:`InputError` naming ``name`` and ``what``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = np.nan
    if isinstance(value, (bool, np.bool_)) or not np.isfinite(number):
        raise InputError(f"{name} must be a finite number{what}, got {value!r}")
    return number


def _distinct_names(classes) -> int:
    """The number of distinct class names; unhashable names are refused."""
    try:
        return len(set(classes))
    except TypeError:
        raise LabelError("class names must be hashable (strings or numbers, not lists or "
                         "arrays); pass one name per class") from None


def _check_root(root) -> None:
    """A root name is None (a fresh name) or hashable."""
    if root is not None:
        try:
            hash(root)
        except TypeError:
            raise InputError(f"the root name must be hashable (a string or a number), got a "
                             f"{type(root).__name__}; pass root=None for a fresh name") from None


def _check_distances(D, classes):
    """``(D, classes)``: a finite, non-negative, symmetric ``(q, q)`` matrix with zero diagonal
    over ``q >= 2`` distinct class names, none of them None."""
    classes = tuple(classes.tolist() if isinstance(classes, np.ndarray) else classes)
    q = len(classes)
    if q < 2:
        raise LabelError(f"a hierarchy over classes needs at least two classes, got {q}")
    if _distinct_names(classes) != q:
        raise LabelError("class names must be distinct")
    if any(c is None for c in classes):
        raise LabelError("a class name is None, which no hierarchy node can have: name every class")
    try:
        D = np.asarray(D, dtype=float)
    except (TypeError, ValueError):
        raise InputError("the class distances must be a numeric (q, q) matrix") from None
    if D.shape != (q, q):
        raise InputError(f"the class distances must be ({q}, {q}) (one row per class), got {D.shape}")
    if not np.all(np.isfinite(D)) or np.any(D < 0):
        raise InputError("the class distances must be finite and non-negative")
    if not np.allclose(D, D.T, atol=1e-10 * max(1.0, float(D.max()))):
        raise InputError("the class distance matrix is not symmetric; symmetrize it, e.g. (D + D.T) / 2")
    if np.any(np.abs(np.diag(D)) > 0):
        raise InputError("the class distance matrix must have a zero diagonal")
    return D, classes


def hierarchy_from_distances(D, classes, *, method: str = "average", depth: int = 2,
                             threshold: float | None = None, root=None,
                             cluster_prefix: str = "cluster", rtol: float = 1e-9) -> TaxonomyResult:
    """Cai thesis Algorithm 8, steps 2-28, from a ``(q, q)`` distance matrix between classes.

    Parameters
    ----------
    D : array of shape (q, q)
        Distances between the classes (thesis (6.1)): finite, symmetric, zero diagonal.
    classes : sequence of q distinct class names
    method : one of :data:`LINKAGE_METHODS`
        The scipy linkage rule (the thesis uses ``"average"``, (6.2)).
    depth : int
        Link levels in the inconsistency statistics (:func:`inconsistency`; Algorithm 8: 2).
    threshold : float or None
        The cut; None: the mean of the non-zero inconsistency coefficients (line 26; when every
        coefficient is 0 nothing is cut and all classes form one cluster).
    root, cluster_prefix :
        The root's name (default ``"<root>"``, made distinct from the classes) and the prefix of
        the cluster nodes' names.
    rtol : float
        Relative tolerance of the cut: a link is cut when its coefficient exceeds
        ``threshold * (1 + rtol)`` (for a non-negative threshold), so coefficients equal to the
        threshold in exact arithmetic are not "above" it whatever their rounding; merge
        distances equal up to ``rtol`` have coefficient 0 (:func:`inconsistency`).  The default
        ``1e-9`` is far above the rounding of the coefficients and far below any difference
        between them that the data make.

    Returns
    -------
    TaxonomyResult
    """
    D, classes = _check_distances(D, classes)
    depth, threshold, rtol = _check_cut_options(method, depth, threshold, rtol)
    _check_root(root)
    q = len(classes)
    Z = sch.linkage(squareform(0.5 * (D + D.T), checks=False), method=method)
    R = inconsistency(Z, depth, rtol)
    coeff = R[:, 3]
    if threshold is None:
        nonzero = coeff[coeff != 0]
        threshold = float(nonzero.mean()) if len(nonzero) else 0.0
    cut = threshold + rtol * abs(threshold)  # "above the threshold", not within rounding of it
    labels = sch.fcluster(Z, t=cut, criterion="inconsistent", depth=depth, R=R)
    # renumber the flat clusters by first appearance in `classes`
    _, first = np.unique(labels, return_index=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    clusters = rank[np.searchsorted(np.unique(labels), labels)]
    taken = set(classes)
    root = _fresh_name(_ROOT, taken) if root is None else root
    if root in taken:
        raise InputError(f"the root name {root!r} is also a class name")
    taken.add(root)
    names = []
    for c in range(len(first)):
        names.append(_fresh_name(f"{cluster_prefix}{c}", taken))
        taken.add(names[-1])
    edges = [(root, v) for v in names] + [(names[clusters[k]], classes[k]) for k in range(q)]
    H = Hierarchy(edges, root=root)
    return TaxonomyResult(hierarchy=H, classes=classes, clusters=clusters, distances=D, linkage=Z,
                          inconsistency=R, threshold=float(threshold), cluster_names=tuple(names))


def learn_taxonomy(X, y, *, kernel="linear", sigma: float | None = None, method: str = "average",
                   depth: int = 2, threshold: float | None = None, root=None,
                   rtol: float = 1e-9) -> TaxonomyResult:
    """Cai thesis Algorithm 8 in full: centroid distances (:func:`centroid_distances`), then
    :func:`hierarchy_from_distances` (see there for ``method``, ``depth``, ``threshold``,
    ``root`` and ``rtol``); the options are checked before any distance is computed.

    Returns
    -------
    TaxonomyResult (see :func:`learn_hierarchy` for ``X``, ``y``, ``kernel`` and ``sigma``)
    """
    _check_cut_options(method, depth, threshold, rtol)
    _check_root(root)
    classes, D = centroid_distances(X, y, kernel=kernel, sigma=sigma)
    return hierarchy_from_distances(D, classes, method=method, depth=depth, threshold=threshold,
                                    root=root, rtol=rtol)


def learn_hierarchy(X, y, *, kernel="linear", sigma: float | None = None, method: str = "average",
                    depth: int = 2, threshold: float | None = None, root=None,
                    rtol: float = 1e-9) -> Hierarchy:
    """A two-level :class:`~hiercvx.Hierarchy` (root -> flat clusters -> classes) learned from
    labelled data by Cai thesis Algorithm 8.

    ``y``: one label per example, label sets (multi-label) or a 0/1 indicator matrix; the
    classes are its distinct labels, and every example needs one.  ``kernel`` gives the
    distance (6.1) in a feature space (``"linear"``, ``"rbf"``, a callable, or
    ``"precomputed"`` with ``X`` the examples' Gram matrix).  ``method``, ``depth``,
    ``threshold``, ``root`` and ``rtol`` as in :func:`hierarchy_from_distances`.  For a
    precomputed distance between classes use :func:`hierarchy_from_distances`.  The
    hierarchy's leaves are the classes; use it with any hierarchical estimator.
    """
    return learn_taxonomy(X, y, kernel=kernel, sigma=sigma, method=method, depth=depth,
                          threshold=threshold, root=root, rtol=rtol).hierarchy


# --------------------------------------------------------------------------------------------
# Random hierarchies (thesis 7.4.3)
# --------------------------------------------------------------------------------------------

def hierarchy_level_sizes(H: Hierarchy) -> tuple:
    """Number of nodes at depths 1, 2, ..., D of a tree (the root level is not counted)."""
    if not H.is_tree:
        raise HierarchyError("level sizes are defined here for trees; this hierarchy is a DAG")
    counts = np.bincount(H.depths)
    return tuple(int(c) for c in counts[1:])


def _surjection(rng, n_children: int, n_parents: int, tries: int = 1000) -> np.ndarray:
    """A uniformly random map children -> parents that leaves no parent childless (rejection
    sampling); after ``tries`` rejections, a random matching of one child per parent with the
    other children placed uniformly (not exactly uniform then, but always valid)."""
    for _ in range(tries):
        f = rng.integers(0, n_parents, n_children)
        if len(np.unique(f)) == n_parents:
            return f
    f = rng.integers(0, n_parents, n_children)
    first = rng.choice(n_children, n_parents, replace=False)
    f[first] = rng.permutation(n_parents)
    return f


def random_hierarchy(level_sizes, random_state=None, classes=None, root=None,
                     prefix: str = "L") -> Hierarchy:
    """A random tree with ``level_sizes[l]`` nodes at depth ``l + 1`` (thesis 7.4.3: the same
    depth and number of nodes per level as a true hierarchy, edges between adjacent levels drawn
    uniformly at random, every interior node with at least one child).

    ``level_sizes`` counts the levels below the root (the thesis' "1, 7, 20, 160" for WIPO-alpha
    section D is ``(7, 20, 160)``); it must be non-decreasing, since otherwise some interior
    node would stay childless.  ``classes`` names the deepest level (in a random order; default
    ``"<prefix><D>_<k>"``).  Use ``random_hierarchy(hierarchy_level_sizes(H), rs,
    classes=H.leaves)`` for a random counterpart of a balanced tree ``H``.
    """
    message = (f"level_sizes must be a non-empty sequence of positive integers (nodes per "
               f"level below the root, e.g. (7, 20, 160)), got {level_sizes!r}")
    try:
        entries = list(level_sizes)
    except TypeError:
        raise InputError(message) from None
    numbers = (int, float, np.integer, np.floating)
    if (not entries or any(isinstance(t, (bool, np.bool_)) or not isinstance(t, numbers)
                           or not np.isfinite(t) for t in entries)):
        raise InputError(message)
    sizes = [int(t) for t in entries]
    if any(s < 1 for s in sizes) or any(s != t for s, t in zip(sizes, entries)):
        raise InputError(message)
    bad = [l for l in range(1, len(sizes)) if sizes[l] < sizes[l - 1]]
    if bad:
        l = bad[0]
        raise InputError(f"level {l + 1} has {sizes[l]} nodes but level {l} has {sizes[l - 1]}: every "
                         "interior node needs a child, so the level sizes must not decrease")
    rng = random_generator(random_state)
    D = len(sizes)
    if classes is not None:
        classes = list(classes.tolist() if isinstance(classes, np.ndarray) else classes)
        if len(classes) != sizes[-1]:
            raise InputError(f"{len(classes)} classes given for a deepest level of {sizes[-1]} nodes")
        if _distinct_names(classes) != len(classes):
            raise LabelError("class names must be distinct")
    _check_root(root)
    taken = set(classes or ())
    root = _fresh_name(_ROOT, taken) if root is None else root
    if root in taken:
        raise InputError(f"the root name {root!r} is also a class name; pass another root, or "
                         "root=None for a fresh name")
    taken.add(root)
    levels = []
    for l, s in enumerate(sizes, start=1):
        if l == D and classes is not None:
            levels.append([classes[j] for j in rng.permutation(s)])
        else:
            names = []
            for k in range(s):
                names.append(_fresh_name(f"{prefix}{l}_{k}", taken))
                taken.add(names[-1])
            levels.append(names)
    edges = [(root, v) for v in levels[0]]
    for l in range(1, D):
        f = _surjection(rng, sizes[l], sizes[l - 1])
        edges.extend((levels[l - 1][f[j]], levels[l][j]) for j in range(sizes[l]))
    return Hierarchy(edges, root=root)
