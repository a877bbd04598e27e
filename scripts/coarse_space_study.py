#!/usr/bin/env python3
"""Coarse spaces for the yarn systems, studied outside weft (issue: a linear
solve whose cost per node stays flat; benchmarks/RESULTS.md, "Coarse spaces
that follow the yarns").

Reads the systems that `bench_yarn --write-system DIR` writes (the sphere
drop's last timed step per size: DIR/yarn_N_*.npy) and solves each one by PCG
(tolerance 1e-5, from zero) with several multilevel preconditioners built
here in NumPy/SciPy, all with the same finest-level smoother: one symmetric
block Gauss-Seidel sweep by yarns (exact solves of the warp yarns, then the
weft yarns, three colour classes per family), as weft's
`"multilevel_smoother": "yarn-lines"`. Two right-hand sides: the step's own,
and a random filtered vector (the slow modes all present).

Coarse spaces (the prolongator is the tentative one smoothed by one damped
block-Jacobi step, ω = 4 / (3 · 1.1 λ), λ from 15 power iterations):

  nodes       weft's: aggregates of 3 × 3 crossings, the six rigid-body modes
              and the two arc-length modes of each node (K = 8);
  yarns       runs of 6 nodes along each warp yarn carry two modes (the
              displacement along the yarn's tangent, and its arc length s_a),
              runs along each weft yarn the same with s_b, and 3 × 3 squares
              of crossings carry the displacement along the normal and its two
              tilts; the three families' columns overlap on the positions;
  yarns+quad  the same, with the squares' three quadratic bending modes too
              (also with runs of 8 nodes and squares of 4 × 4: "8/4");
  nodes+linear  weft's aggregates (squares of 3 × 3, or 4 × 4 and 5 × 5 where
              named) with four more modes (K = 12): each yarn family sliding
              along itself by an amount linear across its yarns (the
              displacement along the warp tangent times v, along the weft
              tangent times u, and s_a times v, s_b times u; u, v the
              coordinates along the two tangents from the patch's centre, as
              the rotations, so that every level carries the same modes);
              "+quad" adds the normal displacement times u², uv, v², and
              "+inplane" the tangent displacements times v² and u²;
  nodes+arc, nodes+positions, nodes+shear  the sliding modes in part: only
              s_a times v and s_b times u (K = 10), only the two tangent
              displacements (K = 10), or only their sum, the in-plane shear
              (K = 9; with the rotation about the normal it spans both
              tangent modes where the patch is flat).

Coarser levels (multilevel variants): runs of 3 coarse runs along the same
yarn (or, in the "joined" variants, 2 runs along × 2 neighbouring yarns, or
1 × 3 yarns: coarsening across the yarns too), 3 × 3 squares of squares,
each keeping its family's modes (the R factors of the aggregate's QR),
smoothed by symmetric block Gauss-Seidel
over classes (the yarn families by yarn index mod 3, the squares by parity),
by symmetric block Gauss-Seidel over lines of square aggregates ("lines of
aggregates": the rows of squares by row index mod 3, then the columns by
column index mod 3, each class solved exactly, as the finest level's yarn
lines), or by degree-2 Chebyshev on the aggregates' block Jacobi (degree 4
where named). Where named, the prolongator is the tentative one unsmoothed,
or smoothed with a filtered matrix (the couplings of weak block pairs,
‖A_ij‖_F < θ √(‖A_ii‖_F ‖A_jj‖_F), dropped and their row sums added to the
diagonal) instead of A; "sparsified": each coarse matrix cut to the pattern
of Tᵀ|A|T (T the tentative prolongator), each dropped entry's size added to
its row's diagonal. The coarsest
level (at most 2,000 DoFs) solved exactly. Where named, the cycle is a
W-cycle (each coarse level cycled twice per visit of the level above, the
second time on the residual the first left) or a K-cycle (each coarse level
above the coarsest solved by two steps of flexible CG preconditioned by its
own cycle, Notay and Vassilevski; the outer PCG is then flexible too). "Two-level" variants solve the
first coarse level exactly; the "three levels" variants stop at the third,
one of them leaving the squares unaggregated there, one the runs (which
part of the coarsening loses the two-level rate).

The patch is the sphere drop's regular grid (node j·n + i is the crossing of
warp yarn j and weft yarn i), which this study reads from the node order;
weft's own code takes the yarns from its LineSet instead.

Needs python3-numpy and python3-scipy (apt). Usage:
  build/benchmarks/bench_yarn --sizes 50,100,200 --steps 10 --warmup 3 \
      --no-eigen --no-cholmod --spmv-repeats 0 --write-system DIR
  scripts/coarse_space_study.py DIR --sizes 50,100,200
Prints one line per size and variant: PCG iterations (step rhs, random rhs),
level sizes, the operator complexity (stored entries of all levels over
the finest matrix's), the cycle's work (stored entries a cycle visits, each
level counted as often as the cycle visits it, over the finest matrix's:
the complexity for a V-cycle) and the seconds taken.
"""
import argparse
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

B = 5  # DoFs per yarn node: x, y, z, s_a, s_b


def load(directory, n):
    pre = f"{directory}/yarn_{n}_"
    row_ptr = np.load(pre + "row_ptr.npy")
    values = np.load(pre + "values.npy").reshape(-1, B, B)
    a = sp.bsr_matrix((values, np.load(pre + "col_idx.npy"), row_ptr), shape=(B * (len(row_ptr) - 1),) * 2)
    free = np.load(pre + "free.npy").astype(float)
    s = sp.diags(free)
    filtered = (s @ a.tocsr() @ s + sp.diags(1 - free)).tocsr()  # S A S + (I - S)
    return filtered, free * np.load(pre + "rhs.npy"), free, np.load(pre + "positions.npy")


def pcg(a, b, apply, tol=1e-5, limit=1000, flexible=False):
    x = np.zeros_like(b)
    r = b.copy()
    z = apply(r)
    p = z.copy()
    rz = r @ z
    bound = tol * np.linalg.norm(b)
    for k in range(limit):
        if np.linalg.norm(r) <= bound:
            return k
        ap = a @ p
        step = rz / (p @ ap)
        x += step * p
        r -= step * ap
        z = apply(r)
        rz, previous = r @ z, rz
        # flexible (Polak-Ribiere): z_new . (r_new - r_old) / (z_old . r_old), r_old = r + step * ap
        beta = (rz - (r + step * ap) @ z) / previous if flexible else rz / previous
        p = z + beta * p
    return limit


def node_dofs(nodes):
    return B * np.repeat(nodes, B) + np.tile(np.arange(B), len(nodes))


class ClassGaussSeidel:
    """Symmetric block Gauss-Seidel over DoF classes, each solved exactly."""

    def __init__(self, a, classes):
        self.a = a
        self.classes = [(rows, spla.splu(a[rows][:, rows].tocsc())) for rows in classes if len(rows)]

    def sweep(self, x, b, order):
        for rows, lu in order:
            x[rows] += lu.solve(b[rows] - self.a[rows] @ x)
        return x

    def pre(self, x, b):
        return self.sweep(x, b, self.classes)

    def post(self, x, b):
        return self.sweep(x, b, self.classes[::-1])


def yarn_line_smoother(a, n):
    warp = [np.arange(j * n, j * n + n) for j in range(n)]
    weft = [np.arange(i, n * n, n) for i in range(n)]
    classes = [np.concatenate([node_dofs(line) for line in family[c::3]]) for family in (warp, weft) for c in range(3)]
    return ClassGaussSeidel(a, classes)


def block_inverse(a, blocks):
    rows, cols, vals = [], [], []
    for block in blocks:
        sub = a[block][:, block].toarray()
        alive = np.diag(sub) > 0
        inverse = np.zeros_like(sub)
        if alive.any():
            inverse[np.ix_(alive, alive)] = np.linalg.inv(sub[np.ix_(alive, alive)])
        rows.append(np.repeat(block, len(block)))
        cols.append(np.tile(block, len(block)))
        vals.append(inverse.ravel())
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=a.shape)


class Chebyshev:
    """Chebyshev iteration on D⁻¹A over [λ/8, λ], λ = ‖D⁻¹A‖_∞ (weft's coarse smoother)."""

    def __init__(self, a, blocks, degree=2):
        self.a, self.d, self.degree = a, block_inverse(a, blocks), degree
        self.high = abs(self.d @ a).sum(1).max()

    def apply(self, x, b):
        low = self.high / 8
        theta, delta = (self.high + low) / 2, (self.high - low) / 2
        sigma = theta / delta
        rho = 1 / sigma
        d = self.d @ (b - self.a @ x) / theta
        for k in range(self.degree):
            x = x + d
            if k + 1 == self.degree:
                break
            r = self.d @ (b - self.a @ x)
            rho_next = 1 / (2 * sigma - rho)
            d = rho_next * rho * d + 2 * rho_next / delta * r
            rho = rho_next
        return x

    pre = post = apply


def filtered(a, blocks, theta):
    """A without the couplings between weak block pairs (‖A_ij‖_F < θ √(‖A_ii‖_F ‖A_jj‖_F)), each
    dropped row's sum added to its diagonal entry."""
    owner = np.empty(a.shape[0], dtype=np.int64)
    for k, block in enumerate(blocks):
        owner[block] = k
    e = sp.csr_matrix((np.ones(a.shape[0]), (np.arange(a.shape[0]), owner)), shape=(a.shape[0], len(blocks)))
    c = a.tocoo()
    norms = (e.T @ sp.csr_matrix((c.data**2, (c.row, c.col)), shape=a.shape) @ e).tocsr()
    diagonal = np.sqrt(norms.diagonal())
    bi, bj = owner[c.row], owner[c.col]
    pair = np.sqrt(np.asarray(norms[bi, bj]).ravel())
    strong = (bi == bj) | (pair >= theta * np.sqrt(diagonal[bi] * diagonal[bj]))
    kept = sp.csr_matrix((c.data * strong, (c.row, c.col)), shape=a.shape)
    dropped = np.asarray(sp.csr_matrix((c.data * ~strong, (c.row, c.col)), shape=a.shape).sum(1)).ravel()
    return (kept + sp.diags(dropped)).tocsr()


def smoothed(a, tentative, blocks, theta=None):
    if theta == "tentative":
        return tentative.tocsr()
    if theta is not None:
        a = filtered(a, blocks, theta)
    da = (block_inverse(a, blocks) @ a).tocsr()
    v = np.random.default_rng(0).standard_normal(a.shape[0])
    for _ in range(15):
        v = da @ v
        lam = np.linalg.norm(v)
        v /= lam
    return (tentative - 4.0 / (3.0 * 1.1 * lam) * (da @ tentative)).tocsr()


def tentative(aggregates, fine_dofs):
    """aggregates: (family, key, rows, near-null rows N). Per aggregate N = Q R;
    Q's columns are its coarse DoFs, R its coarse near-null rows."""
    rows, cols, vals, coarse = [], [], [], []
    col = 0
    for family, key, dofs, near_null in aggregates:
        k = near_null.shape[1]
        q, r = np.linalg.qr(near_null)
        if q.shape[1] < k:  # fewer rows than modes
            q = np.hstack([q, np.zeros((q.shape[0], k - q.shape[1]))])
            r = np.vstack([r, np.zeros((k - r.shape[0], k))])
        dependent = np.abs(np.diag(r)) <= 1e-10 * max(np.abs(np.diag(r)).max(), 1e-300)
        q[:, dependent] = 0
        r[dependent, :] = 0
        rows.append(np.repeat(dofs, k))
        cols.append(np.tile(np.arange(col, col + k), len(dofs)))
        vals.append(q.ravel())
        coarse.append((family, key, np.arange(col, col + k), r))
        col += k
    t = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(fine_dofs, col))
    t.eliminate_zeros()
    return t, coarse


def frames(q, n):
    x = q[:, :3].reshape(n, n, 3)
    ta, tb = np.gradient(x, axis=1), np.gradient(x, axis=0)
    ta /= np.linalg.norm(ta, axis=2, keepdims=True)
    tb /= np.linalg.norm(tb, axis=2, keepdims=True)
    normal = np.cross(ta, tb)
    normal /= np.linalg.norm(normal, axis=2, keepdims=True)
    return ta.reshape(-1, 3), tb.reshape(-1, 3), normal.reshape(-1, 3)


def squares(n, side):
    for j0 in range(0, n, side):
        for i0 in range(0, n, side):
            nodes = np.array([j * n + i for j in range(j0, min(n, j0 + side)) for i in range(i0, min(n, i0 + side))])
            yield (j0 // side, i0 // side), nodes


def node_aggregates(q, n, free, linear=False, quadratic=False, inplane_quadratic=False, side=3, sliding="both"):
    """sliding (with linear): "both" modes of each family, or only its "arc" lengths (s_a v, s_b u), or only
    its "positions" (the tangent displacements times v and u), or their sum alone, the in-plane "shear"
    (with the rotation about the normal, it spans the two position modes on a flat patch)."""
    center = q[:, :3].mean(0)
    ta, tb, normal = frames(q, n)
    out = []
    linear_modes = {"both": 4, "arc": 2, "positions": 2, "shear": 1}[sliding] if linear else 0
    for key, nodes in squares(n, side):
        x, y, z = (q[nodes, :3] - center).T
        m = np.zeros((B * len(nodes), 8 + linear_modes + 3 * quadratic + 2 * inplane_quadratic))
        if linear:  # each yarn family sliding along itself by an amount linear across its yarns
            d = q[nodes, :3] - center  # global coordinates, as the rotations: the same modes on every level
            u = np.einsum("ij,ij->i", d, ta[nodes])
            v = np.einsum("ij,ij->i", d, tb[nodes])
            for k in range(len(nodes)):
                c = 8
                if sliding == "shear":
                    m[B * k : B * k + 3, c] = ta[nodes[k]] * v[k] + tb[nodes[k]] * u[k]
                elif sliding != "arc":
                    m[B * k : B * k + 3, c] = ta[nodes[k]] * v[k]
                    m[B * k : B * k + 3, c + 1] = tb[nodes[k]] * u[k]
                    c += 2
                if sliding in ("both", "arc"):
                    m[B * k + 3, c] = v[k]
                    m[B * k + 4, c + 1] = u[k]
                if quadratic:  # bending: the normal displacement's quadratic modes
                    for c, f in enumerate((u[k] * u[k], u[k] * v[k], v[k] * v[k])):
                        m[B * k : B * k + 3, 8 + linear_modes + c] = normal[nodes[k]] * f
                if inplane_quadratic:  # in-plane bending of each family across its yarns
                    m[B * k : B * k + 3, 8 + linear_modes + 3 * quadratic] = ta[nodes[k]] * v[k] * v[k]
                    m[B * k : B * k + 3, 9 + linear_modes + 3 * quadratic] = tb[nodes[k]] * u[k] * u[k]
        o = B * np.arange(len(nodes))
        for c in range(3):
            m[o + c, c] = 1
        m[o + 1, 3], m[o + 2, 3], m[o + 0, 4], m[o + 2, 4], m[o + 0, 5], m[o + 1, 5] = -z, y, z, -x, -y, x
        m[o + 3, 6] = m[o + 4, 7] = 1
        dofs = node_dofs(nodes)
        out.append((2, key, dofs, m * free[dofs][:, None]))
    return out


def yarn_aggregates(q, n, free, run=6, side=3, quadratic=False):
    ta, tb, normal = frames(q, n)
    out = []
    for family, tangent, arc in ((0, ta, 3), (1, tb, 4)):
        for yarn in range(n):
            for start in range(0, n, run):
                along = np.arange(start, min(n, start + run))
                nodes = yarn * n + along if family == 0 else along * n + yarn
                m = np.zeros((B * len(nodes), 2))
                for k, i in enumerate(nodes):
                    m[B * k : B * k + 3, 0] = tangent[i]
                    m[B * k + arc, 1] = 1
                dofs = node_dofs(nodes)
                out.append((family, (yarn, start // run), dofs, m * free[dofs][:, None]))
    center = q[:, :3].mean(0)
    for key, nodes in squares(n, side):
        m = np.zeros((B * len(nodes), 6 if quadratic else 3))
        for k, i in enumerate(nodes):
            d = q[i, :3] - center
            u, v = d @ ta[i], d @ tb[i]
            modes = [1, u, v] + ([u * u, u * v, v * v] if quadratic else [])
            for c, f in enumerate(modes):
                m[B * k : B * k + 3, c] = normal[i] * f
        dofs = node_dofs(nodes)
        out.append((2, key, dofs, m * free[dofs][:, None]))
    return out


def coarser(aggregates, run=3, side=3, across=1):
    """Joins `run` consecutive runs of `across` neighbouring yarns, and side × side squares."""
    groups = {}
    for family, key, dofs, r in aggregates:
        g = (family, key[0] // across, key[1] // run) if family < 2 else (family, key[0] // side, key[1] // side)
        groups.setdefault(g, []).append((dofs, r))
    return [(g[0], g[1:], np.concatenate([m[0] for m in ms]), np.vstack([m[1] for m in ms])) for g, ms in groups.items()]


def coarse_line_classes(aggregates):
    """Lines of square aggregates along each family's direction (rows, then columns), each family by index mod 3."""
    classes = {}
    for family, key, dofs, _ in aggregates:
        for direction in (0, 1):
            classes.setdefault((direction, key[direction] % 3), []).append(dofs)
    return [np.concatenate(v) for _, v in sorted(classes.items())]


def coarse_classes(aggregates):
    classes = {}
    for family, key, dofs, _ in aggregates:
        c = (family, key[0] % 3) if family < 2 else (family, key[0] % 2, key[1] % 2)  # yarn index mod 3, parity
        classes.setdefault(c, []).append(dofs)
    return [np.concatenate(v) for _, v in sorted(classes.items())]


def hierarchy(a, fine_smoother, aggregates, two_level, coarse_smoother, coarsest=2000, levels_at_most=None,
              run=3, side=3, across=1, point=False, degree=2, theta=None, sparsify=False, gamma=1, kcycle=False):
    """gamma: coarse cycles per level (1: V-cycle, 2: W-cycle, each on the residual the last one left);
    kcycle: each coarse level above the coarsest solved by two steps of flexible CG preconditioned by its
    own cycle (Notay and Vassilevski's K-cycle; a nonlinear preconditioner, so the outer PCG must be
    flexible)."""
    levels = []
    level_matrix = a
    blocks = [node_dofs(np.array([i])) for i in range(a.shape[0] // B)]
    while True:
        t, coarse = tentative(aggregates, level_matrix.shape[0])
        p = smoothed(level_matrix, t, blocks, theta)
        if not levels:
            smoother = fine_smoother
        elif coarse_smoother == "lines":
            smoother = ClassGaussSeidel(level_matrix, coarse_line_classes(previous))
        elif coarse_smoother == "gauss-seidel":
            smoother = ClassGaussSeidel(level_matrix, coarse_classes(previous))
        else:
            smoother = Chebyshev(level_matrix, blocks, degree)
        levels.append((level_matrix, p, smoother))
        fine_matrix = level_matrix
        level_matrix = (p.T @ level_matrix @ p).tocsr()
        if sparsify:  # keep Tᵀ|A|T's pattern; each dropped entry's size added to its row's diagonal (still SPD)
            pattern = (abs(t).T @ abs(fine_matrix) @ abs(t)).tocsr()
            pattern.data[:] = 1.0
            kept = level_matrix.multiply(pattern).tocsr()
            dropped = (level_matrix - kept).tocsr()
            level_matrix = (kept + sp.diags(np.asarray(abs(dropped).sum(1)).ravel())).tocsr()
        d = level_matrix.diagonal()
        level_matrix = (level_matrix + sp.diags((d <= 1e-12 * d.max()).astype(float))).tocsr()  # inactive DoFs
        blocks = [np.array([i]) for i in range(level_matrix.shape[0])] if point else [c[2] for c in coarse]
        previous = coarse
        if two_level or level_matrix.shape[0] <= coarsest or len(levels) + 1 == levels_at_most:
            break
        aggregates = coarser(coarse, run, side, across)
    lu = spla.splu(level_matrix.tocsc())

    matrices = [lv[0] for lv in levels] + [level_matrix]

    def two_fcg_steps(level, r):
        """Two steps of flexible CG on level `level` from zero, preconditioned by its cycle."""
        m = matrices[level]
        c = cycle(level, r)
        v = m @ c
        rho1, alpha1 = c @ v, c @ r
        r2 = r - alpha1 / rho1 * v
        if np.linalg.norm(r2) <= 0.25 * np.linalg.norm(r):
            return alpha1 / rho1 * c
        d = cycle(level, r2)
        w = m @ d
        g, beta, alpha2 = d @ v, d @ w, d @ r2
        rho2 = beta - g * g / rho1
        return (alpha1 / rho1 - g * alpha2 / (rho1 * rho2)) * c + alpha2 / rho2 * d

    def cycle(level, r):
        if level == len(levels):
            return lu.solve(r)
        m, p, smoother = levels[level]
        x = smoother.pre(np.zeros_like(r), r)
        rc = p.T @ (r - m @ x)
        if kcycle and level + 1 < len(levels):
            e = two_fcg_steps(level + 1, rc)
        else:
            e = cycle(level + 1, rc)
            for _ in range(gamma - 1 if level + 1 < len(levels) else 0):
                e = e + cycle(level + 1, rc - matrices[level + 1] @ e)
        x = x + p @ e
        return smoother.post(x, r)

    sizes = [mat.shape[0] for mat in matrices]
    complexity = sum(mat.nnz for mat in matrices) / a.nnz
    # stored entries a cycle visits, over the finest matrix's (each coarse level γ times per visit of the one above)
    visits = 2 if kcycle else gamma
    work = sum(min(visits**k, visits ** (len(levels) - 1)) * mat.nnz for k, mat in enumerate(matrices)) / a.nnz
    return (lambda r: cycle(0, r)), sizes, complexity, work


# name: (coarse space, two-level, coarse smoother, extra hierarchy settings)
VARIANTS = {
    "nodes, two-level": ("nodes", True, None, {}),
    "yarns, two-level": ("yarns", True, None, {}),
    "nodes, V-cycle, Chebyshev": ("nodes", False, "chebyshev", {}),
    "yarns, V-cycle, Gauss-Seidel": ("yarns", False, "gauss-seidel", {}),
    "yarns+quad, V-cycle, Gauss-Seidel": ("yarns+quad", False, "gauss-seidel", {}),
    "yarns+quad, V-cycle, Chebyshev": ("yarns+quad", False, "chebyshev", {}),
    "yarns, three levels, Gauss-Seidel": ("yarns", False, "gauss-seidel", {"levels_at_most": 3}),
    "yarns, three levels, squares kept on the third": ("yarns", False, "gauss-seidel", {"levels_at_most": 3, "side": 1}),
    "yarns, three levels, runs kept on the third": ("yarns", False, "gauss-seidel", {"levels_at_most": 3, "run": 1}),
    "yarns+quad, V-cycle, Gauss-Seidel, runs of 3 yarns joined": ("yarns+quad", False, "gauss-seidel", {"across": 3, "run": 1}),
    "yarns+quad, V-cycle, Gauss-Seidel, 2 x 2 runs joined": ("yarns+quad", False, "gauss-seidel", {"across": 2, "run": 2}),
    "yarns+quad (runs of 8, squares of 4), V-cycle, Gauss-Seidel, 2 x 2 runs joined":
        ("yarns+quad 8/4", False, "gauss-seidel", {"across": 2, "run": 2}),
    "yarns+quad (runs of 8, squares of 4), V-cycle, Chebyshev, 2 x 2 runs joined":
        ("yarns+quad 8/4", False, "chebyshev", {"across": 2, "run": 2}),
    "nodes, V-cycle, Chebyshev, point Jacobi below the finest level": ("nodes", False, "chebyshev", {"point": True}),
    "yarns+quad (runs of 8, squares of 4), V-cycle, Chebyshev, 2 x 2 runs joined, point Jacobi below the finest level":
        ("yarns+quad 8/4", False, "chebyshev", {"across": 2, "run": 2, "point": True}),
    "nodes+linear, two-level": ("nodes+linear", True, None, {}),
    "nodes+linear, V-cycle, Chebyshev": ("nodes+linear", False, "chebyshev", {}),
    "nodes+linear, V-cycle, Gauss-Seidel": ("nodes+linear", False, "gauss-seidel", {}),
    "nodes+linear, V-cycle, Chebyshev of degree 4": ("nodes+linear", False, "chebyshev", {"degree": 4}),
    "nodes+linear, V-cycle, lines of aggregates": ("nodes+linear", False, "lines", {}),
    "nodes, V-cycle, lines of aggregates": ("nodes", False, "lines", {}),
    "nodes+linear, three levels, lines of aggregates": ("nodes+linear", False, "lines", {"levels_at_most": 3}),
    "nodes+linear+quad, V-cycle, Chebyshev": ("nodes+linear+quad", False, "chebyshev", {}),
    "nodes+linear+quad+inplane, V-cycle, Chebyshev": ("nodes+linear+quad+inplane", False, "chebyshev", {}),
    "nodes+linear (squares of 4), V-cycle, lines of aggregates": ("nodes+linear 4", False, "lines", {}),
    "nodes+linear (squares of 5), V-cycle, lines of aggregates": ("nodes+linear 5", False, "lines", {}),
    "nodes+linear, V-cycle, lines of aggregates, tentative prolongator": ("nodes+linear", False, "lines",
                                                                          {"theta": "tentative"}),
    "nodes+linear, V-cycle, lines of aggregates, prolongator smoothed by A filtered at 0.1": (
        "nodes+linear", False, "lines", {"theta": 0.1}),
    "nodes+linear, V-cycle, lines of aggregates, prolongator smoothed by A filtered at 0.3": (
        "nodes+linear", False, "lines", {"theta": 0.3}),
    "nodes+linear, V-cycle, lines of aggregates, coarse matrices sparsified to the tentative pattern": (
        "nodes+linear", False, "lines", {"sparsify": True}),
    "nodes+arc sliding (K = 10), two-level": ("nodes+arc", True, None, {}),
    "nodes+position sliding (K = 10), two-level": ("nodes+positions", True, None, {}),
    "nodes+arc sliding (K = 10), V-cycle, lines of aggregates": ("nodes+arc", False, "lines", {}),
    "nodes+position sliding (K = 10), V-cycle, lines of aggregates": ("nodes+positions", False, "lines", {}),
    "nodes+shear (K = 9), two-level": ("nodes+shear", True, None, {}),
    "nodes+shear (K = 9), V-cycle, lines of aggregates": ("nodes+shear", False, "lines", {}),
    "nodes+shear (K = 9, squares of 4), V-cycle, lines of aggregates": ("nodes+shear 4", False, "lines", {}),
    "nodes+shear (K = 9, squares of 4), W-cycle, lines of aggregates": ("nodes+shear 4", False, "lines",
                                                                         {"gamma": 2}),
    "nodes+shear (K = 9, squares of 4), K-cycle, lines of aggregates": ("nodes+shear 4", False, "lines",
                                                                         {"kcycle": True}),
    "nodes, W-cycle, Chebyshev": ("nodes", False, "chebyshev", {"gamma": 2}),
    "nodes+shear (K = 9), W-cycle, lines of aggregates": ("nodes+shear", False, "lines", {"gamma": 2}),
    "nodes, W-cycle, lines of aggregates": ("nodes", False, "lines", {"gamma": 2}),
    "nodes+shear+inplane (K = 11), two-level": ("nodes+shear+inplane", True, None, {}),
    "nodes+shear+inplane (K = 11), V-cycle, lines of aggregates": ("nodes+shear+inplane", False, "lines", {}),
    "nodes+shear+quad (K = 12), two-level": ("nodes+shear+quad", True, None, {}),
}
SPACES = {
    "nodes": lambda q, n, f: node_aggregates(q, n, f),
    "nodes+linear": lambda q, n, f: node_aggregates(q, n, f, linear=True),
    "nodes+arc": lambda q, n, f: node_aggregates(q, n, f, linear=True, sliding="arc"),
    "nodes+positions": lambda q, n, f: node_aggregates(q, n, f, linear=True, sliding="positions"),
    "nodes+shear": lambda q, n, f: node_aggregates(q, n, f, linear=True, sliding="shear"),
    "nodes+shear+inplane": lambda q, n, f: node_aggregates(q, n, f, linear=True, sliding="shear",
                                                           inplane_quadratic=True),
    "nodes+shear+quad": lambda q, n, f: node_aggregates(q, n, f, linear=True, sliding="shear", quadratic=True),
    "nodes+shear 4": lambda q, n, f: node_aggregates(q, n, f, linear=True, sliding="shear", side=4),
    "nodes+linear 4": lambda q, n, f: node_aggregates(q, n, f, linear=True, side=4),
    "nodes+linear 5": lambda q, n, f: node_aggregates(q, n, f, linear=True, side=5),
    "nodes+linear+quad": lambda q, n, f: node_aggregates(q, n, f, linear=True, quadratic=True),
    "nodes+linear+quad+inplane": lambda q, n, f: node_aggregates(q, n, f, linear=True, quadratic=True,
                                                                 inplane_quadratic=True),
    "yarns": lambda q, n, f: yarn_aggregates(q, n, f),
    "yarns+quad": lambda q, n, f: yarn_aggregates(q, n, f, quadratic=True),
    "yarns+quad 8/4": lambda q, n, f: yarn_aggregates(q, n, f, run=8, side=4, quadratic=True),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory", help="the folder bench_yarn --write-system wrote")
    parser.add_argument("--sizes", default="50,100,200", help="crossings per side, comma-separated")
    parser.add_argument("--variants", default=",".join(str(i) for i in range(len(VARIANTS))),
                        help="indices into the variant list, comma-separated (default: all): "
                        + "; ".join(f"{i} {name}" for i, name in enumerate(VARIANTS)))
    args = parser.parse_args()
    names = list(VARIANTS)
    chosen = [names[int(i)] for i in args.variants.split(",")]
    rng = np.random.default_rng(1)
    for n in [int(s) for s in args.sizes.split(",")]:
        a, b, free, q = load(args.directory, n)
        random = free * rng.standard_normal(len(b))
        fine = yarn_line_smoother(a, n)
        for name in chosen:
            start = time.time()
            space, two_level, coarse_smoother, settings = VARIANTS[name]
            apply, sizes, complexity, work = hierarchy(a, fine, SPACES[space](q, n, free), two_level,
                                                       coarse_smoother, **settings)
            flexible = settings.get("kcycle", False)
            print(f"{n}² | {name} | {pcg(a, b, apply, flexible=flexible)} | "
                  f"{pcg(a, random, apply, flexible=flexible)} | {sizes} | {complexity:.2f} | {work:.2f} | "
                  f"{time.time() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
