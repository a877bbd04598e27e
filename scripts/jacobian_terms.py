#!/usr/bin/env python3
"""Which kind of element misstates full Newton's matrix, from a `weft-run --jacobian-terms` file.

usage: scripts/jacobian_terms.py TERMS.csv [--window N]

For each window of N steps (default 50) and for the whole run, and for each
kind of element (docs/scenes.md, "Newton's matrix checked"), prints the
median of its share of A dv (`product`) and of its two mismatches m1 =
mismatch_1e-2 and m4 = mismatch_1e-4 (both relative to the whole |A dv|),
and in how many solves it holds the largest m1 and the largest m4 of all
kinds ("blamed"): the term that the solves' mismatches come from. Solves
with exact Hessians and with projected ones are counted apart, since a
projection misstates A on purpose. Where the file has the per-element
columns, each window then lists the three elements (term, nodes) with the
largest own mismatch at 1e-4 (`element_mismatch_1e-4`), with their step
and iteration: a contact pair, a bend, whose own derivative A misstates.
"""

import sys
from collections import OrderedDict

from jacobian_check import by_window, median, read_rows
from newton_trace import file_and_window

HEADER = ("step,time,attempt,iteration,exact_hessians,term,product,mismatch_1e-2,mismatch_1e-4,worst_node_1e-2,"
          "worst_component_1e-2,worst_node_1e-4,worst_component_1e-4")


def solves_of(raw):
    """The rows grouped by solve (step, attempt, iteration), in file order."""
    solves = OrderedDict()
    for r in raw:
        key = (int(r["step"]), int(r["attempt"]), int(r["iteration"]))
        solves.setdefault(key, {"step": key[0], "key": key, "exact": r["exact_hessians"] == "1",
                                "terms": OrderedDict(), "elements": []})
        solves[key]["terms"][r["term"]] = (float(r["product"]), float(r["mismatch_1e-2"]), float(r["mismatch_1e-4"]))
        if r.get("worst_element_1e-4") not in (None, "", "-1"):
            solves[key]["elements"].append((float(r["element_mismatch_1e-4"]), r["term"], r["element_nodes_1e-4"]))
    return list(solves.values())


def summary(label, solves):
    for exact in (True, False):
        chosen = [s for s in solves if s["exact"] == exact]
        if not chosen:
            continue
        print(f"{label}: {len(chosen)} solves with {'exact' if exact else 'projected'} Hessians")
        print(f"  {'term':<18}{'product':>10}{'m1':>11}{'m4':>11}{'blamed m1':>11}{'blamed m4':>11}")
        names = list(chosen[0]["terms"])
        blamed = {name: [0, 0] for name in names}
        for s in chosen:
            for e in (1, 2):
                worst = max(names, key=lambda name: s["terms"][name][e])
                blamed[worst][e - 1] += 1
        for name in names:
            values = [s["terms"][name] for s in chosen]
            print(f"  {name:<18}{median([v[0] for v in values]):>10.3g}{median([v[1] for v in values]):>11.3g}"
                  f"{median([v[2] for v in values]):>11.3g}{blamed[name][0]:>11}{blamed[name][1]:>11}")
        elements = sorted(((e[0], e[1], e[2], s["key"]) for s in chosen for e in s["elements"]), reverse=True)
        for own, term, nodes, (step, attempt, iteration) in elements[:3]:
            print(f"  worst element: {term} nodes {nodes.replace(';', ' ')}: m4 {own:.3g} "
                  f"(step {step}, attempt {attempt}, iteration {iteration})")


def main(argv):
    path, window = file_and_window(argv, __doc__)
    by_window(solves_of(read_rows(path, HEADER, "--jacobian-terms")), window, summary)


if __name__ == "__main__":
    main(sys.argv)
