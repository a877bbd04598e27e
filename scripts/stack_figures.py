#!/usr/bin/env python3
"""The stacked-layer figures of benchmarks/RESULTS.md from a weft-run CSV.

usage: scripts/stack_figures.py RUN.csv NODES

Prints: steps, peak EIL share (peak eil_nodes / NODES), mean ms_per_step over
the steps without and with EIL nodes, steps with substeps > 1, mean
newton_iterations, largest one-step rise of kinetic + elastic + gravity
energy, peak kinetic energy and peak max_speed.
"""
import csv
import sys


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__.strip())
    path, nodes = argv[1], int(argv[2])
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{path}: no rows")
    for key in ("eil_nodes", "ms_per_step", "substeps", "newton_iterations", "kinetic_energy", "elastic_energy",
                "gravity_energy", "max_speed"):
        if key not in rows[0]:
            sys.exit(f"{path}: no column {key} (EIL on and a CSV with max_speed are needed)")
    eil = [float(r["eil_nodes"]) for r in rows]
    ms = [float(r["ms_per_step"]) for r in rows]
    without = [m for m, e in zip(ms, eil) if e == 0]
    with_eil = [m for m, e in zip(ms, eil) if e > 0]
    total = [float(r["kinetic_energy"]) + float(r["elastic_energy"]) + float(r["gravity_energy"]) for r in rows]
    rise = max((b - a for a, b in zip(total, total[1:])), default=0.0)
    mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")
    print(f"steps {len(rows)}")
    print(f"peak EIL share {100 * max(eil) / nodes:.1f} %")
    print(f"ms/step without / with EIL nodes {mean(without):.1f} / {mean(with_eil):.1f}")
    print(f"halved {sum(1 for r in rows if float(r['substeps']) > 1)}")
    print(f"Newton it./step {mean([float(r['newton_iterations']) for r in rows]):.2f}")
    print(f"largest energy rise {rise:.1e} J")
    print(f"peak KE {max(float(r['kinetic_energy']) for r in rows):.1e} J")
    print(f"peak speed {max(float(r['max_speed']) for r in rows):.2f} m/s")


if __name__ == "__main__":
    main(sys.argv)
