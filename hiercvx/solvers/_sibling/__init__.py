"""The pieces of :mod:`hiercvx.solvers.sibling_qp`, the fast certified solvers of the
sibling-margin QP (8) of Wang, Shen & Pan (JMLR 12, 2011), one responsibility per module:

- :mod:`.options` -- :class:`~.options.Options`, every setting with its reason;
- :mod:`.problem` -- the pairs, the functions ``W(gamma)`` of a dual point, live pairs, biases;
- :mod:`.certificate` -- dual feasible points near an iterate and the lower bound (9) there;
- :mod:`.ipm` -- the primal interior point in reduced coordinates;
- :mod:`.dual` -- the dual interior point on the live pairs and on a working set;
- :mod:`.alm` -- dual block coordinate ascent with an augmented Lagrangian;
- :mod:`._kernels` -- the compiled loops of the last two;
- :mod:`.engine` -- :class:`~.engine.SiblingQPSolver`, which picks a method and keeps warm starts.
"""
