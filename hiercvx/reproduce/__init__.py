"""Papers' tables rebuilt from the package: ``hiercvx reproduce TABLE``.

Each registered :class:`Table` holds the paper's reported numbers (with where they were read)
and a ``run(replication, quick, seed)`` computing one replication; :func:`run_table` runs the
replications through joblib (local processes, or a Dask cluster with ``scheduler=``), prints
ours beside the paper's and writes CSV + PNG.

    >>> from hiercvx.reproduce import run_table
    >>> result = run_table("wang-table3", quick=True, verbose=False)   # doctest: +SKIP
    >>> print(result)                                                  # doctest: +SKIP
"""

from . import cai, flat_hierarchical, hmc_aupr, leaderboard, wang_funcat, zhou
from ._runner import (
                      TABLES,
                      TableResult,
                      aggregate,
                      check_data_dir,
                      format_result,
                      get,
                      names,
                      plot,
                      replication_seeds,
                      run_table,
                      within_spread,
                      write,
)
from ._table import DataUnavailable, Reported, Table, parse_reported

# tables registered beside _runner's (wang, nhsvm): the runner's ``get`` reads this dict
TABLES.update({t.name: t for t in wang_funcat.TABLES + cai.TABLES + flat_hierarchical.TABLES
               + leaderboard.TABLES + zhou.TABLES + hmc_aupr.TABLES})

__all__ = ["TABLES", "DataUnavailable", "Reported", "Table", "TableResult", "aggregate", "check_data_dir",
           "format_result", "get", "names",
           "parse_reported", "plot", "replication_seeds", "run_table", "within_spread", "write"]
