#!/usr/bin/env python3
"""Where full Newton's iterations go, from a `weft-run --newton-trace` file.

usage: scripts/newton_trace.py TRACE.csv [--window N]

Prints, for each window of N steps (default 50) and for the whole run:
- steps, Newton iterations per step (all attempts), steps halved, PCG
  iterations per Newton iteration;
- over the attempts at the full time step that converged: their mean
  iterations, how often the first update was cut (step fraction < 1), its
  mean step fraction, the relative residual after it, the cuts of later
  updates per attempt, and the iterations taken once the residual was below
  1e-2;
- the attempts at a halved step: how many, their mean iterations, and how
  often their first update was cut.
The columns are those of docs/scenes.md, "Newton's trace".
"""
import csv
import sys


def lists(text):
    return [float(x) for x in text.split(";") if x]


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def summary(label, rows):
    steps = sorted({r["step"] for r in rows})
    if not steps:
        return
    iterations = sum(r["iterations"] for r in rows)
    halved = {r["step"] for r in rows if r["halvings"] > 0}
    full = [r for r in rows if r["halvings"] == 0 and r["accepted"] and r["fractions"]]
    halves = [r for r in rows if r["halvings"] > 0 and r["fractions"]]
    pcg = sum(sum(r["pcg"]) for r in rows)
    print(f"{label}: {len(steps)} steps, {iterations / len(steps):.2f} Newton it./step, {len(halved)} halved, "
          f"{pcg / iterations if iterations else float('nan'):.0f} PCG it. per Newton iteration")
    if full:
        print(f"  full steps converged: {len(full)}, {mean([r['iterations'] for r in full]):.2f} it., "
              f"first update cut in {100 * mean([r['fractions'][0] < 1 for r in full]):.0f} % "
              f"(mean fraction {mean([r['fractions'][0] for r in full]):.2f}, "
              f"residual after it {mean([r['residuals'][0] for r in full if r['residuals']]):.3g}), "
              f"{mean([sum(f < 1 for f in r['fractions'][1:]) for r in full]):.2f} later cuts, "
              f"{mean([sum(x < 1e-2 for x in r['residuals']) for r in full]):.2f} it. below 1e-2")
    if halves:
        print(f"  halved attempts: {len(halves)}, {mean([r['iterations'] for r in halves]):.2f} it., "
              f"first update cut in {100 * mean([r['fractions'][0] < 1 for r in halves]):.0f} %")


def file_and_window(argv, usage):
    """The command line FILE [--window N] of this script and scripts/jacobian_check.py: (FILE, N)."""
    window = 50
    args = list(argv[1:])
    if "--window" in args:
        k = args.index("--window")
        window = int(args[k + 1]) if k + 1 < len(args) else 0
        del args[k:k + 2]
    if len(args) != 1 or window < 1:
        sys.exit(usage.strip())
    return args[0], window


def main(argv):
    path, window = file_and_window(argv, __doc__)
    with open(path, newline="") as f:
        raw = list(csv.DictReader(f))
    if not raw:
        sys.exit(f"{path}: no rows")
    if "fractions" not in raw[0]:
        sys.exit(f"{path}: not a --newton-trace file (no column fractions)")
    rows = [{"step": int(r["step"]), "halvings": int(r["halvings"]), "iterations": int(r["iterations"]),
             "accepted": r["accepted"] == "1", "residuals": lists(r["residuals"]), "fractions": lists(r["fractions"]),
             "pcg": lists(r["pcg"])}
            for r in raw]
    last = max(r["step"] for r in rows)
    for first in range(1, last + 1, window):
        summary(f"steps {first}-{min(first + window - 1, last)}",
                [r for r in rows if first <= r["step"] < first + window])
    summary("all", rows)


if __name__ == "__main__":
    main(sys.argv)
