"""Tests of what hiercvx.inference accepts: tables read by column name, shapes of true sets,
score ranges, and errors that name the caller's own parameters.

Independent route: expected sets are written by hand or found by brute force over
:func:`hiercvx.inference.enumerate_label_sets`.
"""

from __future__ import annotations

import numpy as np
import pytest

import hiercvx as hc
from hiercvx import inference as inf
from hiercvx.exceptions import HierarchyError, InputError, ProblemTooLargeError

ALL_METHODS = ("dp", "ilp", "lp", "enumerate")


def small_tree():
    return hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "a1": "a", "a2": "a"})


class Table:
    """The least a table of scores has: column names and ``__array__`` (as a DataFrame)."""

    def __init__(self, values, columns):
        self.values = np.asarray(values, dtype=float)
        self.columns = list(columns)

    def __array__(self, dtype=None, copy=None):
        return self.values if dtype is None else self.values.astype(dtype)


# ---------------------------------------------------------------------- tables by column name
@pytest.mark.parametrize("method", ALL_METHODS)
def test_a_table_of_scores_is_read_by_column_name(method):
    H = small_tree()
    by_name = {"r": 0.0, "a": -1.0, "b": 5.0, "a1": -1.0, "a2": -1.0}
    columns = ["r", "b", "a", "a1", "a2"]  # not H.nodes order
    table = Table([[by_name[c] for c in columns]], columns)
    Z = inf.best_label_set(table, H, method)
    assert [v for v, z in zip(H.nodes, Z[0]) if z] == ["r", "b"]


def test_a_table_of_true_sets_is_read_by_column_name():
    H = small_tree()
    S = np.zeros((1, len(H)))
    t = H.closure(["a1"])
    columns = ["a2", "a1", "b", "a", "r"]
    table = Table(t[:, [H.index(c) for c in columns]], columns)
    aug, _ = inf.loss_augmented_scores(S, H, table, "leaf_hamming")
    np.testing.assert_array_equal(aug, inf.loss_augmented_scores(S, H, t, "leaf_hamming")[0])


@pytest.mark.parametrize("columns", [[0, 1, 2, 3, 4], ["r", "a", "b", "a1", "zz"],
                                     ["r", "a", "b", "a1", "a1"], ["r", "a", "b", "a1"]])
def test_a_table_whose_columns_are_not_the_nodes_is_refused(columns):
    H = small_tree()
    table = Table(np.zeros((2, len(columns))), columns)
    with pytest.raises(InputError, match="H.nodes"):
        inf.best_label_set(table, H, "dp")


def test_a_pandas_dataframe_is_read_by_column_name():
    pd = pytest.importorskip("pandas")
    H = small_tree()
    df = pd.DataFrame([{"r": 0.0, "a": -1.0, "b": 5.0, "a1": -1.0, "a2": -1.0}])
    df = df[["r", "b", "a", "a1", "a2"]]
    Z = inf.best_label_set(df, H, "dp")
    assert [v for v, z in zip(H.nodes, Z[0]) if z] == ["r", "b"]
    with pytest.raises(InputError, match="to_numpy"):
        inf.best_label_set(pd.DataFrame(np.zeros((1, len(H)))), H, "dp")


# ---------------------------------------------------------------------- true sets of one sample
def test_one_dimensional_scores_take_a_single_row_true_set():
    H = small_tree()
    s = np.arange(len(H), dtype=float)
    t_row = H.closure(["a1"])  # shape (1, M), as H.closure gives it
    aug, const = inf.loss_augmented_scores(s, H, t_row, "hamming")
    aug1, const1 = inf.loss_augmented_scores(s, H, t_row[0], "hamming")
    assert aug.shape == (len(H),) and isinstance(const, float)
    np.testing.assert_array_equal(aug, aug1)
    assert const == const1
    # and the same as best_label_set with a loss
    Z = inf.best_label_set(s, H, "dp", loss="hamming", true_indicator=t_row)
    np.testing.assert_array_equal(Z, inf.best_label_set(aug, H, "dp"))
    with pytest.raises(ValueError, match="one true set per sample"):
        inf.loss_augmented_scores(s, H, np.vstack([t_row, t_row]), "hamming")


# ---------------------------------------------------------------------- errors name the parameter
def test_method_errors_name_method_and_max_nodes():
    D = hc.Hierarchy.from_edges([("r", "a"), ("r", "b"), ("a", "c"), ("b", "c")])
    with pytest.raises(HierarchyError, match="method='ilp'"):
        inf.LabelSetOracle(D, "dp")
    big = hc.Hierarchy.from_paths([f"L{k}" for k in range(25)])
    with pytest.raises(ProblemTooLargeError, match="method='dp'.*raise max_nodes"):
        inf.best_label_set(np.zeros(len(big)), big, "enumerate")


def test_method_errors_name_the_callers_parameter():
    D = hc.Hierarchy.from_edges([("r", "a"), ("r", "b"), ("a", "c"), ("b", "c")])
    with pytest.raises(HierarchyError) as err:
        inf.LabelSetOracle(D, "dp", param="inference")
    assert "inference='ilp'" in str(err.value) and "method" not in str(err.value)
    big_dag = hc.Hierarchy.from_edges([("r", "a"), ("r", "b")] + [
        (p, f"l{k}") for k in range(20) for p in ("a", "b")])
    with pytest.raises(ProblemTooLargeError) as err:
        inf.LabelSetOracle(big_dag, "enumerate", param="inference")
    message = str(err.value)
    assert "inference='ilp'" in message
    assert "max_nodes" not in message and "method" not in message


# ---------------------------------------------------------------------- scores whose sums overflow
@pytest.mark.parametrize("method", ALL_METHODS)
def test_scores_whose_sums_overflow_are_refused(method):
    H = small_tree()
    for s in (np.full(len(H), 1e308), np.array([1e308, -1e308, 1e308, 1e308, 1e308])):
        with pytest.raises(InputError, match="rescale"):
            inf.best_label_set(s, H, method)
    # divided by a common factor, as the error says, they are fine, with the same best set
    s = np.array([1e308, -1e308, 1e308, -1e308, 1e308])
    Z = inf.best_label_set(s / 1e10, H, method)
    assert [v for v, z in zip(H.nodes, Z) if z] == ["r", "b"]


def test_the_largest_accepted_scores_give_the_exact_set():
    H = hc.Hierarchy.from_edges([("r", "a"), ("r", "b"), ("a", "c"), ("b", "c"), ("a", "d")])
    s = np.array([1.0, -2.0, 1.0, 3.0, -1.5]) * 1e306  # best: r, a, b, c
    sets = inf.enumerate_label_sets(H)
    for method in ("ilp", "lp", "enumerate"):
        Z = inf.best_label_set(s, H, method)
        assert np.isfinite(inf.label_set_scores(s, Z)).all()
        np.testing.assert_array_equal(Z, sets[np.argmax(sets @ (s / 1e306))])
