"""Settings of the NHSVM dual solvers (:func:`hiercvx.solvers.nhsvm_fw.solve`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..exceptions import InputError

__all__ = ["Options", "with_keywords"]


@dataclass(frozen=True)
class Options:
    """Settings of :func:`hiercvx.solvers.nhsvm_fw.solve` (the keywords ``tol``, ``max_iter``,
    ``cache_size``, ``max_steps`` of ``solve`` override the fields of the same name).

    Attributes
    ----------
    tol : certified relative gap ``(P - D) / max(1, |P|)`` to stop at; 1e-6, the gap the CVXPY
        references certify by default, so the two sides agree to it.
    max_iter : passes over the data (one certificate each; rounds for cutting planes, epochs
        for SGD); a ``ConvergenceWarning`` when they run out.
    cache_size : vertices kept per sample (pairwise); the multi-plane BCFW of Shah, Kolmogorov
        & Lampert (CVPR 2015) needs a few dozen planes per block.
    cache_idle_passes : pairwise: a cached vertex that has held no mass for more than this many
        certificates leaves its cache (the oracle finds it again when it is needed): a visit
        costs in proportion to the vertices cached and to the union of their nodes, and on
        label sets most vertices found early never regain mass (on cellcycle_FUN's label sets
        5 rather than 10 reached the same certified gap in 6 % less time, on cellcycle_GO's in
        3 % more).
    support_ones_share : pairwise: a block's support is held relative to the all-ones set only
        when that support is the smaller and at most this share of the nodes.  Such a block is
        read through an index; a block held relative to its true set whose support covers
        most nodes is read along whole rows, which is faster: on FunCat label sets (supports
        of most of the 500 nodes either way) the all-ones reference doubled the sweeps' time,
        while on the GO DAG it is a few percent of the 4000 nodes.
    max_steps : pairwise steps per visit of a block before moving on, so one hard block does
        not stall a sweep (Osokin et al., ICML 2016, cap the inner steps likewise).
    inner_sweeps : sweeps over the cached problem between two certificates: a certificate
        costs an exact oracle call per sample, a sweep over the caches costs far less.
    label_set_sweeps : the same with a cheap label-set oracle (the tree DP or enumeration):
        an exact certificate there costs about one sweep and brings a new vertex per sample,
        so fewer sweeps between certificates cost less in total.
    program_sweeps : the same with a DAG program (19) per sample as the oracle: a certificate
        costs about as much as ten sweeps, and the new vertices it brings, not the accuracy on
        the cached problem, decide the progress (more sweeps barely save certificates).
    expensive_refines : with a DAG program (19) per sample as the oracle, extra rounds of
        sweeps over every cached block (``eps / 10`` each) between two certificates; none, for
        the reason of ``program_sweeps``.
    handoff_passes : ``method="auto"`` on label sets and (13): pairwise passes before cutting
        planes take over; enough where the labels carry signal.
    master_max_dimension : the cutting-plane master (an interior point in the node weights)
        factorizes its Newton systems densely while ``M d`` is at most this; beyond, a dense
        Newton system costs more than pairwise passes.
    master_newton : how the master solves its Newton systems: ``"dense"`` (factorized; the
        cutting planes are then used only while ``M d <= master_max_dimension``),
        ``"matrix_free"`` (preconditioned conjugate gradients,
        :mod:`hiercvx.solvers.interior_point_cg`, for any ``M d``) or ``"auto"`` (dense up to
        ``master_max_dimension``, matrix-free above).  Dense: on a FunCat tree's label sets
        (``M d`` about 4e4) every round's master starts its interior point afresh and takes
        tens of Newton steps of a hundred or more conjugate-gradient steps each, far more than
        the pairwise passes it would replace.
    master_max_step_cost : and while one of its Newton steps costs at most this many
        multiply-adds (a fraction of a second).
    eps_share : pairwise: a block leaves the sweeps when its cached gap is at most this share
        of the mean block gap ``(P - D) / n`` of the last certificate; in ``[0, 1)``: from 1
        on, blocks whose gaps are all about the mean would never step.  A larger share visits
        fewer blocks per pass and needs more passes: on cellcycle_FUN's label sets (train +
        valid, ``tol`` 1e-5) 0.3 took 162 passes where 0.1 took 145 and 0.5 took 190, and
        the least time (with ``cache_idle_passes`` 5, 15 % less than 0.1).
    program_eps_share : the same with a DAG program (19) per sample as the oracle, where a
        pass costs mostly the programs, so that more passes cost more than more visits: on
        cellcycle_GO's label sets 0.3 took 62 passes where 0.1 took 47, and 11 % more time.
    primal_average : pairwise: each certificate also evaluates the exact primal at a running
        average of the weights ``W(beta)`` over about the last ``1 / primal_average`` of the
        passes (factor ``1 - primal_average / (k + 1)`` at certificate ``k``), and the best
        primal point is kept; 0 evaluates ``W(beta)`` only.  Near the optimum the dual
        converges fast and the primal at ``W(beta)`` lags (it is nonsmooth: off by about the
        square root of the dual's error) while ``W(beta)`` oscillates around the optimum; an
        average cancels part of that (on FunCat label sets the gap of ``tol`` is certified
        after about a fifth fewer passes), at the price of one more oracle call per pass.
        Not with a DAG program per sample as the oracle: there that call costs as much as
        the pass's sweeps and saved a tenth of the passes.
    ahead : pairwise: each visit first reads the data of the block this many places further
        in the sweep's order (a software prefetch: in random order every block's cached label
        sets and Gram block are cache misses, and reading ahead overlaps them with the current
        block's work); 0 reads nothing ahead.  The iterates are the same either way.
    layout : pairwise: how the sweeps store the weights ``V``: ``"nodes"`` (a row of features
        per node), ``"features"`` (a row of nodes per feature) or ``"auto"`` (by feature when
        at least ``feature_layout_share`` of the blocks to visit are held relative to their
        true set with a support of at least half the nodes).  A visit reads and updates the
        rows of its support: stored by feature, a support of most nodes is read and updated in
        one contiguous multiply-add over the nodes per feature, which vectorizes (on FunCat
        label sets, supports of 400-600 of 615 nodes, a visit took about a third less time);
        stored by node, a small support (the GO DAG's) touches only its own nodes' rows.
    feature_layout_share : see ``layout``.
    batch : pairwise, weights stored by feature, dense rows: consecutive blocks that read every
        node are visited in batches of up to this many: one matrix product gives their node
        products at the batch's start, each block's scores are corrected for the changes of the
        blocks before it, and one more matrix product adds their changes (the same iterates).
        Larger batches cost more corrections per block and, once their rows outgrow the
        processor's caches, more memory traffic (on FunCat label sets, 615 nodes: a visit took
        26 us unbatched, 21 us in batches of 16, 33 us in batches of 32); 1 visits one block at
        a time.
    """

    tol: float = 1e-6
    max_iter: int = 1000
    cache_size: int = 32
    cache_idle_passes: int = 5
    support_ones_share: float = 0.25
    max_steps: int = 50
    inner_sweeps: int = 20
    label_set_sweeps: int = 10
    program_sweeps: int = 10
    expensive_refines: int = 0
    handoff_passes: int = 50
    master_max_dimension: int = 4000
    master_newton: str = "dense"
    master_max_step_cost: float = 4e10
    eps_share: float = 0.3
    program_eps_share: float = 0.1
    primal_average: float = 10.0
    ahead: int = 8
    layout: str = "auto"
    feature_layout_share: float = 0.5
    batch: int = 16


def with_keywords(options: Options | None, **keywords) -> Options:
    """``options`` (default :class:`Options`) with every keyword that is not None set."""
    options = Options() if options is None else options
    if not isinstance(options, Options):
        raise InputError(f"options must be a hiercvx.solvers.nhsvm_fw.Options, got "
                         f"{type(options).__name__}")
    return replace(options, **{k: v for k, v in keywords.items() if v is not None})
