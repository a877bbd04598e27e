#!/usr/bin/env bash
# ctest examples.bench_yarn.write_system: `bench_yarn --write-system DIR`
# writes a linear system that NumPy reads back whole: the BSR arrays agree
# with each other, the matrix is symmetric with positive diagonal blocks on
# the free DoFs, the right-hand side is finite and zero nowhere it should not
# be, the free DoFs are the sphere drop's (every DoF but the arc lengths at
# the yarns' ends), and the positions are the patch's n × n crossings. The
# same run's `--slowest-mode DIR` (with the multilevel preconditioner) writes
# each size's slowest mode: zero on the constrained DoFs, of unit energy in
# the written matrix, the node positions of the written system, its
# eigenvalue in (0, 1] and its peak where the JSON says; and each cycled
# coarse level's slowest mode (a 24 x 24 patch has one). A folder that does
# not exist is refused, naming the option, and so is --slowest-mode without
# the multilevel preconditioner.
#
#   bench_write_system.sh BENCH_YARN WORK_DIR
#
# Needs NumPy (scripts/install-deps.sh installs python3-numpy); without it
# the test is reported as skipped (exit 77) with the reason.
set -u
bench=$1 work=$2
python=/usr/bin/python3
if ! "$python" -c "import numpy" > /dev/null 2>&1; then
  echo "SKIPPED: NumPy is not installed (apt-get install python3-numpy)"
  exit 77
fi
rm -rf "$work"
mkdir -p "$work"
OMP_NUM_THREADS=1 "$bench" --sizes 6,9 --steps 1 --warmup 2 --no-eigen --no-cholmod --spmv-repeats 0 \
 --preconditioner multilevel \
  --write-system "$work" --slowest-mode "$work" > "$work/out.json" 2> "$work/err.txt" || { cat "$work/err.txt"; echo "FAILED: bench_yarn"; exit 1; }
OMP_NUM_THREADS=1 "$bench" --sizes 24 --steps 1 --warmup 2 --no-eigen --no-cholmod --spmv-repeats 0 \
  --preconditioner multilevel --slowest-mode "$work" > "$work/out24.json" 2> "$work/err.txt" ||
  { cat "$work/err.txt"; echo "FAILED: bench_yarn --sizes 24"; exit 1; }
"$python" - "$work" <<'PY' || exit 1
import csv
import json
import sys
import numpy as np

checks = 0
results = {r["n"]: r for name in ("out.json", "out24.json")
           for r in json.load(open(f"{sys.argv[1]}/{name}"))["results"]}
def check(ok, what):
    global checks
    checks += 1
    if not ok:
        sys.exit(f"FAILED: {what}")

for n in (6, 9):
    pre = f"{sys.argv[1]}/yarn_{n}_"
    row_ptr, col_idx = np.load(pre + "row_ptr.npy"), np.load(pre + "col_idx.npy")
    values, rhs = np.load(pre + "values.npy"), np.load(pre + "rhs.npy")
    free, q = np.load(pre + "free.npy"), np.load(pre + "positions.npy")
    nodes, dofs = n * n, 5 * n * n
    check(row_ptr.shape == (nodes + 1,) and row_ptr[0] == 0, f"n = {n}: row_ptr has {row_ptr.shape}")
    check(col_idx.shape == (row_ptr[-1],) and col_idx.min() >= 0 and col_idx.max() < nodes, f"n = {n}: col_idx")
    check(values.shape == (row_ptr[-1], 25) and np.isfinite(values).all(), f"n = {n}: values {values.shape}")
    check(rhs.shape == (dofs,) and np.isfinite(rhs).all() and np.abs(rhs).max() > 0, f"n = {n}: rhs")
    check(free.dtype == np.uint8 and free.shape == (dofs,) and set(np.unique(free)) <= {0, 1}, f"n = {n}: free")
    check(q.shape == (nodes, 5) and np.isfinite(q).all(), f"n = {n}: positions {q.shape}")
    a = np.zeros((dofs, dofs))
    for i in range(nodes):
        for k in range(row_ptr[i], row_ptr[i + 1]):
            j = col_idx[k]
            a[5 * i:5 * i + 5, 5 * j:5 * j + 5] = values[k].reshape(5, 5)
    check(np.abs(a - a.T).max() <= 1e-9 * np.abs(a).max(), f"n = {n}: the matrix is not symmetric")
    # The sphere drop fixes each yarn's arc length at both of its ends: s_a at
    # the first and last crossing of each warp yarn (along x), s_b likewise.
    expected = np.ones((n, n, 5), dtype=np.uint8)
    expected[:, [0, -1], 3] = 0
    expected[[0, -1], :, 4] = 0
    check((free == expected.ravel()).all(), f"n = {n}: the free DoFs are not the scene's")
    f = free.astype(bool)
    check(np.all(np.linalg.eigvalsh(a[np.ix_(f, f)]) > 0), f"n = {n}: the free system is not positive definite")
    grid = q[:, :2].reshape(n, n, 2)
    check(np.allclose(np.diff(grid[:, :, 0], axis=1), np.diff(grid[:, :, 0], axis=1)[0, 0], atol=1e-6)
          and np.allclose(grid[:, 0, 1], grid[:, -1, 1], atol=1e-6), f"n = {n}: positions are not the n x n crossings")
    rows = list(csv.reader(open(f"{sys.argv[1]}/slowest_mode_{n}.csv")))
    check(rows[0] == ["node", "px", "py", "pz", "d0", "d1", "d2", "d3", "d4", "amplitude"], f"n = {n}: {rows[0]}")
    table = np.array(rows[1:], dtype=float)
    check(table.shape == (nodes, 10) and (table[:, 0] == np.arange(nodes)).all(), f"n = {n}: mode rows")
    check(np.allclose(table[:, 1:4], q[:, :3], rtol=1e-7, atol=1e-9), f"n = {n}: mode positions")
    x = table[:, 4:9].ravel()
    check(np.allclose(table[:, 9], np.linalg.norm(table[:, 4:9], axis=1), rtol=1e-7), f"n = {n}: amplitudes")
    check((x[~f] == 0).all(), f"n = {n}: the mode moves constrained DoFs")
    check(abs(x @ (a @ x) - 1) <= 1e-6, f"n = {n}: the mode's energy {x @ (a @ x)} is not 1")
    r = results[n]
    lam = r["slowest_mode_eigenvalue"]
    check(0 < lam <= 1 + 1e-6 and r["slowest_mode_iterations"] >= 1, f"n = {n}: eigenvalue {lam}")
    peak = int(np.argmax(table[:, 9]))
    check(np.allclose(r["slowest_mode_peak_position"], q[peak, :3], rtol=1e-5, atol=1e-9), f"n = {n}: the peak")
# Each cycled coarse level's slowest mode (levels 1 to levels - 2), on the
# nodes: one list entry and one CSV per level, eigenvalues in (0, 1], zero on
# the constrained DoFs; the 24 x 24 patch has at least one such level.
cycled = 0
for n in (6, 9, 24):
    r = results[n]
    nodes = n * n
    levels = r["levels"]
    eigenvalues = r["slowest_mode_level_eigenvalues"]
    check(len(eigenvalues) == max(levels - 2, 0) == len(r["slowest_mode_level_iterations"])
          == len(r["slowest_mode_level_converged"]), f"n = {n}: {levels} levels, {len(eigenvalues)} level modes")
    expected = np.ones((n, n, 5), dtype=bool)
    expected[:, [0, -1], 3] = False
    expected[[0, -1], :, 4] = False
    for level, lam in enumerate(eigenvalues, start=1):
        check(0 < lam <= 1 + 1e-6, f"n = {n}: level {level}'s eigenvalue {lam}")
        rows = list(csv.reader(open(f"{sys.argv[1]}/slowest_mode_{n}_level{level}.csv")))
        check(rows[0] == ["node", "px", "py", "pz", "d0", "d1", "d2", "d3", "d4", "amplitude"], f"n = {n}: {rows[0]}")
        table = np.array(rows[1:], dtype=float)
        check(table.shape == (nodes, 10) and np.isfinite(table).all(), f"n = {n}: level {level}'s mode rows")
        x = table[:, 4:9].ravel()
        check((x[~expected.ravel()] == 0).all() and np.abs(x).max() > 0, f"n = {n}: level {level}'s mode")
        cycled += 1
check(cycled >= 1, "no cycled coarse level")
print(f"bench_yarn --write-system, --slowest-mode: {checks} checks passed ({cycled} coarse levels' modes)")
PY
if "$bench" --sizes 6 --steps 1 --no-eigen --no-cholmod --write-system "$work/absent" > /dev/null 2> "$work/err.txt"; then
  echo "FAILED: --write-system accepted a folder that does not exist"; exit 1
fi
grep -q -- "--write-system" "$work/err.txt" || { cat "$work/err.txt"; echo "FAILED: the refusal does not name --write-system"; exit 1; }
echo "bench_yarn --write-system: a missing folder is refused"
if "$bench" --sizes 6 --steps 1 --no-eigen --no-cholmod --slowest-mode "$work" > /dev/null 2> "$work/err.txt"; then
  echo "FAILED: --slowest-mode ran without the multilevel preconditioner"; exit 1
fi
grep -q -- "--slowest-mode: needs --preconditioner multilevel" "$work/err.txt" ||
  { cat "$work/err.txt"; echo "FAILED: the refusal does not name --slowest-mode"; exit 1; }
echo "bench_yarn --slowest-mode: refused without the multilevel preconditioner"
