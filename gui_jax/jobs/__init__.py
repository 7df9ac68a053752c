"""The jobs: one small file each, composing tasks/, data/, train/ and eval/ (the only place that does).

`JOBS` maps a job name (a config's `job` field) to "module:function" and a one-line description;
`python -m gui_jax.main --help` lists them. A job function has the signature `run(config, workdir)`.
"""
from __future__ import annotations

import os
from typing import NamedTuple

from gui_jax.core.recipe_files import load_python_file


class JobEntry(NamedTuple):
    target: str        # "module:function", imported only when the job runs
    description: str   # one line for --help


JOBS: dict[str, JobEntry] = {
    "quickstart": JobEntry("gui_jax.jobs.quickstart:run",
                           "tiny agent on PhoneSim: expert episodes → SFT → semi-online RL → results table"),
    "evaluate": JobEntry("gui_jax.jobs.evaluate:run",
                         "SOP, step metrics and online success of a trained checkpoint on a held-out split"),
    "generate_episodes": JobEntry("gui_jax.jobs.generate_episodes:run",
                                  "oracle expert episodes for one side of a CMDP split"),
    "reasoning_sft": JobEntry("gui_jax.jobs.reasoning_sft:run",
                              "MobileRL reasoning-SFT bootstrap (verified sampled thoughts → SFT)"),
    "export": JobEntry("gui_jax.jobs.export:run",
                       "write a trained agent as a Hugging Face Qwen2.5-VL directory (weights, tokenizer, processor)"),
    "androidcontrol_eval": JobEntry("gui_jax.jobs.androidcontrol_eval:run",
                                    "AndroidControl offline evaluation: AC-High / AC-Low TM, GR, SR and SOP"),
    "env_eval": JobEntry("gui_jax.jobs.env_eval:run",
                         "online per-task SR with 95 % CIs on any env backend (MiniWob++, PhoneSim, servers)"),
    "online_rl": JobEntry("gui_jax.jobs.online_rl:run",
                          "online RL on live envs (GRPO / AdaGRPO / PPO): SFT start → online RL → held-out SR with CIs"),
    "few_shot": JobEntry("gui_jax.jobs.few_shot:run",
                         "few-shot adaptation (AWG): SFT on k demonstrations of unseen apps, then online evaluation"),
    "sop_report": JobEntry("gui_jax.jobs.sop_report:run",
                           "fit SOP Score against online SR across evaluated checkpoints (R², slope, plot)"),
    "reward_model": JobEntry("gui_jax.jobs.reward_model:run",
                             "train the step/outcome reward model on PhoneSim reward data; held-out F1 table"),
    "reward_eval": JobEntry("gui_jax.jobs.reward_eval:run",
                            "reward-model step / outcome precision, recall, F1 by length and difficulty"),
    "verifier_eval": JobEntry("gui_jax.jobs.verifier_eval:run",
                              "best-of-n verifier (policy samples, RM picks): held-out SR against n with 95 % CIs"),
    "judge_eval": JobEntry("gui_jax.jobs.judge_eval:run",
                           "success judges (zero-shot backbone, trained RM) against the rule check: agreement, P, R"),
    "pretrain": JobEntry("gui_jax.jobs.pretrain:run",
                         "pretrain the small base on synthetic screens (tap, read, state, screen text); resumable"),
    "base_eval": JobEntry("gui_jax.jobs.base_eval:run",
                          "greedy reading of a base model: held-out tap/read screens + PhoneSim clicks, Wilson CIs"),
    "lookup_probe": JobEntry("gui_jax.jobs.lookup_probe:run",
                             "synthetic look-up probe: learn to find the named line from random weights (curve)"),
    "self_improve": JobEntry("gui_jax.jobs.self_improve:run",
                             "self-improvement rounds: RM-guided beam search → SFT on successes; SR per round"),
}


def literal_overrides(items, flag: str = "--set") -> dict:
    """{"a.b": value} from command-line items "a.b=VALUE" (VALUE a Python literal), for load_config."""
    import ast
    out = {}
    for item in items:
        field, sep, value = item.partition("=")
        if not sep or not field:
            raise SystemExit(f"{flag} {item!r}: expected FIELD=VALUE")
        try:
            out[field] = ast.literal_eval(value)
        except (ValueError, SyntaxError) as e:
            raise SystemExit(f"{flag} {item!r}: VALUE is not a Python literal ({e})") from None
    return out


def load_config(path: str, **overrides):
    """The ConfigDict of a recipe file (`get_config()`), for notebooks and scripts; `overrides` are
    dotted fields, e.g. load_config("configs/quickstart.py", **{"sft.num_steps": 10})."""
    config = load_python_file(path).get_config()
    for key, value in overrides.items():
        node = config
        *parents, leaf = key.split(".")
        for p in parents:
            node = node[p]
        if leaf not in node:
            raise KeyError(f"{path}: no field {key!r}")
        node[leaf] = value
    return config
