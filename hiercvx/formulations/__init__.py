"""CVXPY declarations of the source papers, one module per paper.

``from hiercvx.formulations import multiclass, hsvm`` ; each builder returns a
:class:`hiercvx.ReferenceProblem` whose ``solve()`` returns a certified solution.
"""
