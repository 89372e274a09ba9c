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
   deviation, 0 when ``S`` has one element (``scipy.cluster.hierarchy.inconsistent(Z, 2)``);
5. the threshold: the mean of the non-zero coefficients;
6. the cut: a link whose coefficient exceeds the threshold is removed, and with it every link
   above it (``fcluster(criterion="inconsistent")``); the classes still connected form one flat
   cluster;
7. the hierarchy: root -> one node per flat cluster -> its classes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.cluster import hierarchy as sch
from scipy.spatial.distance import squareform

from ._validation import check_features
from .exceptions import HierarchyError, InputError, LabelError
from .hierarchy import Hierarchy
from .kernels import Kernel, check_psd, make_kernel
from .targets import resolve_targets

__all__ = [
    "TaxonomyResult",
    "learn_hierarchy",
    "learn_taxonomy",
    "hierarchy_from_distances",
    "centroid_distances",
    "random_hierarchy",
    "hierarchy_level_sizes",
]

_ROOT = "<root>"


@dataclass
class TaxonomyResult:
    """Everything Algorithm 8 computes.

    ``clusters[k]`` is the flat cluster (0-based, numbered by first appearance in ``classes``)
    of class ``classes[k]``; ``linkage`` is scipy's ``Z`` over the classes in that order;
    ``inconsistency`` is scipy's ``R`` (mean, std, count, coefficient per link); the
    coefficients are ``inconsistency[:, 3]``.
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
    """``(classes, Y)`` with ``Y`` a bool ``(n, q)`` CSR membership matrix."""
    try:
        H, classes, labels, _ = resolve_targets(y, None)
    except LabelError as exc:
        raise LabelError(f"taxonomy learning clusters classes: {exc}") from None
    ind = H.label_indicator(labels)
    Y = sp.csr_matrix(ind[:, H.indices(classes.tolist())], dtype=bool)
    counts = np.asarray(Y.sum(axis=0)).ravel()
    if np.any(counts == 0):
        k = int(np.flatnonzero(counts == 0)[0])
        raise LabelError(f"class {classes[k]!r} has no examples, so it has no centroid; drop it")
    return tuple(classes.tolist()), Y, counts


def centroid_distances(X, y, kernel="linear", sigma: float | None = None, block: int = 2048):
    """``(classes, D)``: the classes of ``y`` and the ``(q, q)`` Euclidean distances between
    their centroids in the kernel's feature space, thesis (6.1).

    ``kernel``: ``"linear"``, ``"rbf"``, a callable ``k(A, B)``, or ``"precomputed"`` (then ``X``
    is the ``(n, n)`` Gram matrix of the examples).  ``block``: rows of a nonlinear kernel
    computed at a time (2048: a ``(block, n)`` slice stays small in memory while each slice is
    one large matrix product).
    """
    classes, Y, counts = _class_matrix(y)
    precomputed = isinstance(kernel, str) and kernel == "precomputed"
    X = check_features(X, allow_sparse=not precomputed)
    n = X.shape[0]
    if Y.shape[0] != n:
        raise InputError(f"y has {Y.shape[0]} entries but X has {n} rows")
    A = sp.csr_matrix(Y.multiply(1.0 / counts[None, :]))  # (n, q): centroid = A^T phi(X)
    k = kernel if isinstance(kernel, Kernel) else make_kernel(kernel, X=None if precomputed else X,
                                                              sigma=sigma)
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


def hierarchy_from_distances(D, classes, *, method: str = "average", depth: int = 2,
                             threshold: float | None = None, root=None,
                             cluster_prefix: str = "cluster") -> TaxonomyResult:
    """Algorithm 8, steps 2-28, from a ``(q, q)`` distance matrix between classes.

    ``method``: scipy linkage (the thesis uses ``"average"``, (6.2)); ``depth``: the number of
    link levels in the inconsistency statistics (Algorithm 8 uses the link and the links of the
    two clusters it merges: 2); ``threshold``: the cut (default: the mean of the non-zero
    inconsistency coefficients, line 26; when every coefficient is 0 nothing is cut and all
    classes form one cluster).
    """
    classes = tuple(classes.tolist() if isinstance(classes, np.ndarray) else classes)
    q = len(classes)
    if q < 2:
        raise LabelError(f"a hierarchy over classes needs at least two classes, got {q}")
    if len(set(classes)) != q:
        raise LabelError("class names must be distinct")
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
    if int(depth) != depth or depth < 1:
        raise InputError(f"depth must be a positive integer, got {depth!r}")
    Z = sch.linkage(squareform(0.5 * (D + D.T), checks=False), method=method)
    R = sch.inconsistent(Z, d=int(depth))
    coeff = R[:, 3]
    if threshold is None:
        nonzero = coeff[coeff != 0]
        threshold = float(nonzero.mean()) if len(nonzero) else 0.0
    labels = sch.fcluster(Z, t=float(threshold), criterion="inconsistent", depth=int(depth), R=R)
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
                   depth: int = 2, threshold: float | None = None, root=None) -> TaxonomyResult:
    """Algorithm 8 in full; returns the :class:`TaxonomyResult` (see :func:`learn_hierarchy`)."""
    classes, D = centroid_distances(X, y, kernel=kernel, sigma=sigma)
    return hierarchy_from_distances(D, classes, method=method, depth=depth, threshold=threshold,
                                    root=root)


def learn_hierarchy(X, y, *, kernel="linear", sigma: float | None = None, method: str = "average",
                    depth: int = 2, threshold: float | None = None, root=None) -> Hierarchy:
    """A two-level :class:`~hiercvx.Hierarchy` (root -> flat clusters -> classes) learned from
    labelled data by Cai thesis Algorithm 8.

    ``y``: one label per example, label sets (multi-label) or a 0/1 indicator matrix; the
    classes are its distinct labels.  ``kernel`` gives the distance (6.1) in a feature space
    (``"linear"``, ``"rbf"``, a callable, or ``"precomputed"`` with ``X`` the examples' Gram
    matrix).  For a precomputed distance between classes use :func:`hierarchy_from_distances`.
    The hierarchy's leaves are the classes; use it with any hierarchical estimator.
    """
    return learn_taxonomy(X, y, kernel=kernel, sigma=sigma, method=method, depth=depth,
                          threshold=threshold, root=root).hierarchy


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
    try:
        sizes = [int(s) for s in level_sizes]
    except (TypeError, ValueError):
        raise InputError("level_sizes must be a sequence of positive integers") from None
    if not sizes or any(s < 1 for s in sizes) or any(s != float(t) for s, t in zip(sizes, level_sizes)):
        raise InputError(f"level_sizes must be a non-empty sequence of positive integers, got {level_sizes!r}")
    bad = [l for l in range(1, len(sizes)) if sizes[l] < sizes[l - 1]]
    if bad:
        l = bad[0]
        raise InputError(f"level {l + 1} has {sizes[l]} nodes but level {l} has {sizes[l - 1]}: every "
                         "interior node needs a child, so the level sizes must not decrease")
    rng = np.random.default_rng(random_state)
    D = len(sizes)
    if classes is not None:
        classes = list(classes.tolist() if isinstance(classes, np.ndarray) else classes)
        if len(classes) != sizes[-1]:
            raise InputError(f"{len(classes)} classes given for a deepest level of {sizes[-1]} nodes")
        if len(set(classes)) != len(classes):
            raise LabelError("class names must be distinct")
    taken = set(classes or ())
    root = _fresh_name(_ROOT, taken) if root is None else root
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
