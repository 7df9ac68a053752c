"""A whole semi-online episode sampled, then one RL training step, at the 7B UI-S1 recipe's prompt settings on a
small model: the check that the paper-scale prompt path (1092×2436 screenshots, K = 2 with the smaller history
image, earlier responses kept as text, 12,288-token prompts, 512-token responses, per-row images) runs end to
end without reaching a length cap.

    python experiments/paper_prompt_episode.py [--json experiments/results/paper_prompt_episode.json]

The model is the tiny architecture with the Qwen2.5 vocabulary (untrained, so at temperature 1 it writes the
worst case: 512-token responses that rarely parse), driven by the real JaxPolicy (chat template, image
processor, prompt cap that raises past 12,288 tokens) and the real semi-online rollout (mismatched steps are
patched with the expert action, without the recipe's patch limit, so the episode runs to its end). The training step is the recipe's RL loss
(PPO-clip, dual clip, KL off here: no reference) through the Updater, on the episode's steps as one micro-batch
padded to the recipe's rows.
"""
from __future__ import annotations

import argparse
import json
import os
import time

from gui_jax.core.recipe_files import recipe_config

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _recipe():
    return recipe_config(os.path.join(ROOT, "configs", "ui_s1_7b.py"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", default=os.path.join(ROOT, "experiments", "results", "paper_prompt_episode.json"))
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)

    import jax
    import numpy as np
    from flax import nnx

    from gui_jax.models.processor import ImageProcessor
    from gui_jax.models.qwen2_5_vl.config import tiny
    from gui_jax.models.qwen2_5_vl.model import Qwen25VLForConditionalGeneration
    from gui_jax.models.tokenizer import qwen25_tokenizer
    from gui_jax.rl.batch import make_micro_batches
    from gui_jax.rl.jax_policy import JaxPolicy
    from gui_jax.rl.prompting import PromptConfig
    from gui_jax.rl.semi_online_rollout import SemiOnlineConfig, semi_online_rollouts
    from gui_jax.tasks.generate import generate_episodes
    from gui_jax.tasks.splits import make_split
    from gui_jax.train.rl_common import rl_loss_fn, samples_from_generations
    from gui_jax.train.state import Updater, init_train_state, make_optimizer

    t0 = time.time()
    c = _recipe()
    split = make_split("instance", train_seeds=range(0, 5), test_seeds=range(1000, 1001), seed=0)
    task = max((t for t in split.train if t.difficulty == "easy"), key=lambda t: (t.optimal_steps, t.task_id))
    episode = next(generate_episodes([task], resolution=tuple(c.data.resolution)))
    tok = qwen25_tokenizer()
    cfg = tiny(vocab_size=tok.vocab_size).replace(vision_per_row=bool(c.model.vision_per_row), attention_impl="xla")
    model = Qwen25VLForConditionalGeneration(cfg, rngs=nnx.Rngs(a.seed))
    policy = JaxPolicy(model, tok, ImageProcessor(min_pixels=c.model.min_pixels, max_pixels=c.model.max_pixels),
                       max_new_tokens=c.model.max_new_tokens, max_prompt_tokens=c.model.max_prompt_tokens)
    pcfg = PromptConfig(**c.prompt.to_dict())

    # One rollout of the whole episode (semi-online: the expert's action patches each mismatched step).
    # The untrained model mismatches every step; unlimited patches let its rollout run the whole episode, as a
    # trained policy's would (the recipe's threshold of 1 would end it at the second mismatch).
    steps = semi_online_rollouts(policy, [episode], pcfg, SemiOnlineConfig(num_rollouts=1, patch_threshold=-1),
                                 seed=a.seed)
    t_roll = time.time() - t0
    prompts = [int(s.generation.prompt_ids.size) for s in steps]
    responses = [int(s.generation.response_ids.size) for s in steps]
    image_tokens = [int(np.sum(s.generation.prompt_ids == tok.image_pad_id)) for s in steps]

    # One RL step on the episode's steps (advantages ±1 alternating: a non-trivial gradient).
    samples = samples_from_generations([s.generation for s in steps], [(-1.0) ** i for i in range(len(steps))])
    mbs = make_micro_batches(samples, cfg, pad_id=tok.pad_id, micro_batch_size=len(samples))
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    updater = Updater(rl_loss_fn(graphdef, rest, _no_kl(c.rl)), make_optimizer(1e-4, max_grad_norm=c.rl.max_grad_norm))
    start = jax.tree.map(np.asarray, params)
    t1 = time.time()
    state, metrics = updater.step(init_train_state(params, updater.optimizer, a.seed), mbs)
    t_train = time.time() - t1
    moved = max(float(np.abs(np.asarray(x) - y).max()) for x, y in zip(jax.tree.leaves(state.params),
                                                                      jax.tree.leaves(start)))
    batch = mbs[0]
    result = {
        "recipe": "configs/ui_s1_7b.py", "resolution": list(c.data.resolution),
        "history_turns_K": c.prompt.history_turns, "max_prompt_tokens": c.model.max_prompt_tokens,
        "max_new_tokens": c.model.max_new_tokens, "vision_per_row": cfg.vision_per_row,
        "episode_task": task.task_id, "expert_steps": len(episode.actions), "episode_steps": len(steps),
        "patched_steps": sum(bool(s.patched) for s in steps),
        "prompt_tokens_per_step": prompts, "response_tokens_per_step": responses,
        "image_tokens_per_step": image_tokens,
        "largest_prompt_plus_response": max(p + r for p, r in zip(prompts, responses)),
        "cap_hit": any(p > c.model.max_prompt_tokens for p in prompts)
        or any(r > c.model.max_new_tokens for r in responses),
        "train_batch_shape": list(batch["input_ids"].shape),
        "train_pixel_values_shape": list(np.shape(batch["pixel_values"])),
        "train_loss_tokens": int(np.asarray(batch["loss_mask"]).sum()),
        "train_metrics": {k: float(v) for k, v in metrics.items()},
        "param_max_change": moved, "rollout_s": round(t_roll, 1), "train_step_s": round(t_train, 1),
        "loadavg": list(os.getloadavg()), "command": "python experiments/paper_prompt_episode.py",
    }
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result, indent=1))
    if result["cap_hit"]:
        raise SystemExit("a length cap was reached")


def _no_kl(rl):
    rl = rl.copy_and_resolve_references()
    rl.kl_coef = 0.0
    return rl


if __name__ == "__main__":
    main()
