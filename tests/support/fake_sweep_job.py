"""A fast stand-in for `python -m gui_jax.main` in sweep tests: writes results.json from the flags.

online_SR = 0.1·gamma + 0.2·omega + 0.01·seed; SOP_Score = 0.5. With SWEEP_TEST_SLOW_POINT set to a
workdir name, that point sleeps (so the test can kill the sweep in the middle).
"""
import json
import os
import sys
import time


def main(argv):
    flags, workdir = {}, None
    for a in argv:
        if a.startswith("--workdir="):
            workdir = a.split("=", 1)[1]
        elif a.startswith("--config."):
            k, v = a[len("--config."):].split("=", 1)
            flags[k] = v
    os.makedirs(workdir, exist_ok=True)
    with open(os.path.join(os.path.dirname(workdir), "invocations.log"), "a") as f:
        f.write(os.path.basename(workdir) + "\n")
    if os.environ.get("SWEEP_TEST_SLOW_POINT") == os.path.basename(workdir):
        time.sleep(60)
    sr = 0.1 * float(flags.get("rl.gamma", 0)) + 0.2 * float(flags.get("rl.omega", 0)) + 0.01 * int(flags["seed"])
    with open(os.path.join(workdir, "results.json"), "w") as f:
        # the training jobs' layout: stages in order, then a run profile
        json.dump({"stages": {"sft": {"online_SR": 0.0}, "semi_online_rl": {"online_SR": sr, "SOP_Score": 0.5}},
                   "profile": {"wall_s": 1.0}}, f)


if __name__ == "__main__":
    main(sys.argv[1:])
