"""Quickstart: the tiny agent on PhoneSim, end to end (expert episodes → SFT → semi-online RL).

Run: python -m gui_jax.main --config configs/quickstart.py
"""
import ml_collections


def get_config():
    c = ml_collections.ConfigDict()
    c.job = "quickstart"
    c.seed = 0
    return c
