"""Regenerate the benchmarks page, ``docs/benchmarks.md``, and its figure.

The page has a header (machine, cores, date, commit, where the figures come from) and one
table: each benchmark row with hiercvx's time beside the peer measured in the same run
(LIBLINEAR's Crammer–Singer through scikit-learn's ``LinearSVC(multi_class="crammer_singer")``,
or the certified CVXPY reference solved by CLARABEL), their ratio and the certificate.

Two sources:

``--run``
    runs the quick rows here, now (a few minutes on two cores): the engine rows of
    ``bench_engine.py`` (Cai's hierarchical SVM (4.10) on a 25-node tree against its CVXPY
    reference), the cellcycle_FUN rows of ``bench_sibling_fun.py --quick`` (Wang, Shen & Pan's
    sibling-margin SVM against LIBLINEAR) and of ``bench_orthogonal_engine.py --solvers dual_cd
    --methods orthogonal --quick`` (Zhou, Xiao & Wu's orthogonal transfer against LIBLINEAR);
    ``--imageclef`` adds the ImageCLEF07A rows (LIBLINEAR, ``MulticlassSVC()``,
    ``HierarchicalSVC()``: a few minutes more); ``--labelsets`` adds the label-set rows of
    ``bench_labelsets.py`` and ``bench_nhsvm_labelsets.py`` (``HierarchicalSVC()`` and
    ``NormalizedHierarchicalSVC()`` on the cellcycle_FUN and cellcycle_GO label sets against
    one-vs-rest ``LinearSVC`` over the evaluated nodes, trained in the same run), on a random
    subset of ``--n N`` training rows when the full sets take too long (each row says its
    ``n``); ``--full-nhsvm`` adds ``NormalizedHierarchicalSVC()`` on the full label sets
    (train + valid) of both data sets beside one-vs-rest ``LinearSVC`` (about a quarter of an
    hour more), the issue's target at the field's scale, and beside it one-vs-rest
    ``LinearSVC(loss="hinge")``, the hinge loss NHSVM minimizes (scikit-learn's default is its
    square), with how many of its node problems stopped at ``max_iter`` (its own rows; a few
    minutes more); ``--full-hsvc`` adds ``HierarchicalSVC()`` on the full label sets beside
    one-vs-rest ``LinearSVC`` (cellcycle_GO cut at 2000 passes, :data:`FULL_HSVC`; about
    twelve minutes more), each row with the gap it certified.  The scripts' output is kept in
    ``benchmarks/results/page-run.log``.
``--from-log FILE``
    reads the log ``make bench-targets`` writes (``benchmarks/results/targets.log``): the
    engine rows with ImageCLEF07A, cellcycle_FUN, the cellcycle_GO rows and the full-size
    label-set rows.

Both go through the same parser: a script either prints a row line of its own
(``benchmarks/_rows.py``: ``PAGE-ROW`` and one JSON record, read from any script), or its
printed table is read by the parser written for it; a script that gave no row is listed under
the table as not parsed.  The figure (``benchmarks/figures/speed.png``, shown by the README)
plots the time ratios.

    .venv/bin/python benchmarks/page.py --run [--imageclef] [--labelsets [--n N]] [--full-nhsvm]
        [--full-hsvc]
    .venv/bin/python benchmarks/page.py --from-log benchmarks/results/targets.log
"""

from __future__ import annotations

import argparse
import datetime as _dt
import math
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _rows import read_rows  # noqa: E402  (the row line the scripts print)

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "benchmarks.md"
FIGURE = ROOT / "benchmarks" / "figures" / "speed.png"
RUN_LOG = ROOT / "benchmarks" / "results" / "page-run.log"

#: the quick rows ``--run`` measures: (script, arguments)
QUICK = (
    ("bench_engine.py", ["--repeat", "1"]),
    ("bench_sibling_fun.py", ["--rows", "funcat", "--quick"]),
    ("bench_orthogonal_engine.py", ["--solvers", "dual_cd", "--methods", "orthogonal", "--quick"]),
)
#: the ImageCLEF07A rows ``--run --imageclef`` adds
IMAGECLEF = ("bench_engine.py", ["--imageclef-only"])
#: the label-set rows ``--run --labelsets`` adds (``--n N`` appended for a subset)
LABELSETS = (("bench_labelsets.py", []), ("bench_nhsvm_labelsets.py", []))
#: the full-size NHSVM label-set rows ``--run --full-nhsvm`` adds (with the hinge-loss peer)
FULL_NHSVM = ("bench_nhsvm_labelsets.py", ["--hinge-peer"])
#: the full-size ``HierarchicalSVC()`` label-set rows ``--run --full-hsvc`` adds: cellcycle_FUN
#: at the estimator's own ``max_iter``, cellcycle_GO cut at 2000 passes (about seven minutes;
#: its own ``max_iter`` would take about an hour), each row with the gap it certified
FULL_HSVC = (("bench_labelsets.py", ["--datasets", "cellcycle_FUN"]),
             ("bench_labelsets.py", ["--datasets", "cellcycle_GO", "--max-iter", "2000"]))

LIBLINEAR = "LIBLINEAR Crammer–Singer (`LinearSVC`)"
REFERENCE = "CVXPY reference (CLARABEL)"
ONE_VS_REST = "one-vs-rest"  # how a label-set row's peer starts


class Row(NamedTuple):
    """One line of the table: ours beside the peer timed in the same run."""

    data: str
    ours: str
    seconds: float
    peer: str
    peer_seconds: float
    certificate: str
    script: str


# ------------------------------------------------------------------------------ the machine
def machine() -> dict:
    """CPU model, cores, memory, OS and Python of this machine."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f"{kb / 2**20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "memory": memory,
            "os": f"{platform.system()} {platform.release()}",
            "python": platform.python_version()}


def commit() -> str:
    """The checkout's commit (``+ local changes`` when the tracked files differ from it)."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    head = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return head + (" + local changes" if dirty else "")


# ------------------------------------------------------------------------------ the parser
def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def split_scripts(log: str) -> list[tuple[str, list[str]]]:
    """The log cut at each script invocation (``+ python benchmarks/bench_x.py ...``, as
    ``set -x`` prints it): ``[(command, lines), ...]``."""
    parts, current = [], None
    for line in log.splitlines():
        m = re.match(r"^\++ .*?(benchmarks/bench_\w+\.py.*)$", line)
        if m:
            current = (m.group(1).strip(), [])
            parts.append(current)
        elif current is not None:
            current[1].append(line)
    return parts


def parse_engine(lines, script) -> list[Row]:
    """``bench_engine.py``: the tree rows (ours: the engine's choice, ``auto``) and the
    ImageCLEF07A rows."""
    rows, solvers = [], []
    for line in lines:
        if re.match(r"^\s+row\s+n\s+reference \|", line):
            solvers = [c.split(":")[0].strip() for c in line.split(" | ")[1:-1]]
            continue
        cells = line.split(" | ")
        head = re.match(r"^\s*(.+?)\s+(\d+)\s+([\d.]+)s$", cells[0]) if len(cells) > 2 else None
        if head and solvers:
            label, n, ref = head.group(1), int(head.group(2)), float(head.group(3))
            for name, cell in zip(solvers, cells[1:]):
                if name != "auto":
                    continue
                m = re.match(r"^\s*([\d.]+)s\s+([-+\d.e]+)\s+(\d+)(\*?)\s", cell)
                if m:
                    rows.append(Row(
                        f"Cai HSVM (4.10), 25-node tree, {label}, n = {n}, d = 20",
                        "margin engine (`auto`), tol 1e-8", float(m.group(1)), REFERENCE, ref,
                        f"rel. objective {float(m.group(2)):.1e}"
                        + (", not converged" if m.group(4) else ""), script))
    rows += parse_imageclef(lines, script)
    return rows


def parse_imageclef(lines, script) -> list[Row]:
    """The ImageCLEF07A lines of ``bench_engine.py --imageclef``."""
    peer, out = math.nan, []
    data = "ImageCLEF07A, 10000 × 80, 63 leaves"
    for line in lines:
        m = re.match(r"^\s+LIBLINEAR Crammer-Singer\s+([\d.]+)s", line)
        if m:
            peer = float(m.group(1))
            continue
        m = re.match(r"^\s+(\w+)\(\)\s+([\d.]+)s\s+objective\s+\S+\s+gap\s+(\S+)\s+\(.*?(\d+) "
                     r"iterations.*?(NOT converged)?\)", line)
        if m:
            out.append(Row(data, f"`{m.group(1)}()` (defaults)", float(m.group(2)), LIBLINEAR,
                           peer, f"gap {float(m.group(3)):.1e}"
                           + (", not converged" if m.group(5) else ""), script))
            continue
        m = re.match(r"^\s+Crammer-Singer at LIBLINEAR's objective \(tol (\S+)\)\s+([\d.]+)s", line)
        if m:
            out.append(Row(data, "Crammer–Singer dual to LIBLINEAR's objective", float(m.group(2)),
                           LIBLINEAR, peer, f"gap {float(m.group(1)):.1e}", script))
    return out


def parse_sibling(lines, script) -> list[Row]:
    """``bench_sibling_fun.py``: sibling-margin SVM and HPSI against LIBLINEAR."""
    out, data, peer = [], "", math.nan
    for line in lines:
        m = re.match(r"^(.+?): n=(\d+) d=(\d+) nodes=(\d+)$", line)
        if m:
            data = f"{m.group(1)}, {m.group(2)} × {m.group(3)}, {m.group(4)} nodes"
            continue
        m = re.match(r"^\s+LIBLINEAR Crammer-Singer\s+([\d.]+) s", line)
        if m:
            peer = float(m.group(1))
            continue
        m = re.match(r"^\s+(\w+)\s+([\d.]+) s\s+gap (\S+)\s+(\S+)\s+(converged|warn)", line)
        if m:
            out.append(Row(data, f"`{m.group(1)}()` (defaults)", float(m.group(2)), LIBLINEAR, peer,
                           f"gap {float(m.group(3)):.1e}"
                           + ("" if m.group(5) == "converged" else ", not converged"), script))
    return out


def parse_orthogonal(lines, script) -> list[Row]:
    """``bench_orthogonal_engine.py``: orthogonal transfer / TREELOSS against LIBLINEAR (the
    rows of the data LIBLINEAR ran on; the star and chain rows have no peer)."""
    out, peer = [], {}
    for line in lines:
        if len(line) < 70 or line.startswith("data "):
            continue
        data, what, rest = line[:28].strip(), line[29:59].strip(), line[59:].split()
        if not rest:
            continue
        seconds = _float(rest[0])
        if what.startswith("LinearSVC"):
            peer[data] = seconds
        elif data in peer and len(rest) >= 5:
            method, solver = (what.split() + [""])[:2]
            data_name = re.sub(r"(\d+)x(\d+)$", r"\1 × \2", data.replace(" sp ", " single-path, "))
            out.append(Row(data_name, f"`OrthogonalTransferSVC"
                           f"(method=\"{method}\")` ({solver})", seconds, LIBLINEAR, peer[data],
                           f"gap {_float(rest[3]):.1e}"
                           + ("" if rest[4] == "yes" else ", not converged"), script))
    return out


def parse_go(lines, script) -> list[Row]:
    """``bench_go.py --rows go``: fit and predict on cellcycle_GO (no peer runs there)."""
    out, data = [], "cellcycle_GO"
    for line in lines:
        m = re.match(r"^cellcycle_GO train, (\d+) samples", line)
        if m:
            data = f"cellcycle_GO, {m.group(1)} × 77, GO DAG"
            continue
        m = re.match(r"^\s+(\w+)\s+fit\s+([\d.]+)s\s+predict\s+([\d.]+)s\s+passes\s+(\S+)\s+gap (\S+)"
                     r".*?\((\d+) nodes, (\d+) classes\)(.*)$", line)
        if m:
            certified = "not certified" not in m.group(8)
            out.append(Row(f"{data} ({m.group(6)} nodes, {m.group(7)} classes)",
                           f"`{m.group(1)}(max_iter={m.group(4)})`", float(m.group(2)), "–",
                           math.nan, f"gap {float(m.group(5)):.1e}"
                           + ("" if certified else ", not converged")
                           + f"; predict {float(m.group(3)):.2f} s", script))
    return out


PARSERS = {"bench_engine.py": parse_engine, "bench_sibling_fun.py": parse_sibling,
           "bench_orthogonal_engine.py": parse_orthogonal, "bench_go.py": parse_go}


def parse_row_lines(lines, script) -> list[Row]:
    """The rows a script printed as row lines (``benchmarks/_rows.py``), whatever the script."""
    return [Row(**record, script=script) for record in read_rows(lines)]


def parse_log(log: str) -> tuple[list[Row], list[str]]:
    """Every row of every script in ``log``, and the scripts whose output gave none."""
    rows, missed = [], []
    for command, lines in split_scripts(log):
        script = Path(command.split()[0]).name
        parser = PARSERS.get(script)
        found = parse_row_lines(lines, command) + (parser(lines, command) if parser else [])
        rows += found
        if not found:
            missed.append(command)
    return rows, missed


# ------------------------------------------------------------------------------ running
def _full_extra(script: str) -> list[str]:
    """What a label-set script adds on the full sets: NHSVM's hinge-loss peer."""
    return FULL_NHSVM[1] if script == FULL_NHSVM[0] else []


def run_quick(imageclef: bool, labelsets: bool = False, n: int | None = None,
              full_nhsvm: bool = False, full_hsvc: bool = False) -> str:
    """Run the quick rows (and the ImageCLEF07A rows, the label-set rows on ``n`` training
    rows or all of them, NHSVM and the hierarchical SVM on the full label sets, when asked);
    the log, as ``make bench-targets`` writes its own (date, load, commit, then each script's
    output).  With ``labelsets`` on the full sets (no ``n``) the full-size rows are run once."""
    subset = ["--n", str(n)] if n is not None else []
    full_sets_ran = labelsets and n is None
    runs = (list(QUICK) + ([IMAGECLEF] if imageclef else [])
            + ([(script, args + (subset or _full_extra(script))) for script, args in LABELSETS]
               if labelsets else [])
            + (list(FULL_HSVC) if full_hsvc and not full_sets_ran else [])
            + ([FULL_NHSVM] if full_nhsvm and not full_sets_ran else []))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    log = [_dt.datetime.now(_dt.timezone.utc).strftime("%a %b %d %H:%M:%S UTC %Y"),
           f"load average: {load}", commit().split()[0]]
    for script, args in runs:
        command = [sys.executable, str(Path("benchmarks") / script), *args]
        print("running", " ".join(command[1:]), flush=True)
        out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        log.append("+ " + " ".join(command) + "\n" + out.stdout)
        if out.returncode:
            log.append(f"(exit {out.returncode}) " + out.stderr[-2000:])
    text = "\n".join(log)
    RUN_LOG.parent.mkdir(parents=True, exist_ok=True)
    RUN_LOG.write_text(text)
    return text


# ------------------------------------------------------------------------------ the page
def _seconds(s: float) -> str:
    if not math.isfinite(s):
        return "–"
    return f"{s:.3f} s" if s < 1 else f"{s:.1f} s" if s < 100 else f"{s:.0f} s"


def _ratio(row: Row) -> str:
    if not (math.isfinite(row.peer_seconds) and row.seconds > 0):
        return "–"
    r = row.peer_seconds / row.seconds
    if r >= 1:
        return f"**{r:.0f}× faster**" if r >= 10 else f"{r:.2f}× faster"
    return f"{1 / r:.0f}× slower" if r <= 0.1 else f"{1 / r:.2f}× slower"


def table(rows: list[Row]) -> str:
    """The one table, in Markdown."""
    out = ["| data | hiercvx | time | peer (same run) | peer time | hiercvx vs peer | certificate |",
           "|---|---|---:|---|---:|---|---|"]
    for r in rows:
        out.append(f"| {r.data} | {r.ours} | {_seconds(r.seconds)} | {r.peer} | "
                   f"{_seconds(r.peer_seconds)} | {_ratio(r)} | {r.certificate} |")
    return "\n".join(out)


def figure(rows: list[Row], path: Path = FIGURE) -> Path | None:
    """A bar chart of peer time / hiercvx time per row (log scale), or None without a peer."""
    rows = [r for r in rows if math.isfinite(r.peer_seconds) and r.seconds > 0]
    if not rows:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [f"{r.ours.replace('`', '')}\n{r.data}" for r in rows]
    ratios = [r.peer_seconds / r.seconds for r in rows]
    fig, ax = plt.subplots(figsize=(8, 0.55 * len(rows) + 1.2))
    colors = ["#3b7dd8" if r.peer == REFERENCE else "#4a9a4a" if r.peer.startswith(ONE_VS_REST)
              else "#e07b39" for r in rows]
    ax.barh(range(len(rows)), ratios, color=colors)
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("peer time / hiercvx time (log scale; > 1: hiercvx faster)")
    ax.set_title("blue: vs the certified CVXPY reference; orange: vs LIBLINEAR Crammer–Singer; "
                 "green: vs one-vs-rest LinearSVC over the nodes", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return path


def page(rows, missed, source: str, info: dict, when: str, rev: str, fig: Path | None,
         out: Path = PAGE) -> str:
    """The Markdown of ``docs/benchmarks.md`` (``out``: where it goes, for the figure's link)."""
    lines = [
        "# Benchmarks", "",
        "Generated by `benchmarks/page.py` (`make bench-page`); do not edit by hand.", "",
        f"- **machine:** {info['cpu']}, {info['cores']} cores"
        + (f", {info['memory']}" if info["memory"] else "") + f"; {info['os']}; Python {info['python']}",
        f"- **date:** {when}",
        f"- **commit:** {rev}",
        f"- **source:** {source}", "",
        "Each row times hiercvx and a peer in the same run on the same machine, so their ratio "
        "holds where the absolute times do not. hiercvx's times include building the model "
        "and certifying the answer: *gap* is the certified relative duality gap at the returned "
        "weights, *rel. objective* the difference to the reference's certified optimum. "
        "Label-set rows fit a hierarchical estimator on Clus-HMC label sets beside one-vs-rest "
        "`LinearSVC` over the nodes with a positive in training, trained in the same run; their "
        "*AU(PRC)* is the area under the micro-averaged precision-recall curve of the node "
        "scores on the test split (`hiercvx.metrics.au_prc`), and a row on a random subset of "
        "the training rows says its *n*. `LinearSVC` minimizes the squared hinge loss by "
        "default; a peer `LinearSVC(loss='hinge')` minimizes the hinge loss of the papers' "
        "SVMs, and its row says how many of its node problems stopped at `max_iter` before "
        "LIBLINEAR's tolerance.", "",
        table(rows) if rows else "No rows were measured.", "",
    ]
    if fig is not None:
        rel = os.path.relpath(fig, Path(out).resolve().parent)
        lines += [f"![peer time / hiercvx time per row]({rel})", ""]
    if missed:
        lines += ["Not parsed (the script printed no row this page reads): "
                  + ", ".join(f"`{m}`" for m in missed) + ".", ""]
    lines += [
        "The scripts in `benchmarks/` print more than this table (other problem sizes, every "
        "solver of a method, profiles); each says in its docstring what it measures. "
        "The source line above says which run made this page. `make bench-page` runs "
        "`benchmarks/page.py $(PAGE_SOURCE)`: by default `PAGE_SOURCE=--run`, which measures "
        "the quick rows on this machine now and rewrites this page from them; "
        "`PAGE_SOURCE=\"--run ...\"` with `--imageclef`, `--labelsets` (and `--n N`), "
        "`--full-nhsvm` or `--full-hsvc` adds those rows (`benchmarks/page.py --help`). "
        "`make bench-targets` runs the full rows, including ImageCLEF07A, cellcycle_GO and the "
        "full-size label sets, and writes `benchmarks/results/targets.log`; "
        "`make bench-page PAGE_SOURCE=\"--from-log benchmarks/results/targets.log\"` rewrites "
        "this page from that log without measuring anything. The logs stay in "
        "`benchmarks/results/`, which is not in the repository.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--run", action="store_true", help="measure the quick rows now")
    src.add_argument("--from-log", metavar="FILE", help="parse the log of `make bench-targets`")
    ap.add_argument("--imageclef", action="store_true", help="with --run: the ImageCLEF07A rows too")
    ap.add_argument("--labelsets", action="store_true",
                    help="with --run: the cellcycle_FUN / cellcycle_GO label-set rows too")
    ap.add_argument("--n", type=int, default=None, metavar="N",
                    help="with --labelsets: a random subset of N training rows (the rows say so)")
    ap.add_argument("--full-nhsvm", action="store_true",
                    help="with --run: NormalizedHierarchicalSVC() on the full label sets too")
    ap.add_argument("--full-hsvc", action="store_true",
                    help="with --run: HierarchicalSVC() on the full label sets too")
    ap.add_argument("--out", default=str(PAGE), help=f"the page (default {PAGE.relative_to(ROOT)})")
    ap.add_argument("--figure", default=str(FIGURE),
                    help=f"the figure (default {FIGURE.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    if (args.imageclef or args.labelsets or args.full_nhsvm or args.full_hsvc) and not args.run:
        ap.error("--imageclef, --labelsets, --full-nhsvm and --full-hsvc go with --run")
    if args.n is not None and not args.labelsets:
        ap.error("--n goes with --labelsets")
    if args.n is not None and args.n < 1:
        ap.error("--n must be a positive number of training rows")
    if args.run:
        log = run_quick(args.imageclef, args.labelsets, args.n, args.full_nhsvm, args.full_hsvc)
        flags = ((" --imageclef" if args.imageclef else "")
                 + (" --labelsets" if args.labelsets else "")
                 + (f" --n {args.n}" if args.n is not None else "")
                 + (" --full-nhsvm" if args.full_nhsvm else "")
                 + (" --full-hsvc" if args.full_hsvc else ""))
        source = (f"`benchmarks/page.py --run{flags}` "
                  f"(`make bench-page PAGE_SOURCE=\"--run{flags}\"`): rows measured in that run; "
                  f"the scripts' output went to "
                  f"`{RUN_LOG.relative_to(ROOT)}` on the machine that ran it")
    else:
        log = Path(args.from_log).read_text()
        source = (f"`benchmarks/page.py --from-log {args.from_log}` (`make bench-page "
                  f"PAGE_SOURCE=\"--from-log {args.from_log}\"`): rows read from that log")
    head = log.splitlines()[:3] + ["", "", ""]  # as `make bench-targets` writes: date, load, commit
    when = head[0].strip() or "unknown"
    rev = head[2].strip() if re.fullmatch(r"[0-9a-f]{7,40}", head[2].strip()) else commit()
    rows, missed = parse_log(log)
    fig = figure(rows, Path(args.figure).resolve())
    Path(args.out).write_text(page(rows, missed, source, machine(), when, rev, fig, args.out))
    print(f"wrote {args.out} ({len(rows)} rows)" + (f" and {fig}" if fig else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
