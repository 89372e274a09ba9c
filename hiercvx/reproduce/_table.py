"""The registry's data types: a reproducible table and a number a paper reports."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..exceptions import HierCVXError, InputError


class DataUnavailable(HierCVXError):
    """A table's data files are not on this machine: ``run_table`` reports the table as
    skipped (``TableResult.skipped``); ``hiercvx reproduce`` exits with this error, naming the
    absent files and how to point at them."""


@dataclass(frozen=True)
class Reported:
    """One cell of a paper's table: its mean and, where the paper gives one, the standard
    deviation over the paper's replications (``None`` for exact rows such as a Bayes error).
    ``resolution``: half a unit in the last digit printed for this cell's mean (its rounding;
    :func:`parse_reported` reads it from the printed text), or ``None`` to use the table's."""

    mean: float
    sd: float | None = None
    resolution: float | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Table:
    """A table of a paper that ``hiercvx reproduce`` can rebuild.

    ``run(replication, quick, seed)`` computes ONE replication and returns its rows, dicts
    with keys ``setting``, ``method``, ``metric``, ``value``; it must depend on ``seed`` only
    (not on ``replication``, which is for messages) so that the numbers do not depend on where
    it runs.  ``reported`` maps ``(setting, method, metric)`` to the paper's :class:`Reported`
    number; ``source`` says where those numbers were read.  ``resolution`` is half a unit in
    the last digit the paper prints (its rounding), added to the spread when comparing;
    ``spread_width`` is how many standard deviations "within the paper's spread" allows.
    ``published_methods`` names rows that only repeat a reported number (nothing runs for
    them): their cells carry it as the paper's, with no number of ours and no verdict.
    ``missing_data()``, when given, says why the table cannot run here (a data file that is
    absent) or returns None; the runner then reports the table as skipped.
    ``partial_data()``, when given, says which part of the table is left out here (its data
    files absent, named with the folder they were looked for in) while the rest runs, or
    returns None; the runner prints it under the table's header.
    ``optional_data(quick)``, when given, maps each data set that a run (``quick`` or not) uses
    when its files are present, named as the ``setting`` of its rows, to None when present here,
    else why it is left out (its files, and the folder they were looked for in).  Checkpoints
    record the data sets present, ``--resume`` refuses replications made with others, and the
    header's "left out" is read from the rows (it then takes the place of ``partial_data``).
    """

    name: str
    title: str
    paper: str
    reference: str
    source: str
    run: Callable[[int, bool, int], list[dict]]
    metrics: tuple[str, ...]
    reported: Mapping[tuple[str, str, str], Reported]
    paper_replications: int
    resolution: float
    quick_replications: int = 2
    protocol: str = ""
    quick_protocol: str = ""
    notes: str = ""
    settings: tuple[str, ...] = field(default=())
    missing_data: Callable[[], str | None] | None = None
    partial_data: Callable[[], str | None] | None = None
    optional_data: Callable[[bool], Mapping[str, str | None]] | None = None
    published_methods: tuple[str, ...] = ()
    # |ours - paper| <= 2 sd: the usual two-standard-deviation band, about 95% of a normal spread
    spread_width: float = 2.0

    def paper_value(self, setting: str, method: str, metric: str) -> Reported | None:
        return self.reported.get((setting, method, metric))


def parse_reported(text: str, metrics: tuple[str, ...]) -> dict[tuple[str, str, str], Reported]:
    """Read a block of ``setting | method | cell | cell ...`` lines, one cell per metric,
    each cell ``mean`` or ``mean (sd)``, into ``{(setting, method, metric): Reported}``, each
    with the rounding of its printed mean (``printed_rounding``).
    Keeping the paper's numbers as text in the layout they are printed in makes them easy
    to check against the paper."""
    out = {}
    for line in text.strip().splitlines():
        setting, method, *cells = (part.strip() for part in line.split("|"))
        if len(cells) != len(metrics):
            raise InputError(f"reported row {line!r} has {len(cells)} cells, expected {len(metrics)}")
        for metric, cell in zip(metrics, cells):
            mean, _, sd = cell.partition("(")
            out[(setting, method, metric)] = Reported(
                float(mean), float(sd.rstrip(")")) if sd else None, printed_rounding(mean))
    return out


def printed_rounding(number: str) -> float:
    """Half a unit in the last digit of ``number`` as printed: 0.0005 for ``0.545``, 0.05 for
    ``68.4``, 0.5 for ``12``."""
    _, _, decimals = number.strip().partition(".")
    return 0.5 * 10.0 ** -len(decimals)
