"""The 7B UI-S1 recipe's prompt settings on real PhoneSim screenshots: a whole episode of semi-online
rollouts and its training batch stay under the recipe's token caps, counted exactly.

The recipe (configs/ui_s1_7b.py): 1092×2436 screenshots, K = 2 (previous + current screenshot), the
current one as rendered, the previous one resized under 1280·28² pixels, earlier responses as
written (at most 10), prompts ≤ 12288 tokens, responses ≤ 512 (UI-S1 Table 6). The policy is a
JaxPolicy of a small Qwen2.5-VL (the tiny architecture with the Qwen2.5 vocabulary) whose prompt
path (chat template, image processor, prompt cap) is the real one; its responses are scripted at
the worst case (the expert action with a thought padding it to exactly 512 tokens, so every step
matches and every response stays in the history), because sampling the model on two ~2.7 MP
images costs minutes per step on a CPU.
"""
import importlib.util
import os

import numpy as np
import pytest
from flax import nnx

from gui_jax.models.processor import ImageProcessor
from gui_jax.models.qwen2_5_vl.config import tiny
from gui_jax.models.qwen2_5_vl.model import Qwen25VLForConditionalGeneration
from gui_jax.models.tokenizer import qwen25_tokenizer
from gui_jax.rl.batch import build_batch
from gui_jax.rl.jax_policy import JaxPolicy
from gui_jax.rl.prompting import PromptConfig, build_messages, expert_response
from gui_jax.rl.semi_online_rollout import SemiOnlineConfig, semi_online_rollouts
from gui_jax.tasks.generate import generate_episodes
from gui_jax.tasks.splits import make_split
from gui_jax.train.rl_common import samples_from_generations

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CURRENT_IMAGE_TOKENS = (1092 // 28) * (2436 // 28)   # 39 · 87 = 3393 (kept as rendered)
HISTORY_IMAGE_TOKENS = (644 // 28) * (1484 // 28)    # 23 · 53 = 1219 (resized under 1,003,520 px)


def _recipe():
    spec = importlib.util.spec_from_file_location("ui_s1_7b", os.path.join(ROOT, "configs", "ui_s1_7b.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.get_config()


class WorstCasePolicy:
    """Answers each step with the expert action, its thought padded to exactly `budget` tokens
    (end-of-turn included), through the JaxPolicy's real prompt path (which enforces the cap)."""

    def __init__(self, jax_policy, episode, pcfg, budget):
        self.jp, self.calls = jax_policy, 0
        tok = jax_policy.tokenizer
        self.responses = []
        for t, action in enumerate(episode.actions):
            base = expert_response(action, episode.observations[t], pcfg, thought="I")
            pad = budget - 1 - len(tok.encode(base))
            text = expert_response(action, episode.observations[t], pcfg, thought="I" + " the" * pad)
            assert len(tok.encode(text)) + 1 == budget
            self.responses.append(text)

    def generate(self, prompts, *, temperature, seed, max_new_tokens=None):
        out = [self.jp.encode(p, self.responses[self.calls]) for p in prompts]
        self.calls += 1
        return out


@pytest.fixture(scope="module")
def setting():
    c = _recipe()
    split = make_split("instance", train_seeds=range(0, 5), test_seeds=range(1000, 1001), seed=0)
    longest_easy = max((t for t in split.train if t.difficulty == "easy"), key=lambda t: (t.optimal_steps, t.task_id))
    episode = next(generate_episodes([longest_easy], resolution=tuple(c.data.resolution)))
    tok = qwen25_tokenizer()
    model = Qwen25VLForConditionalGeneration(tiny(vocab_size=tok.vocab_size), rngs=nnx.Rngs(0))
    policy = JaxPolicy(model, tok, ImageProcessor(min_pixels=c.model.min_pixels, max_pixels=c.model.max_pixels),
                       max_new_tokens=c.model.max_new_tokens, max_prompt_tokens=c.model.max_prompt_tokens)
    return c, episode, policy, PromptConfig(**c.prompt.to_dict())


def test_recipe_episode_and_training_batch_stay_under_the_caps(setting):
    c, episode, policy, pcfg = setting
    assert (c.prompt.history_turns, c.model.max_prompt_tokens, c.model.max_new_tokens) == (2, 12288, 512)
    assert episode.observations[0].screenshot.shape == (2436, 1092, 3) and len(episode.actions) == 5
    worst = WorstCasePolicy(policy, episode, pcfg, budget=c.model.max_new_tokens)
    steps = semi_online_rollouts(worst, [episode], pcfg, SemiOnlineConfig(num_rollouts=1), seed=0)
    assert [s.step for s in steps] == [0, 1, 2, 3, 4] and all(s.exact_match for s in steps)
    prompts = [s.generation.prompt_ids for s in steps]
    image_tokens = [int(np.sum(p == policy.tokenizer.image_pad_id)) for p in prompts]
    # K = 2 counts the current screenshot: 3393 tokens alone at step 0, 3393 + 1219 = 4612 after.
    assert image_tokens == [CURRENT_IMAGE_TOKENS] + [CURRENT_IMAGE_TOKENS + HISTORY_IMAGE_TOKENS] * 4
    sizes = [p.size for p in prompts]
    # Each later step adds one assistant turn: the 511 response tokens + 5 template tokens
    # (<|im_start|>assistant\n … <|im_end|>\n), no image beyond the previous screenshot; at step 2 the
    # goal's user turn also parts from step 1's screenshot turn (+5 template tokens: 521).
    assert [b - a for a, b in zip(sizes[1:], sizes[2:])] == [521, 516, 516]
    print("prompt tokens per step:", sizes)
    assert max(sizes) == sizes[4] and sizes[4] + c.model.max_new_tokens <= c.model.max_prompt_tokens
    # The training batch of the whole episode: one row per step, prompt + 512 response tokens each.
    samples = samples_from_generations([s.generation for s in steps], [1.0] * len(steps))
    batch = build_batch(samples, policy.model_cfg, pad_id=policy.tokenizer.pad_id, rows=c.rl.micro_batch_size)
    assert batch["input_ids"].shape[0] == c.rl.micro_batch_size
    assert batch["input_ids"].shape[1] >= sizes[4] + 512 and int(batch["loss_mask"].sum()) == 5 * 512


def test_recipe_worst_case_prompt_fits_at_any_episode_length(setting):
    c, episode, policy, pcfg = setting
    # A 30-step episode (the recipe's eval.max_steps): 10 earlier responses of 512 tokens are kept.
    worst = WorstCasePolicy(policy, episode, pcfg, budget=c.model.max_new_tokens)
    history = [(episode.observations[k % 5], worst.responses[k % 5]) for k in range(29)]
    ids = policy.prompt_inputs(build_messages(episode.goal, history, episode.observations[0], pcfg))["input_ids"]
    n_images = int(np.sum(ids == policy.tokenizer.image_pad_id))
    assert n_images == CURRENT_IMAGE_TOKENS + HISTORY_IMAGE_TOKENS
    # 10 kept turns · 516 + 4612 image tokens + the system prompt, goal and image markers.
    assert 10 * 516 + n_images < ids.size < c.model.max_prompt_tokens - c.model.max_new_tokens
    # Without the smaller history image (both at 3393) the same prompt would pass the 12288 cap
    # once the response is added: the reason for history_image_max_pixels in the recipe.
    assert ids.size - HISTORY_IMAGE_TOKENS + CURRENT_IMAGE_TOKENS + c.model.max_new_tokens > c.model.max_prompt_tokens
