"""Evaluate an agent on the quickstart's held-out split (set eval.checkpoint_dir or model.checkpoint)."""
import importlib.util
import os


def get_config():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "quickstart.py")
    spec = importlib.util.spec_from_file_location("quickstart_config", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    c = mod.get_config()
    c.job = "evaluate"
    c.eval.checkpoint_dir = ""
    return c
