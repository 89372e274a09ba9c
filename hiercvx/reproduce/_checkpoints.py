"""The finished replications of a table kept under ``--out``: writing them, and reading them
back only when they are whole, well-formed and made with the data present here."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from ..exceptions import InputError
from ._table import Table

#: the keys of every row a replication returns (``Table.run``)
ROW_KEYS = ("setting", "method", "metric", "value")


def hiercvx_version() -> str:
    try:
        return metadata.version("hiercvx")
    except metadata.PackageNotFoundError:  # pragma: no cover (run from a source tree)
        return "unknown"


def data_sets_present(table: Table, quick: bool) -> list[str] | None:
    """The optional data sets (``Table.optional_data``) whose files are present here, sorted;
    None for a table without optional data."""
    if table.optional_data is None:
        return None
    return sorted(name for name, reason in table.optional_data(quick).items() if reason is None)


def state_text(present, optional) -> str:
    """``with A, without B``: which of the ``optional`` data sets a run had."""
    have = [n for n in optional if n in present]
    lack = [n for n in optional if n not in present]
    return ", ".join(filter(None, [have and "with " + ", ".join(have),
                                   lack and "without " + ", ".join(lack)]))


def left_out(table: Table, quick: bool, rows: list[dict]) -> str | None:
    """What part of ``table`` the ``rows`` lack, and why: with ``Table.optional_data``, each
    optional data set with no row (its files absent here, or absent when the replications read
    back were run), else ``Table.partial_data()``."""
    if table.optional_data is None:
        return table.partial_data() if table.partial_data is not None else None
    settings = {row["setting"] for row in rows}
    texts = [reason or f"the {name} rows: the replications read back were run without its data "
                       "files (present now; rerun without --resume to include them)"
             for name, reason in table.optional_data(quick).items() if name not in settings]
    return "; ".join(texts) or None


def row_problem(row, table: Table) -> str | None:
    """What is wrong with one stored row, or None.  A value is a number: NaN or an infinity is
    kept as a run returned it (a metric undefined on one replication)."""
    if not isinstance(row, dict):
        return f"a row is {type(row).__name__}, not an object"
    if set(row) != set(ROW_KEYS):
        lack = [k for k in ROW_KEYS if k not in row]
        extra = [str(k) for k in row if k not in ROW_KEYS]
        return (f"a row has keys {sorted(map(str, row))}, not {list(ROW_KEYS)}"
                + (f" (missing {', '.join(lack)})" if lack else "")
                + (f" (unexpected {', '.join(extra)})" if extra else ""))
    for key in ROW_KEYS[:3]:
        if not isinstance(row[key], str):
            return f"a row's {key} is {row[key]!r}, not a string"
    value = row["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"a row's value is {value!r}, not a number"
    if row["metric"] not in table.metrics:
        return f"a row's metric {row['metric']!r} is not one of the table's {list(table.metrics)}"
    if table.settings and row["setting"] not in table.settings:
        return f"a row's setting {row['setting']!r} is not one of the table's"
    return None


@dataclass
class Kept:
    """One checkpoint read back: its rows, the hiercvx version that computed them and the
    optional data sets present when they were computed (None: not recorded)."""

    rows: list[dict]
    version: str | None
    data_sets: list[str] | None


class Checkpoints:
    """Finished replications of one table, one JSON file each in ``out/<name>.replications/``,
    so that an interrupted run (a killed job, a preempted cluster) loses at most the
    replications in flight: :func:`run_table` with ``resume=True`` reads them back instead of
    running them again.  A file names its table, ``quick``, ``seed``, replication and
    replication seed; it also records the hiercvx version that computed it and the optional
    data sets present (``Table.optional_data``).  Files are written whole (a temporary file,
    then a rename).  A file that is there but unreadable, disagrees with its name or holds no
    or malformed rows is refused (:meth:`load`) rather than skipped or run again silently."""

    def __init__(self, out, table: Table, quick: bool, seed: int):
        self.table = table
        self.dir = Path(out) / f"{table.name}.replications"
        self.key = {"table": table.name, "quick": bool(quick), "seed": int(seed)}

    def path(self, r: int) -> Path:
        return self.dir / f"{'quick' if self.key['quick'] else 'full'}-seed{self.key['seed']}-r{r:04d}.json"

    def _damaged(self, r: int, problem: str) -> InputError:
        return InputError(f"checkpoint {self.path(r)} is damaged: {problem}; delete it and run "
                          f"the same command with --resume to run replication {r} again (or "
                          "give another --out)")

    def load(self, r: int, replication_seed: int) -> Kept | None:
        """Replication ``r`` as kept, or None when its file is not there.

        Raises
        ------
        InputError
            The file is there but cannot be read as a checkpoint of this run; the message names
            it and says to delete it to run the replication again.
        """
        try:
            with open(self.path(r)) as fh:
                data = json.load(fh)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self._damaged(r, f"it cannot be read ({exc.strerror or exc})") from None
        except ValueError as exc:
            raise self._damaged(r, f"it is not whole JSON ({exc})") from None
        if not isinstance(data, dict):
            raise self._damaged(r, "it holds no JSON object")
        expected = dict(self.key, replication=r, replication_seed=int(replication_seed))
        for k, v in expected.items():
            if data.get(k) != v:
                raise self._damaged(r, f"it records {k} {data.get(k)!r} where this run has {v!r}")
        rows = data.get("rows")
        if not isinstance(rows, list) or not rows:
            raise self._damaged(r, "it holds no rows" if rows == [] else "it has no list of rows")
        for row in rows:
            if (problem := row_problem(row, self.table)) is not None:
                raise self._damaged(r, problem)
        data_sets = data.get("data_sets")
        return Kept(rows, data.get("version"),
                    sorted(data_sets) if isinstance(data_sets, list) else None)

    def read(self, seeds: list[int]) -> dict[int, Kept]:
        """Every kept replication among ``seeds`` (by index), each checked by :meth:`load`,
        with a note on stderr for those computed by another hiercvx version and, for a table
        with optional data, those that do not record which data sets they used."""
        kept = {r: k for r, s in enumerate(seeds) if (k := self.load(r, s)) is not None}
        version = hiercvx_version()
        other = sorted({k.version or "unrecorded" for k in kept.values() if k.version != version})
        if other:
            n = sum(k.version != version for k in kept.values())
            print(f"warning: {n} checkpoint{'s' if n != 1 else ''} in {self.dir} were computed by "
                  f"hiercvx {', '.join(other)}, not {version} (this one); they are read back as "
                  "they are (run without --resume to compute them again)",
                  file=sys.stderr, flush=True)
        unknown = sum(k.data_sets is None for k in kept.values())
        if self.table.optional_data is not None and unknown:
            print(f"warning: {unknown} checkpoint{'s' if unknown != 1 else ''} in {self.dir} do not "
                  "record which data sets they used; they are read back as they are, and what "
                  "is left out is read from their rows", file=sys.stderr, flush=True)
        return kept

    def check_same_data(self, kept: dict[int, Kept], present: list[str] | None) -> None:
        """Refuse replications made with other optional data sets than ``present`` (this run's;
        None: compare the kept ones with each other, as ``collect`` does)."""
        if self.table.optional_data is None:
            return
        optional = list(self.table.optional_data(self.key["quick"]))
        states: dict[tuple, list[int]] = {}
        for r, k in sorted(kept.items()):
            if k.data_sets is not None:
                states.setdefault(tuple(k.data_sets), []).append(r)
        if present is not None:
            other = {s: rs for s, rs in states.items() if list(s) != present}
            if other:
                state, rs = next(iter(other.items()))
                raise InputError(
                    f"{self.dir} keeps replications of {self.table.name} made "
                    f"{state_text(state, optional)} (replication {', '.join(map(str, rs))}), "
                    f"but this run would be {state_text(present, optional)}; --resume would mix "
                    "them: give another --out, point --data at the folder they were made with, "
                    "or run without --resume (with --force when its outputs are to be replaced) "
                    "to start again")
        elif len(states) > 1:
            made = "; ".join(f"replication {', '.join(map(str, rs))} {state_text(s, optional)}"
                             for s, rs in states.items())
            raise InputError(f"{self.dir} keeps replications of {self.table.name} made with "
                             f"different data ({made}); collecting would mix them: delete those "
                             "you do not want, or rerun the table into another --out")

    def kept(self) -> list[int]:
        """The replication numbers whose files of this ``quick`` and ``seed`` are there (by
        name; :meth:`load` checks their contents)."""
        prefix = self.path(0).name.rpartition("-r")[0] + "-r"
        return sorted(int(p.stem[len(prefix):]) for p in self.dir.glob(f"{prefix}*.json")
                      if p.stem[len(prefix):].isdigit())

    def save(self, r: int, replication_seed: int, rows: list[dict], data_sets=None):
        self.dir.mkdir(parents=True, exist_ok=True)
        data = dict(self.key, replication=r, replication_seed=int(replication_seed),
                    version=hiercvx_version(), data_sets=data_sets, rows=rows)
        tmp = self.path(r).with_suffix(".tmp")
        with open(tmp, "w") as fh:
            json.dump(data, fh)
        os.replace(tmp, self.path(r))

