"""Test configuration: hypothesis runs are derandomized so CI is reproducible.

Set HYPOTHESIS_PROFILE=explore to search with fresh random examples (and more of them).
"""

import os

import pytest
from hypothesis import HealthCheck, settings

from hiercvx.solvers import interior_point, margin_dual, working_set

settings.register_profile("ci", derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", deadline=None, max_examples=500,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def passes_only():
    """:class:`hiercvx.solvers.working_set.Options` without the exact support step
    (:mod:`hiercvx.solvers.support_step`: no room for working pairs, no affordable primal
    Newton step).

    A warm-started working set may take that step at its first certificate (the warm start
    paid for it) and so finishes a small model at once; tests of what the passes themselves
    do after a warm start (smoothing's dual phase, as it runs on GO, whose supports are far
    too large for the step) switch it off."""
    no_support = margin_dual.Options(support_max_pairs=0,
                                     interior_point=interior_point.Options(max_dimension=0))
    return working_set.Options(dual=no_support)
