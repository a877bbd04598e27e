#!/usr/bin/env python3
"""What full Newton's matrix misses, from a `weft-run --jacobian-check` file.

usage: scripts/jacobian_check.py CHECK.csv [--window N]

Sorts every Newton solve of each window of N steps (default 50) and of the
whole run by its two mismatches m1 = mismatch_1e-2 and m4 = mismatch_1e-4
(docs/scenes.md, "Newton's matrix checked"):
- derivative: m4 < 1e-3 and m1 < 1e-2, A is the residual's derivative and
  the residual smooth over 1 % of the update;
- kink: m4 < 1e-3 and m1 >= 1e-2, or m1 >= 10 m4: the residual's derivative
  changes within 1 % of the update (a kink, something switching on);
- round-off: m4 >= 1e-3 and m4 >= 10 m1, the update is at the residual's
  rounding (a converged iterate);
- off: the rest, both >= 1e-3 and alike (A lacks a term, or a projection).
Also prints the solves with exact Hessians, the median of each mismatch, the
median share of the residual in its 8 largest rows from the 4th iteration
on, and the node (DoF) most often worst at eps 1e-2 and most often holding
the largest residual.
"""
import csv
import sys
from collections import Counter

from newton_trace import file_and_window

HEADER = ("step,time,attempt,iteration,exact_hessians,update_norm,mismatch_1e-2,mismatch_1e-4,worst_node_1e-2,"
          "worst_component_1e-2,worst_node_1e-4,worst_component_1e-4,residual_norm,top8_share,largest_node,"
          "largest_component")


def kind(coarse, fine):
    if fine < 1e-3:
        return "kink" if coarse >= 1e-2 else "derivative"
    if fine >= 10 * coarse:
        return "round-off"
    if coarse >= 10 * fine:
        return "kink"
    return "off"


def median(xs):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else 0.5 * (xs[mid - 1] + xs[mid])


def summary(label, rows):
    if not rows:
        return
    kinds = Counter(kind(r["coarse"], r["fine"]) for r in rows)
    exact = sum(r["exact"] for r in rows)
    late = [r["top8"] for r in rows if r["iteration"] >= 3]
    worst = Counter(r["worst"] for r in rows if kind(r["coarse"], r["fine"]) != "derivative")
    largest = Counter(r["largest"] for r in rows)
    print(f"{label}: {len(rows)} solves, {exact} with exact Hessians; "
          + ", ".join(f"{k} {kinds[k]}" for k in ("derivative", "kink", "off", "round-off"))
          + f"; median mismatch {median([r['coarse'] for r in rows]):.3g} (eps 1e-2), "
          f"{median([r['fine'] for r in rows]):.3g} (eps 1e-4)")
    if late:
        print(f"  from the 4th iteration on: {len(late)} solves, median share of the residual in 8 rows "
              f"{median(late):.3f}")
    if worst:
        node, count = worst.most_common(1)[0]
        print(f"  most often worst at eps 1e-2 (outside 'derivative'): node {node[0]} DoF {node[1]} ({count}x)")
    node, count = largest.most_common(1)[0]
    print(f"  most often the largest residual: node {node[0]} DoF {node[1]} ({count}x)")


def read_rows(path, header, option):
    """The rows of a weft-run `option` file at `path`, whose header must begin with
    `header` (this script's and scripts/jacobian_terms.py's columns; later builds may
    add columns after them)."""
    with open(path, newline="") as f:
        line = f.readline().strip()
        if line != header and not line.startswith(header + ","):
            sys.exit(f"{path}: not a {option} file (header {line!r})")
        f.seek(0)
        raw = list(csv.DictReader(f))
    if not raw:
        sys.exit(f"{path}: no rows")
    return raw


def by_window(items, window, summary):
    """summary(label, items) for each window of `window` steps (items carry "step"), then for all."""
    first_step, last = min(i["step"] for i in items), max(i["step"] for i in items)
    for first in range(first_step, last + 1, window):
        summary(f"steps {first}-{min(first + window - 1, last)}",
                [i for i in items if first <= i["step"] < first + window])
    summary("all", items)


def main(argv):
    path, window = file_and_window(argv, __doc__)
    raw = read_rows(path, HEADER, "--jacobian-check")
    rows = [{"step": int(r["step"]), "iteration": int(r["iteration"]), "exact": r["exact_hessians"] == "1",
             "coarse": float(r["mismatch_1e-2"]), "fine": float(r["mismatch_1e-4"]),
             "worst": (int(r["worst_node_1e-2"]), int(r["worst_component_1e-2"])), "top8": float(r["top8_share"]),
             "largest": (int(r["largest_node"]), int(r["largest_component"]))}
            for r in raw]
    by_window(rows, window, summary)


if __name__ == "__main__":
    main(sys.argv)
