"""The swing comparison of 2017 Fig. 3 (second plot), scripted with the weft module.

The patch of examples/scenes/swing.json, pinned along one edge, swings down
under gravity. Its motion is mostly rigid rotation, which strain-rate
damping leaves alone and Rayleigh damping (beta = 4e-3 s, the counterpart of
the same stretch damping) does not. The script runs the scene three times
(no damping, strain-rate, Rayleigh), prints each run's peak kinetic energy
against the undamped run's, and plots kinetic energy over time with
matplotlib when it is installed (swing_kinetic_energy.png).

    PYTHONPATH=build/python python3 examples/python/swing_comparison.py [--duration T] [--out DIR]
"""
import argparse
import json
import os

import numpy as np

import weft

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def run(scene, damping, duration):
    scene = json.loads(json.dumps(scene))
    for cloth in scene["cloth"]:
        cloth["damping"] = damping
    sim = weft.Simulation(scene)
    times, kinetic = [0.0], [sim.energies()["kinetic"]]

    def record(s):
        times.append(s.time)
        kinetic.append(s.energies()["kinetic"])

    sim.run(until=duration, callback=record)
    return np.array(times), np.array(kinetic)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=0.5, help="simulated time (s), default 0.5")
    parser.add_argument("--out", default=".", help="directory for the plot (default: .)")
    args = parser.parse_args()
    with open(os.path.join(ROOT, "examples", "scenes", "swing.json")) as f:
        scene = json.load(f)
    scene.pop("output", None)
    strain_rate = scene["cloth"][0]["damping"]
    runs = {
        "none": {"model": "none"},
        "strain-rate": strain_rate,
        "rayleigh (beta 4e-3 s)": {"model": "rayleigh", "beta": 4e-3},
    }
    curves = {name: run(scene, damping, args.duration) for name, damping in runs.items()}
    peak_none = curves["none"][1].max()
    for name, (t, ke) in curves.items():
        print("%-24s peak kinetic energy %.4e J = %.3f x the undamped run's" % (name, ke.max(), ke.max() / peak_none))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot (apt-get install python3-matplotlib)")
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, (t, ke) in curves.items():
        ax.plot(t, ke, label=name)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("kinetic energy (J)")
    ax.set_title("swing.json: damping of a rigid swing (2017 Fig. 3)")
    ax.legend()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "swing_kinetic_energy.png")
    fig.savefig(path, dpi=120, bbox_inches="tight")
    print("wrote " + path)


if __name__ == "__main__":
    main()
