"""scikit-learn habits: ``verbose`` prints progress to stderr without any logging setup, and a
fitted estimator pickles without its solver state."""

from __future__ import annotations

import logging
import pickle

import numpy as np
import pytest
from tqdm import tqdm

import hiercvx as hc
from hiercvx.estimators import (HierarchicalPerceptron, HierarchicalPsiClassifier,
                                HierarchicalSVC, MulticlassSVC, NormalizedHierarchicalSVC,
                                OrthogonalTransferSVC, SequentialHierarchicalSVC, SharedNormSVC,
                                SiblingMarginSVC, TopDownSVC)
from hiercvx.estimators._habits import _BarHandler


@pytest.fixture(scope="module")
def wide():
    """A tree of 15 leaves, 300 samples x 200 features: the coefficients dominate a pickle."""
    H = hc.Hierarchy.from_paths([f"{a}/{b}" for a in "abc" for b in range(5)])
    rng = np.random.default_rng(0)
    leaves = np.array(H.leaves, dtype=object)
    y = leaves[rng.integers(len(leaves), size=300)]
    centers = {v: rng.standard_normal(200) for v in leaves}
    X = np.array([centers[v] for v in y]) + 2.0 * rng.standard_normal((300, 200))
    return X, y, H


@pytest.fixture(scope="module")
def small():
    H = hc.Hierarchy.from_paths(["a/1", "a/2", "b/1", "b/2"])
    rng = np.random.default_rng(1)
    y = np.array(H.leaves, dtype=object)[rng.integers(4, size=40)]
    X = rng.standard_normal((40, 3)) + np.array([[hash(v) % 5 for _ in range(3)] for v in y]) * 0.5
    return X, y, H


@pytest.mark.parametrize("make", [
    lambda H: HierarchicalSVC(hierarchy=H, verbose=True),
    lambda H: NormalizedHierarchicalSVC(hierarchy=H, verbose=1),
    lambda H: OrthogonalTransferSVC(hierarchy=H, verbose=True),
    lambda H: MulticlassSVC(verbose=True),
    lambda H: SharedNormSVC(hierarchy=H, verbose=True),
    lambda H: TopDownSVC(hierarchy=H, verbose=True),
])
def test_verbose_prints_progress_to_stderr(make, small, capsys):
    """Progress lines (iteration, gap, time) and a closing summary on stderr, with no logging
    configured by the caller; nothing on stdout; the logger is left as it was."""
    X, y, H = small
    log = logging.getLogger("hiercvx")
    before = (log.level, log.propagate, list(log.handlers))
    make(H).fit(X, y)
    out, err = capsys.readouterr()
    assert out == ""
    assert "gap" in err and "s]" in err
    assert "%|" not in err   # lines, not a progress bar (that is verbose="progress")
    assert "fitted in" in err.splitlines()[-1]
    assert (log.level, log.propagate, list(log.handlers)) == before


@pytest.mark.parametrize("method", ["pairwise", "cutting_plane", "bcfw"])
def test_nhsvm_pass_lines_show_the_gap_after_each_pass(method, small, capsys):
    """One line per pass, numbered from 1, each with the gap certified after that pass: the
    last is the fit's certified gap (the certificate at zero weights, before any pass, has no
    line of its own)."""
    X, y, H = small
    est = NormalizedHierarchicalSVC(hierarchy=H, verbose=True, max_iter=3, tol=1e-14,
                                    solver_options={"method": method})
    with pytest.warns(Warning):
        est.fit(X, y)
    lines = [line for line in capsys.readouterr().err.splitlines() if " pass " in line]
    assert [line.split(" pass ")[1].split(":")[0] for line in lines] == ["1/3", "2/3", "3/3"]
    assert lines[-1].split("gap ")[1].split()[0] == f"{est.gap_:.2e}"


def test_perceptron_verbose_prints_one_line_per_epoch(small, capsys):
    """Not an optimization, so no gap: its violations per epoch, as lines, no bar."""
    X, y, H = small
    est = HierarchicalPerceptron(hierarchy=H, verbose=True, max_epochs=3).fit(X, y)
    err = capsys.readouterr().err
    epochs = [line for line in err.splitlines() if "perceptron epoch" in line]
    assert [line.split("epoch ")[1].split(":")[0] for line in epochs] == \
        [f"{k}/3" for k in range(1, est.n_iter_ + 1)]
    assert "%|" not in err and "fitted in" in err.splitlines()[-1]


@pytest.mark.parametrize("method, step", [("ipm", "sibling_qp ipm step"),
                                          ("dual_ipm", "dual interior point step"),
                                          ("working_set", "sibling_qp working set round"),
                                          ("alm", "sibling_qp alm step")])
def test_sibling_verbose_prints_the_steps_of_its_method(method, step, small, capsys):
    """Every route of the sibling-margin engine logs its steps, and the certificates it takes
    carry the fit's certified gap; numbered steps count up to ``n_iter_`` (the interior
    points: Newton steps; the ALM: multiplier steps, whose passes ``n_iter_`` counts)."""
    X, y, H = small
    est = SiblingMarginSVC(hierarchy=H, verbose=True, solver_options={"method": method}).fit(X, y)
    lines = capsys.readouterr().err.splitlines()
    steps = [line for line in lines if step in line]
    assert steps and "fitted in" in lines[-1]
    gaps = [line.split("gap ")[1].split()[0].rstrip(",") for line in lines[:-1] if "gap " in line]
    assert f"{est.gap_:.3e}" in gaps
    if method in ("ipm", "dual_ipm"):
        assert [line.split("step ")[1].split("/")[0] for line in steps] == \
            [str(k) for k in range(1, est.n_iter_ + 1)]
    if method == "alm":
        assert steps[-1].split(": ")[1].split(" passes")[0] == str(est.n_iter_)
        assert f"gap {est.gap_:.3e}" in steps[-1]


def test_hpsi_and_sequential_verbose_lines(small, capsys):
    """HPSI: one line per DC step, and a closing line that names what its numbers are (DC
    steps, the psi cost, the largest gap of its convex steps: the psi cost is not convex, no
    gap certifies it).  The sequential SVM: one line per node SVM."""
    X, y, H = small
    est = HierarchicalPsiClassifier(hierarchy=H, verbose=True).fit(X, y)
    lines = capsys.readouterr().err.splitlines()
    dc = [line for line in lines if "solve_dc DC step" in line]
    assert [line.split("DC step ")[1].split("/")[0] for line in dc] == \
        [str(k) for k in range(1, est.n_iter_ + 1)]
    assert f"{est.n_iter_} DC steps, psi cost" in lines[-1]
    assert f"largest certified gap of its convex steps {est.gap_:.3e}" in lines[-1]
    assert "certified relative gap" not in lines[-1]
    est = SequentialHierarchicalSVC(hierarchy=H, verbose=True).fit(X, y)
    nodes = [line for line in capsys.readouterr().err.splitlines() if " node " in line]
    assert len(nodes) == sum(isinstance(m, SiblingMarginSVC) for m in est.node_models_.values())
    assert len(nodes) == 3


def test_quiet_by_default(small, capsys):
    X, y, H = small
    HierarchicalSVC(hierarchy=H).fit(X, y)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("make", [
    lambda H, v: HierarchicalSVC(hierarchy=H, verbose=v),
    lambda H, v: HierarchicalSVC(hierarchy=H, solver="reference", verbose=v),
    lambda H, v: NormalizedHierarchicalSVC(hierarchy=H, verbose=v),
    lambda H, v: OrthogonalTransferSVC(hierarchy=H, verbose=v),
    lambda H, v: OrthogonalTransferSVC(hierarchy=H, solver="reference", verbose=v),
    lambda H, v: MulticlassSVC(verbose=v),
    lambda H, v: SharedNormSVC(hierarchy=H, verbose=v),
    lambda H, v: TopDownSVC(hierarchy=H, verbose=v),
    lambda H, v: HierarchicalPerceptron(hierarchy=H, verbose=v, max_epochs=3),
    lambda H, v: SiblingMarginSVC(hierarchy=H, verbose=v),
    lambda H, v: SequentialHierarchicalSVC(hierarchy=H, verbose=v),
])
@pytest.mark.parametrize("verbose", [-1, 0, False])
def test_verbose_zero_or_negative_is_quiet(make, verbose, small, capfd):
    """Only ``True`` or a number > 0 prints (and ``"progress"`` shows a bar): ``verbose=-1``
    is as quiet as ``0``, on stdout and stderr."""
    X, y, H = small
    make(H, verbose).fit(X, y)
    assert capfd.readouterr() == ("", "")


def test_verbosity_reads_verbose_as_documented():
    from hiercvx.estimators._habits import verbosity

    for quiet in (False, None, 0, -1, -0.5, np.int64(-3), np.bool_(False)):
        assert verbosity(quiet) is False
    for loud in (True, 1, 2, 0.5, np.int64(3), np.bool_(True)):
        assert verbosity(loud) is True
    assert verbosity("progress") == "progress"


def test_multilabel_nhsvm_reference_reports_its_rounds(small, capfd):
    """The cutting-plane reference reports as the other estimators: one line per round with
    its certified gap and a closing line for ``verbose=True`` (no bar of its own); nothing
    for ``verbose=-1``."""
    X, y, H = small
    sets = [{v} if i % 3 else {v, "a/1" if v != "a/1" else "b/1"} for i, v in enumerate(y)]
    est = NormalizedHierarchicalSVC(hierarchy=H, solver="reference", verbose=True).fit(X, sets)
    out, err = capfd.readouterr()
    rounds = [line for line in err.splitlines() if "cutting planes round" in line]
    assert out == "" and "%|" not in err
    assert len(rounds) == est.n_iter_ and "fitted in" in err.splitlines()[-1]
    assert rounds[-1].split("gap ")[1].split(",")[0] == f"{est.gap_:.3e}"
    NormalizedHierarchicalSVC(hierarchy=H, solver="reference", verbose=-1).fit(X, sets)
    assert capfd.readouterr() == ("", "")


def test_progress_bar_handler():
    """``verbose="progress"``: each progress record ticks a tqdm bar, the latest gap its postfix."""
    bar = tqdm(total=None, disable=False, file=open("/dev/null", "w"))
    handler = _BarHandler(bar)
    record = logging.LogRecord("hiercvx.solvers", logging.INFO, __file__, 1,
                               "pass %d: primal %.3g dual %.3g gap %.3e", (3, 2.0, 1.0, 0.5), None)
    handler.emit(record)
    assert bar.n == 1 and "gap 5.000e-01" in bar.postfix
    bar.close()


def test_progress_bar_fit_and_bad_verbose(small, capsys):
    X, y, H = small
    est = HierarchicalSVC(hierarchy=H, verbose="progress").fit(X, y)
    assert est.gap_ <= est.tol
    assert "fitted in" not in capsys.readouterr().err  # the records tick the bar, no lines
    with pytest.raises(ValueError, match="verbose"):
        HierarchicalSVC(hierarchy=H, verbose="loud").fit(X, y)


def test_pickle_without_solver_state(wide):
    """A pickled HierarchicalSVC is within a few times its coefficients and predicts the same;
    ``solver_options={"keep_dual": True}`` keeps the dual variables (a warm start after
    unpickling)."""
    X, y, H = wide
    est = HierarchicalSVC(hierarchy=H).fit(X, y)
    blob = pickle.dumps(est)
    assert len(blob) <= 3 * est.coef_.nbytes
    back = pickle.loads(blob)
    assert np.array_equal(back.predict(X), est.predict(X))
    assert back.result_.dual is None and back.gap_ == est.gap_
    assert back.result_.objective == est.result_.objective
    assert est.result_.dual is not None  # the fitted object itself keeps it (warm starts)
    kept = HierarchicalSVC(hierarchy=H, solver_options={"keep_dual": True}).fit(X, y)
    heavy = pickle.loads(pickle.dumps(kept))
    assert heavy.result_.dual is not None and np.array_equal(heavy.result_.dual, kept.result_.dual)


@pytest.mark.parametrize("make", [
    lambda H: NormalizedHierarchicalSVC(hierarchy=H, max_iter=50, tol=1e-3),
    lambda H: OrthogonalTransferSVC(hierarchy=H, max_iter=200, tol=1e-3),
    lambda H: SiblingMarginSVC(hierarchy=H),
])
def test_other_estimators_pickle_light(make, small):
    X, y, H = small
    est = make(H).fit(X, y)
    back = pickle.loads(pickle.dumps(est))
    assert np.array_equal(back.predict(X), est.predict(X))
    assert back.result_.dual is None and not back.result_.values and not back.result_.history
