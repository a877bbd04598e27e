"""Tests of the Python module weft (ctest python.pytest; docs/python.md).

Environment (set by ctest): PYTHONPATH holds the built module, WEFT_RUN is
the weft-run executable, WEFT_SOURCE_DIR the repository root.
"""
import json
import os
import subprocess

import numpy as np
import pytest

import weft

SOURCE = os.environ.get("WEFT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SCENES = os.path.join(SOURCE, "tests", "examples", "scenes")
SHIPPED = os.path.join(SOURCE, "examples", "scenes")


def load(path):
    with open(path) as f:
        return json.load(f)


def vtk_points_and_scalar(path, scalar=None):
    """POINTS (and one point scalar) of a legacy VTK frame written by weft-run."""
    with open(path) as f:
        lines = f.read().split("\n")
    start = next(k for k, line in enumerate(lines) if line.startswith("POINTS "))
    n = int(lines[start].split()[1])
    points = np.array([[float(x) for x in lines[start + 1 + i].split()] for i in range(n)])
    values = None
    if scalar is not None:
        k = lines.index("SCALARS %s double 1" % scalar)
        values = np.array([float(lines[k + 2 + i]) for i in range(n)])
    return points, values


def run_weft_run(scene, tmp_path, every):
    """weft-run on `scene` (a dict) with legacy VTK frames every `every` steps."""
    scene = dict(scene)
    scene["output"] = {"frames": "frames", "every": every, "formats": ["vtk"]}
    path = tmp_path / "scene.json"
    path.write_text(json.dumps(scene))
    subprocess.run([os.environ["WEFT_RUN"], str(path), "--output-dir", str(tmp_path), "--quiet"], check=True)
    return tmp_path / "frames"


@pytest.mark.skipif("WEFT_RUN" not in os.environ, reason="needs weft-run (WEFT_RUN)")
@pytest.mark.parametrize("name", ["determinism_yarn", "determinism_triangle"])
def test_same_bits_as_weft_run(tmp_path, name):
    scene = load(os.path.join(SCENES, name + ".json"))
    frames = run_weft_run(scene, tmp_path, 10)
    scene.pop("output")
    sim = weft.Simulation(scene)
    compared = 0
    for frame in range(int(round(scene["duration"] / scene["time_step"])) // 10 + 1):
        if frame > 0:
            sim.run(until=10 * frame * scene["time_step"])
        assert sim.steps == 10 * frame
        if sim.kind == "yarn":
            x, u = vtk_points_and_scalar(frames / ("frame_%05d_warp.vtk" % frame), "arc_length")
            assert np.array_equal(sim.arc_lengths[:, 0], u)
        else:
            x, _ = vtk_points_and_scalar(frames / ("frame_%05d_cloth.vtk" % frame))
        assert np.array_equal(sim.positions, x), "frame %d differs from weft-run's" % frame
        compared += 1
    assert compared >= 3


@pytest.mark.skipif("WEFT_RUN" not in os.environ, reason="needs weft-run (WEFT_RUN)")
def test_newton_attempts_are_weft_runs_trace(tmp_path):
    """step()'s newton_attempts are the rows of weft-run --newton-trace, bit for bit."""
    scene = load(os.path.join(SCENES, "determinism_triangle.json"))
    scene.pop("output", None)
    path = tmp_path / "scene.json"
    path.write_text(json.dumps(scene))
    trace = tmp_path / "trace.csv"
    subprocess.run([os.environ["WEFT_RUN"], str(path), "--output-dir", str(tmp_path), "--quiet", "--duration", "0.02",
                    "--newton-trace", str(trace)], check=True)
    lines = trace.read_text().splitlines()
    assert lines[0] == "step,time,attempt,h,halvings,converged,accepted,iterations,residuals,fractions,pcg,message"
    rows = [line.split(",") for line in lines[1:]]
    sim = weft.Simulation(scene)
    compared = total = 0
    steps = int(round(0.02 / scene["time_step"]))
    for step in range(1, steps + 1):
        report = sim.step()
        mine = [r for r in rows if int(r[0]) == step]
        assert len(report["newton_attempts"]) == len(mine) >= 1
        assert sum(a["iterations"] for a in report["newton_attempts"]) == report["newton_iterations"]
        assert sum(sum(a["pcg"]) for a in report["newton_attempts"]) == report["pcg_iterations"]
        for a, r in zip(report["newton_attempts"], mine):
            assert a["h"] == float(r[3]) and a["halvings"] == int(r[4]) and a["iterations"] == int(r[7])
            assert a["converged"] == (r[5] == "1") and a["accepted"] == (r[6] == "1")
            assert a["residuals"] == [float(x) for x in r[8].split(";") if x]
            assert a["fractions"] == [float(x) for x in r[9].split(";") if x]
            assert a["pcg"] == [int(x) for x in r[10].split(";") if x] and len(a["pcg"]) == a["iterations"]
            compared += 1
        assert report["newton_attempts"][-1]["accepted"]
        total += report["newton_iterations"]
    assert len(rows) == compared >= steps
    # scripts/newton_trace.py reads the same file.
    out = subprocess.run([os.sys.executable, os.path.join(SOURCE, "scripts", "newton_trace.py"),
                          str(trace)], check=True, capture_output=True, text=True).stdout
    assert "all: %d steps, %.2f Newton it./step" % (steps, total / steps) in out


@pytest.mark.skipif("WEFT_RUN" not in os.environ, reason="needs weft-run (WEFT_RUN)")
def test_jacobian_check_rows_and_script(tmp_path):
    """weft-run --jacobian-check writes one row per Newton solve (a triangle scene here), the
    run itself unchanged, and scripts/jacobian_check.py sorts every one of them."""
    scene = load(os.path.join(SCENES, "determinism_triangle.json"))
    scene.pop("output", None)
    path = tmp_path / "scene.json"
    path.write_text(json.dumps(scene))
    base = [os.environ["WEFT_RUN"], str(path), "--output-dir", str(tmp_path), "--quiet", "--duration", "0.02"]
    subprocess.run(base + ["--newton-trace", str(tmp_path / "plain.csv")], check=True)
    subprocess.run(base + ["--newton-trace", str(tmp_path / "trace.csv"), "--jacobian-check",
                           str(tmp_path / "check.csv"), "--jacobian-terms", str(tmp_path / "terms.csv")],
                   check=True)
    trace = (tmp_path / "trace.csv").read_text().splitlines()
    assert trace == (tmp_path / "plain.csv").read_text().splitlines()
    solves = sum(int(line.split(",")[7]) for line in trace[1:])
    rows = [line.split(",") for line in (tmp_path / "check.csv").read_text().splitlines()[1:]]
    assert len(rows) == solves >= 20
    assert all(r[4] == "0" for r in rows)  # triangles: projected stiffness always
    out = subprocess.run([os.sys.executable, os.path.join(SOURCE, "scripts", "jacobian_check.py"),
                          str(tmp_path / "check.csv")], check=True, capture_output=True, text=True).stdout
    line = [x for x in out.splitlines() if x.startswith("all: ")][0]
    assert line.startswith("all: %d solves, 0 with exact Hessians; " % solves)
    counts = [int(line.split(kind + " ")[1].split(",")[0].split(";")[0])
              for kind in ("derivative", "kink", "off", "round-off")]
    assert sum(counts) == solves
    # --jacobian-terms: per solve, one row per kind of element in contribution order, then "rest".
    kinds = ["triangles", "hinges", "plates", "nodes", "contacts", "rest"]
    terms = [line.split(",") for line in (tmp_path / "terms.csv").read_text().splitlines()[1:]]
    assert len(terms) == len(kinds) * solves
    assert [t[5] for t in terms] == kinds * solves
    for k, r in enumerate(rows):
        assert all(t[:5] == r[:5] for t in terms[len(kinds) * k:len(kinds) * (k + 1)])
    # scripts/jacobian_terms.py blames one kind per solve and eps.
    out = subprocess.run([os.sys.executable, os.path.join(SOURCE, "scripts", "jacobian_terms.py"),
                          str(tmp_path / "terms.csv")], check=True, capture_output=True, text=True).stdout.splitlines()
    at = out.index("all: %d solves with projected Hessians" % solves)
    table = [line.split() for line in out[at + 2:at + 2 + len(kinds)]]
    assert [t[0] for t in table] == kinds
    assert sum(int(t[4]) for t in table) == sum(int(t[5]) for t in table) == solves
    # Python's records are the same rows, bit for bit.
    sim = weft.Simulation(scene)
    sim.jacobian_check = True
    assert sim.jacobian_check
    mine = []
    for _ in range(int(round(0.02 / scene["time_step"]))):
        mine += sim.step()["jacobian_checks"]
    assert len(mine) == len(rows)
    for c, r in zip(mine, rows):
        assert (c["attempt"], c["iteration"], c["exact_hessians"]) == (int(r[2]), int(r[3]), r[4] == "1")
        assert c["update_norm"] == float(r[5]) and c["mismatch"] == [float(r[6]), float(r[7])]
        assert c["worst_node"] == [int(r[8]), int(r[10])] and c["worst_component"] == [int(r[9]), int(r[11])]
        assert c["residual_norm"] == float(r[12]) and c["top8_share"] == float(r[13])
        assert (c["largest_node"], c["largest_component"]) == (int(r[14]), int(r[15]))
    for k, c in enumerate(mine):
        assert [t["name"] for t in c["terms"]] == kinds
        for t, r in zip(c["terms"], terms[len(kinds) * k:len(kinds) * (k + 1)]):
            assert t["product"] == float(r[6]) and t["mismatch"] == [float(r[7]), float(r[8])]
            assert t["worst_node"] == [int(r[9]), int(r[11])] and t["worst_component"] == [int(r[10]), int(r[12])]
            assert t["worst_element"] == [int(r[13]), int(r[16])]
            assert t["element_mismatch"] == [float(r[14]), float(r[17])]
            assert t["element_nodes"] == [[int(n) for n in r[col].split(";") if n] for col in (15, 18)]
            # The worst element has its kind's node count (none named for "rest", and for
            # the plates where their stencils differ in node count).
            count = {"triangles": 3, "hinges": 4, "nodes": 1, "contacts": 4, "rest": 0}.get(t["name"])
            for e in (0, 1):
                found = t["worst_element"][e] >= 0
                assert len(t["element_nodes"][e]) == (count if found else 0) if count is not None \
                    else (len(t["element_nodes"][e]) > 0) == found
        # The rest (what no kind holds) is round-off against the whole product.
        assert c["terms"][-1]["product"] < 1e-12
    # Off by default; the one-step scheme has no Newton matrix to check.
    assert weft.Simulation(scene).step()["jacobian_checks"] == []
    one_step = dict(scene, solver=dict(scene["solver"], newton_iterations=1))
    with pytest.raises(weft.InvalidInput, match="newton_iterations is 1"):
        weft.Simulation(one_step).jacobian_check = True


def test_scene_file_and_dict_agree():
    path = os.path.join(SHIPPED, "hang.json")
    a = weft.Simulation(path)
    b = weft.Simulation(load(path))
    assert a.kind == b.kind == "yarn"
    assert a.node_count == 400
    for _ in range(3):
        ra, rb = a.step(), b.step()
        assert ra == {**rb, "ok": True}
    assert np.array_equal(a.positions, b.positions)
    assert a.steps == 3 and a.time == pytest.approx(0.003)
    e = a.energies()
    assert set(e) == {"kinetic", "elastic", "gravity", "dissipation_potential"}
    assert e["kinetic"] > 0 and e["gravity"] < 0


def test_run_calls_back_every_k_steps():
    sim = weft.Simulation(os.path.join(SHIPPED, "hang.json"))
    seen = []
    taken = sim.run(until=0.012, callback=lambda s: seen.append(s.steps), every=4)
    assert taken == 12
    assert seen == [4, 8, 12]
    with pytest.raises(ValueError, match="every"):
        sim.run(until=0.02, every=0)


def test_pinned_node_follows_its_target():
    sim = weft.Simulation(os.path.join(SHIPPED, "hang.json"))
    x0 = sim.positions
    sim.step()
    pinned = np.flatnonzero(np.all(sim.positions == x0, axis=1))
    assert len(pinned) == 20  # the top edge of the 20 x 20 patch
    node = int(pinned[0])
    target = x0[node] + np.array([1e-3, 0, 5e-4])
    sim.set_pin_targets([node], target.reshape(1, 3))
    sim.step()
    assert np.allclose(sim.positions[node], target, rtol=0, atol=1e-12)
    # Along a path of 20 steps to 1 mm further in x, the nearest free node
    # follows (against the same run with the pin held still).
    free_nodes = np.flatnonzero(~np.isin(np.arange(sim.node_count), pinned))
    near = int(free_nodes[np.argmin(np.linalg.norm(x0[free_nodes] - x0[node], axis=1))])
    still = weft.Simulation(os.path.join(SHIPPED, "hang.json"))
    still.run(until=2 * still.time_step)
    start = sim.positions[node].copy()
    for k in range(1, 21):
        sim.set_pin_targets([node], (start + [5e-5 * k, 0, 0]).reshape(1, 3))
        sim.step()
        still.step()
    assert np.allclose(sim.positions[node], start + [1e-3, 0, 0], rtol=0, atol=1e-12)
    assert sim.positions[near][0] - still.positions[near][0] > 1e-5
    free = int(free_nodes[0])
    with pytest.raises(ValueError, match="set_pin_targets"):
        sim.set_pin_targets([free], target.reshape(1, 3))
    with pytest.raises(ValueError, match="targets"):
        sim.set_pin_targets([node], target)


def test_state_round_trip_and_bad_state():
    sim = weft.Simulation(os.path.join(SHIPPED, "hang.json"))
    x = sim.positions
    x[5] += [1e-4, 0, 0]
    sim.positions = x
    assert np.array_equal(sim.positions, x)
    v = np.zeros((sim.node_count, 3))
    v[7] = [0.01, 0.02, 0.03]
    sim.velocities = v
    assert np.array_equal(sim.velocities, v)
    s = sim.arc_lengths
    sim.arc_lengths = s
    assert np.array_equal(sim.arc_lengths, s)
    assert sim.eil.dtype == np.uint8 and sim.eil.shape == (sim.node_count, 2)
    bad = x.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="not finite"):
        sim.positions = bad
    with pytest.raises(ValueError, match=r"shape \(400, 3\)"):
        sim.velocities = np.zeros((3, 3))
    assert np.array_equal(sim.positions, x)  # unchanged by the refused calls


@pytest.mark.parametrize(
    "path",
    [
        os.path.join(SHIPPED, "hang.json"),  # friction anchors
        os.path.join(SHIPPED, "tablecloth.json"),  # stacked layers: contacts, EIL nodes
        os.path.join(SCENES, "determinism_triangle.json"),
    ],
)
def test_save_and_load_continue_the_run(tmp_path, path):
    a = weft.Simulation(path)
    h = a.time_step
    a.run(until=6 * h)
    a.save(str(tmp_path / "state.checkpoint"))
    a.run(until=12 * h)
    # A new Simulation of the same content (a dict here) continues from the
    # file, with the same bits as the run that saved it.
    b = weft.Simulation(load(path), output_dir=str(tmp_path))
    b.load("state.checkpoint")
    assert b.steps == 6 and b.time == pytest.approx(6 * h)
    b.run(until=12 * h)
    assert b.steps == 12
    assert np.array_equal(a.positions, b.positions)
    assert np.array_equal(a.velocities, b.velocities)
    if a.kind == "yarn":
        assert np.array_equal(a.arc_lengths, b.arc_lengths)
        assert np.array_equal(a.eil, b.eil)
    assert a.energies() == b.energies()


def test_load_refuses_another_scene_and_a_damaged_file(tmp_path):
    a = weft.Simulation(os.path.join(SHIPPED, "hang.json"))
    a.step()
    path = tmp_path / "hang.checkpoint"
    a.save(str(path))
    other = load(os.path.join(SHIPPED, "hang.json"))
    other["gravity"] = [0, 0, -1.0]  # same nodes, other content
    b = weft.Simulation(other)
    with pytest.raises(ValueError, match='written for scene "hang"'):
        b.load(str(path))
    assert b.steps == 0
    c = weft.Simulation(os.path.join(SCENES, "determinism_triangle.json"))
    with pytest.raises(ValueError, match="other content"):
        c.load(str(path))
    damaged = tmp_path / "damaged.checkpoint"
    damaged.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(ValueError, match="damaged.checkpoint"):
        weft.Simulation(os.path.join(SHIPPED, "hang.json")).load(str(damaged))
    with pytest.raises(ValueError, match="cannot be read"):
        a.load(str(tmp_path / "missing.checkpoint"))


def test_triangle_scene_has_no_arc_lengths():
    sim = weft.Simulation(os.path.join(SCENES, "determinism_triangle.json"))
    assert sim.kind == "triangle"
    with pytest.raises(ValueError, match="triangle"):
        sim.arc_lengths


@pytest.mark.parametrize(
    "scene_name, steps, closest, plain_name",
    [
        # Triangle sheets: the upper starts 5 cm above the lower, at rest, and
        # has landed after 0.1 s; the closest pair about the 4 mm thickness.
        ("sheet_drop.json", 100, (0.0036, 0.004), "stvk_swing.json"),
        # Woven patches: the top one starts 5 mm above the bottom one and has
        # landed after 30 ms; the closest pair below the 0.5 mm yarn
        # diameter, no yarns through each other.
        ("drop_on_cloth.json", 60, (0.0004, 0.0005), "hang.json"),
    ],
)
def test_collision_reports_its_contacts(scene_name, steps, closest, plain_name):
    scene = load(os.path.join(SHIPPED, scene_name))
    scene["output"] = {}
    sim = weft.Simulation(scene)
    first = sim.step()
    # No pair before the fall.
    assert first["contact_pairs"] == 0
    assert first["min_contact_distance"] == float("inf")
    for _ in range(steps):
        r = sim.step()
    assert r["contact_pairs"] > 1000
    assert closest[0] < r["min_contact_distance"] < closest[1]
    # A scene without collision reports no contact keys.
    assert "contact_pairs" not in weft.Simulation(load(os.path.join(SHIPPED, plain_name))).step()


def test_bad_scene_dict_names_the_key():
    scene = load(os.path.join(SHIPPED, "hang.json"))
    scene["time_step"] = -1
    with pytest.raises(ValueError, match="time_step"):
        weft.Simulation(scene)
    scene = load(os.path.join(SHIPPED, "hang.json"))
    scene["cloth"][0]["stiffnes"] = {}
    with pytest.raises(ValueError, match="stiffnes"):
        weft.Simulation(scene)
    with pytest.raises(ValueError, match="duration"):
        weft.Simulation({"time_step": 0.001})
    with pytest.raises(ValueError, match="no such file"):
        weft.Simulation(os.path.join(SHIPPED, "no_such_scene.json"))


def test_failed_step_raises_and_keeps_the_state():
    scene = load(os.path.join(SHIPPED, "hang.json"))
    scene["solver"] = {"newton_iterations": 1, "pcg_max_iterations": 2, "adaptive_time_step": False}
    sim = weft.Simulation(scene)
    x = sim.positions
    with pytest.raises(weft.StepError, match="step 1"):
        sim.step()
    assert sim.steps == 0
    assert np.array_equal(sim.positions, x)


def test_write_frame(tmp_path):
    sim = weft.Simulation(os.path.join(SHIPPED, "hang.json"), output_dir=str(tmp_path))
    assert sim.write_frame("frames") == 0
    sim.step()
    assert sim.write_frame("frames") == 1
    for name in ("frame_00001_warp.vtk", "frame_00001_weft.vtp", "frame_00001_warp.obj", "warp.pvd"):
        assert (tmp_path / "frames" / name).stat().st_size > 0
    x, u = vtk_points_and_scalar(tmp_path / "frames" / "frame_00001_warp.vtk", "arc_length")
    assert np.array_equal(x, sim.positions)
    assert np.array_equal(u, sim.arc_lengths[:, 0])


def central_difference(f, x, eps):
    g = np.zeros((np.size(f(x)), x.size))
    for i in range(x.size):
        d = np.zeros_like(x)
        d[i] = eps
        g[:, i] = (np.atleast_1d(f(x + d)) - np.atleast_1d(f(x - d))) / (2 * eps)
    return g


def test_yarn_segment_matches_its_derivatives():
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(5):
        q = np.concatenate([rng.normal(0, 1e-3, 3), [0.0], rng.normal(0, 1e-3, 3), [1e-3 * (1 + rng.random())]])
        v = rng.normal(0, 1e-2, 8)
        k, kd = 2.0, 3e-3
        d = weft.yarn_segment(q, v, k, kd)
        dx, ds = q[4:7] - q[0:3], q[7] - q[3]
        assert d["strain"] == pytest.approx(np.linalg.norm(dx) / ds - 1, rel=1e-12)
        assert d["size"] == pytest.approx(ds, rel=1e-14)
        assert d["strain_rate"] == pytest.approx(d["strain_gradient"] @ v, rel=1e-12)
        energy = lambda x: weft.yarn_segment(x, v, k, kd)["energy"]
        force = lambda x: weft.yarn_segment(x, v, k, kd)["elastic_force"]
        potential = lambda w: weft.yarn_segment(q, w, k, kd)["dissipation_potential"]
        damping = lambda w: weft.yarn_segment(q, w, k, kd)["dissipative_force"]
        assert np.allclose(d["elastic_force"], -central_difference(energy, q, 1e-8)[0], rtol=1e-5, atol=1e-9)
        assert np.allclose(d["elastic_force_jacobian"], central_difference(force, q, 1e-8), rtol=1e-4, atol=1e-3)
        assert np.allclose(d["dissipative_force"], -central_difference(potential, v, 1e-6)[0], rtol=1e-5, atol=1e-12)
        assert np.allclose(d["dissipative_force_jacobian_velocities"], central_difference(damping, v, 1e-6),
                           rtol=1e-5, atol=1e-9)
        checked += 4
    assert checked == 20


def check_element(evaluate, q, v, eps_q, eps_v, atol_jacobian):
    """An element's forces are the negative gradients of its energy and
    dissipation potential, and its Jacobians the derivatives of its forces
    (central differences); returns the number of checks."""
    d = evaluate(q, v)
    energy = lambda x: evaluate(x, v)["energy"]
    force = lambda x: evaluate(x, v)["elastic_force"]
    potential = lambda w: evaluate(q, w)["dissipation_potential"]
    damping = lambda w: evaluate(q, w)["dissipative_force"]
    scale = np.abs(d["elastic_force"]).max()
    assert np.allclose(d["elastic_force"], -central_difference(energy, q, eps_q)[0], rtol=1e-5, atol=1e-6 * scale)
    assert np.allclose(d["elastic_force_jacobian"], central_difference(force, q, eps_q), rtol=1e-4,
                       atol=atol_jacobian)
    scale = np.abs(d["dissipative_force"]).max()
    assert np.allclose(d["dissipative_force"], -central_difference(potential, v, eps_v)[0], rtol=1e-5,
                       atol=1e-6 * scale)
    assert np.allclose(d["dissipative_force_jacobian_velocities"], central_difference(damping, v, eps_v), rtol=1e-5,
                       atol=1e-6 * np.abs(d["dissipative_force_jacobian_velocities"]).max())
    return 4


def yarn_triple(rng, bend):
    """Three nodes along x about 1 mm apart with arc lengths, bent by `bend` (m) in z."""
    q = np.zeros(12)
    for k in range(3):
        q[4 * k:4 * k + 3] = [1e-3 * (k - 1), 0.0, bend if k == 1 else 0.0]
        q[4 * k + 3] = 1e-3 * (k - 1)
    q += np.concatenate([np.append(rng.normal(0, 5e-5, 3), rng.normal(0, 2e-5)) for _ in range(3)])
    return q


def test_yarn_bend_and_shear_match_their_derivatives():
    rng = np.random.default_rng(11)
    checked = 0
    for bend in (1e-4, 3e-4, -2e-4):
        q = yarn_triple(rng, bend)
        v = rng.normal(0, 1e-2, 12)
        d = weft.yarn_bend(q, v, 2e-12, 1e-14)
        assert d["angle"] > 0
        checked += check_element(lambda x, w: weft.yarn_bend(x, w, 2e-12, 1e-14), q, v, 1e-8, 1e-6,
                                 1e-4 * np.abs(d["elastic_force_jacobian"]).max())
    # Shear: the node of the crossing (x1) and its neighbours on the other
    # yarn, x0 before and x2 along y, at an angle off 90 degrees.
    for skew in (0.0, 0.1, -0.2):
        q = np.array([1e-3, 0, 0, 0, 0, 0, 0, 0, 1e-3 * np.sin(skew), 1e-3 * np.cos(skew), 0, 0.0])
        q += rng.normal(0, 3e-5, 12)
        v = rng.normal(0, 1e-2, 12)
        d = weft.yarn_shear(q, v, 1e-3, 1e-4, 1e-7)
        assert d["strain_rate"] == pytest.approx(d["strain_gradient"] @ v, rel=1e-10, abs=1e-12)
        checked += check_element(lambda x, w: weft.yarn_shear(x, w, 1e-3, 1e-4, 1e-7), q, v, 1e-9, 1e-6,
                                 1e-4 * np.abs(d["elastic_force_jacobian"]).max())
    assert checked == 24
    with pytest.raises(ValueError, match="12 values"):
        weft.yarn_bend(np.zeros(8), np.zeros(12), 1.0)


def test_triangle_membrane_matches_its_derivatives():
    rng = np.random.default_rng(5)
    rest = np.array([[0.0, 0.0], [0.01, 0.0], [0.0, 0.01]])
    checked = 0
    for _ in range(5):
        x = np.array([0, 0, 0, 0.01, 0, 0, 0, 0.01, 0.0]) + rng.normal(0, 1e-3, 9)
        v = rng.normal(0, 1e-2, 9)
        lam, mu, lam_d, mu_d = 20.0, 10.0, 0.02, 0.01
        d = weft.triangle_membrane(rest, x, v, lam, mu, lam_d, mu_d)
        assert d["area"] == pytest.approx(5e-5, rel=1e-14)
        energy = lambda y: weft.triangle_membrane(rest, y, v, lam, mu, lam_d, mu_d)["energy"]
        force = lambda y: weft.triangle_membrane(rest, y, v, lam, mu, lam_d, mu_d)["elastic_force"]
        potential = lambda w: weft.triangle_membrane(rest, x, w, lam, mu, lam_d, mu_d)["dissipation_potential"]
        assert np.allclose(d["elastic_force"], -central_difference(energy, x, 1e-7)[0], rtol=1e-5, atol=1e-10)
        assert np.allclose(d["elastic_force_jacobian"], central_difference(force, x, 1e-7), rtol=1e-4, atol=1e-6)
        assert np.allclose(d["dissipative_force"], -central_difference(potential, v, 1e-6)[0], rtol=1e-5,
                           atol=1e-12)
        assert np.allclose(d["strain_rate"], d["strain_gradient"].T @ v, rtol=1e-12, atol=1e-15)
        checked += 4
    assert checked == 20
    # A rigid rotation of the rest triangle: no strain, no force.
    c, s = np.cos(0.7), np.sin(0.7)
    rotated = np.concatenate([[c * p[0], s * p[0], p[1]] for p in rest])
    d = weft.triangle_membrane(rest, rotated, np.zeros(9), lam, mu)
    assert np.allclose(d["strain"], 0, atol=1e-15)
    assert np.allclose(d["elastic_force"], 0, atol=1e-15)


def test_plate_bending_matches_its_derivatives_and_plate_curvature():
    rng = np.random.default_rng(9)
    # A triangle and the vertices across its edges (1 cm cloth patch).
    rest = 0.01 * np.array([[0.0, 0.0], [1.0, 0.0], [0.3, 0.9], [1.3, 0.9], [-0.7, 0.9], [0.7, -0.9]])
    checked = 0
    for _ in range(4):
        a, b, c = rng.normal(0, 20, 3)
        x = np.concatenate([[p[0], p[1], a * p[0] ** 2 + b * p[0] * p[1] + c * p[1] ** 2] for p in rest])
        x = x + rng.normal(0, 1e-5, 18)
        v = rng.normal(0, 1e-2, 18)
        D, nu, Dd = 1e-4, 0.3, 1e-6
        d = weft.plate_bending(rest, x, v, D, nu, Dd)
        energy = lambda y: weft.plate_bending(rest, y, v, D, nu, Dd)["energy"]
        force = lambda y: weft.plate_bending(rest, y, v, D, nu, Dd)["elastic_force"]
        potential = lambda w: weft.plate_bending(rest, x, w, D, nu, Dd)["dissipation_potential"]
        assert np.allclose(d["elastic_force"], -central_difference(energy, x, 1e-8)[0], rtol=1e-5, atol=1e-12)
        assert np.allclose(d["elastic_force_jacobian"], central_difference(force, x, 1e-8), rtol=1e-4, atol=1e-8)
        assert np.allclose(d["dissipative_force"], -central_difference(potential, v, 1e-6)[0], rtol=1e-5,
                           atol=1e-14)
        assert np.allclose(d["strain_rate"], d["strain_gradient"].T @ v, rtol=1e-12, atol=1e-15)
        checked += 4
    assert checked == 16
    # Small slope: b = (2a, 2c, b) of z = a u^2 + b u v + c v^2, and the plate energy density.
    a, b, c = 0.3, -0.2, 0.5
    x = np.concatenate([[p[0], p[1], a * p[0] ** 2 + b * p[0] * p[1] + c * p[1] ** 2] for p in rest])
    d = weft.plate_bending(rest, x, np.zeros(18), 2.0, 0.25)
    assert np.allclose(d["strain"], [2 * a, 2 * c, b], rtol=1e-4)
    tr, det = 2 * a + 2 * c, 4 * a * c - b * b
    assert d["energy"] == pytest.approx(0.5 * 2.0 * d["area"] * (tr * tr - 2 * (1 - 0.25) * det), rel=1e-3)


def test_example_script_runs(tmp_path):
    script = os.path.join(SOURCE, "examples", "python", "swing_comparison.py")
    out = subprocess.run([os.sys.executable, script, "--duration", "0.05", "--out", str(tmp_path)], check=True,
                         capture_output=True, text=True).stdout
    lines = [line for line in out.split("\n") if "peak kinetic energy" in line]
    assert len(lines) == 3
    assert "= 1.000 x" in lines[0]
