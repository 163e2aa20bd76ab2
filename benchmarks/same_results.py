"""Check that a speedup changes no result: every result of the benchmark's monitored periods, two dumps compared.

``dump OUT`` writes (pickle) what ``assess_against_reference`` gives on ``bench_monitor.py``'s
20,000-row and 1M-row periods (the same data, written once into ``--data``), without segments,
with the 50 retailers as segments, and with them on the period stripped of its labels: the
decision (alert, reasons, notes, headline check, drift table), the tests, the headline, every
metric and table, the MLflow-keyed metrics and series. Each case is assessed twice and the
second, warm call (the process's caches filled) must equal the first. Floats are kept by their
``repr`` (exact; nan's sign too), arrays by their bytes. ``compare A B`` prints each part that
differs (``==``, not a tolerance) and exits 1 if any does; ``compare --floats A B`` checks that
every value but the floats is equal and says how many floats differ and by how much at worst
(a change meant to move floats by rounding alone).

Run: ``python benchmarks/same_results.py dump /tmp/before.pkl``, change the code, ``dump
/tmp/after.pkl``, then ``compare /tmp/before.pkl /tmp/after.pkl`` (``--rows 20000`` for the
small period only; a fresh PREFECT_HOME as for ``bench_monitor.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import pickle
import sys
from pathlib import Path

import numpy as np
import polars as pl

import bench_monitor as bench


def plain(x):
    """``x`` as nested tuples of plain values that compare exactly with ``==``."""
    if isinstance(x, (float, np.floating)):
        return ("f", repr(float(x)), math.copysign(1.0, float(x)) if math.isnan(float(x)) else 0.0)
    if isinstance(x, np.integer):
        return ("i", int(x))
    if isinstance(x, np.ndarray):
        return ("a", str(x.dtype), x.shape, x.tobytes())
    if isinstance(x, pl.DataFrame):
        return ("df", tuple(x.columns), tuple(map(str, x.dtypes)),
                tuple(tuple(map(plain, c)) for c in x.iter_columns()))
    if isinstance(x, dict):
        return ("d", tuple((plain(k), plain(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, tuple(map(plain, x)))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (type(x).__name__, tuple((f.name, plain(getattr(x, f.name))) for f in dataclasses.fields(x)))
    return x


def results(a) -> dict:
    """The parts of one assessment (``tasks.monitor.Assessment``) compared."""
    p, d = a.assessment, a.assessment.decision
    return {"alert": d.alert, "reasons": plain(list(d.reasons)), "notes": plain(d.notes), "check": plain(d.headline),
            "drift_table": plain(d.table), "tests": plain(p.tests), "headline": plain(p.headline),
            "metrics": plain(p.metrics), "tables": plain(p.tables), "logged": plain(a.metrics),
            "series": plain(a.series)}


def dump(out: Path, data: Path, sizes: list[int]) -> None:
    from metrics_core.monitoring import labelled
    from tasks.monitor import assess_against_reference, plan_period, scan_source_stats

    found = {}
    for rows in sizes:
        for segments in (False, True):
            spec = bench.make_spec(data, rows, dict(bench.SIZES)[rows], segments)
            plan = plan_period.fn(spec, bench.PERIOD)
            ref = scan_source_stats.fn(spec, plan.reference, plan.ref_layout)
            cur = scan_source_stats.fn(spec, plan.current, plan.cur_layout, plan.current_filter)
            cases = {"labelled": cur}
            if segments:
                cases["unlabelled"] = dataclasses.replace(labelled.unlabelled(cur), segments={
                    k: labelled.unlabelled(v) for k, v in cur.segments.items()})
            for case, current in cases.items():
                a = assess_against_reference.fn(spec, ref, current)
                found[(rows, segments, case)] = results(a)
                if results(assess_against_reference.fn(spec, ref, current)) != found[(rows, segments, case)]:
                    sys.exit(f"{rows} rows, segments={segments}, {case}: a second (warm) call differs from the first.")
                print(f"{rows:,} rows, segments={segments}, {case}: {a.assessment.decision.table.height} tests")
    out.write_bytes(pickle.dumps(found))


def compare(a: Path, b: Path) -> int:
    old, new = pickle.loads(a.read_bytes()), pickle.loads(b.read_bytes())
    bad = [(case, part) for case in old for part in old[case] if case not in new or new[case][part] != old[case][part]]
    for case, part in bad:
        print("differs:", case, part)
    print(f"{len(old)} cases compared, {len(bad)} parts differ")
    return 1 if bad else 0


def float_differences(x, y, found: list) -> bool:
    """Whether two :func:`plain` values are alike but for their floats; each pair of unequal floats
    found is appended to ``found``."""
    if isinstance(x, tuple) and isinstance(y, tuple) and x[:1] == y[:1] == ("f",):
        if x != y:
            found.append((float(x[1]), float(y[1])))
        return True
    if isinstance(x, tuple) and isinstance(y, tuple) and len(x) == len(y):
        return all([float_differences(u, v, found) for u, v in zip(x, y)])
    return x == y


def _relative(u: float, v: float) -> float:
    """|u - v| relative to the larger; inf when one is nan or infinite and the other not."""
    if math.isnan(u) or math.isnan(v) or math.isinf(u) or math.isinf(v):
        return 0.0 if (math.isnan(u) and math.isnan(v)) or u == v else math.inf
    return 0.0 if u == v else abs(u - v) / max(abs(u), abs(v))


def compare_floats(a: Path, b: Path) -> int:
    """``compare --floats``: for a change meant to move floats only, whether every other value is
    equal, and how far apart the floats are (count, worst relative difference)."""
    old, new = pickle.loads(a.read_bytes()), pickle.loads(b.read_bytes())
    found, other = [], []
    for case in old:
        for part in old[case]:
            if case not in new or not float_differences(old[case][part], new[case][part], found):
                other.append((case, part))
    for case, part in other:
        print("differs beyond its floats:", case, part)
    worst = max((_relative(u, v) for u, v in found), default=0.0)
    print(f"{len(old)} cases compared: {len(other)} parts differ beyond their floats; {len(found)} floats differ, "
          f"the worst by {worst:.2g} relative")
    return 1 if other else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out", type=Path)
    d.add_argument("--rows", type=int, nargs="*", default=[rows for rows, _ in bench.SIZES])
    d.add_argument("--data", type=Path, default=Path("/tmp/classwatch-same-results"),
                   help="Where the benchmark's data is written once and reused.")
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    c.add_argument("--floats", action="store_true",
                   help="Equal but for floats? Count the floats that differ and the worst relative difference.")
    args = parser.parse_args()
    if args.command == "dump":
        dump(args.out, args.data, args.rows)
    else:
        sys.exit(compare_floats(args.a, args.b) if args.floats else compare(args.a, args.b))
