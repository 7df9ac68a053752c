"""Evaluate a trained agent on the quickstart's held-out split (set eval.checkpoint_dir or model.checkpoint).

    python -m gui_jax.main --config configs/evaluate.py --config.eval.checkpoint_dir=runs/quickstart/rl/checkpoints
The data and model fields are the quickstart's, so its checkpoints fit; eval.untrained=True scores
the untrained model instead (no checkpoint).
"""
import importlib.util
import os


def get_config():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "quickstart.py")
    spec = importlib.util.spec_from_file_location("quickstart_config", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    c = mod.get_config()
    c.job = "evaluate"
    c.eval.checkpoint_dir = ""   # a stage's checkpoints folder, e.g. runs/quickstart/rl/checkpoints
    c.eval.untrained = False     # True: score the untrained model (no checkpoint needed)
    return c
