"""A scripted policy for rollout tests: the PhoneSim oracle's actions, with seeded random detours.

The prompt is a one-line text `template#seed#t` (from `oracle_prompt`), so the response is a pure
function of (task, step): outcomes do not depend on how prompts were batched.
"""
import functools
import random

import numpy as np

from gui_jax.core.dialects import format_response
from gui_jax.core.types import Action
from gui_jax.envs.sim import expert_actions, make_task
from gui_jax.rl.policy import Generation

DIALECT = "ui_genie"


def oracle_prompt(task, history, obs):
    return [{"role": "user", "content": [{"type": "text", "text": f"{task.template}#{task.seed}#{len(history)}"}]}], []


@functools.lru_cache(maxsize=None)
def _expert(template, seed):
    return tuple(st.action for st in expert_actions(make_task(template, seed)))


class OracleOrRandomPolicy:
    """Oracle action at step t, or (with probability p_random, seeded by task and t) a random click."""

    def __init__(self, p_random=0.0, unparsable_prob=0.0):
        self.p_random, self.unparsable_prob = p_random, unparsable_prob
        self.calls = []

    def respond(self, text):
        template, seed, t = text.rsplit("#", 2)
        seed, t = int(seed), int(t)
        rng = random.Random(f"{template}:{seed}:{t}")
        u = rng.random()
        if u < self.unparsable_prob:
            return "I am not sure what to do"
        expert = _expert(template, seed)
        if u < self.unparsable_prob + self.p_random:
            a = Action("click", x=float(rng.randrange(1080)), y=float(rng.randrange(2400)))
        else:
            a = expert[t] if t < len(expert) else Action("terminate", status="failure")
        return format_response(a, DIALECT)

    def generate(self, prompts, *, temperature, seed, max_new_tokens=None):
        self.calls.append(len(prompts))
        out = []
        for messages, _ in prompts:
            text = self.respond(messages[-1]["content"][0]["text"])
            out.append(Generation(text=text, prompt_ids=np.arange(3, dtype=np.int32),
                                  response_ids=np.array([len(text)], np.int32), logprobs=np.full(1, -0.5, np.float32)))
        return out

    def encode(self, prompt, response):
        raise NotImplementedError


class EncodedOracle:
    """Oracle action or (with p_random, seeded by the sampler seed, row and prompt) a random click,
    tokenised by the agent (real token ids: the update trains on them). `fail` templates always
    answer 'terminate failure'."""

    def __init__(self, agent, p_random=0.4, fail=()):
        self.agent, self.p_random, self.fail = agent, p_random, set(fail)

    def generate(self, prompts, *, temperature, seed, max_new_tokens=None):
        out = []
        for i, (messages, images) in enumerate(prompts):
            text = messages[-1]["content"][0]["text"]
            template, tseed, t = text.rsplit("#", 2)
            rng = random.Random(f"{seed}:{i}:{text}")
            expert = _expert(template, int(tseed))
            if template in self.fail:
                a = Action("terminate", status="failure")
            elif rng.random() < self.p_random:
                a = Action("click", x=float(rng.randrange(1080)), y=float(rng.randrange(2400)))
            else:
                a = expert[int(t)] if int(t) < len(expert) else Action("terminate", status="failure")
            out.append(self.agent.policy.encode((messages, images), format_response(a, DIALECT)))
        return out


def small_agent(seed=0, layers=2):
    """The tiny preset cut to `layers` text layers and 2 vision blocks (fast online-trainer tests)."""
    import ml_collections

    from gui_jax.rl.agent import Agent
    from gui_jax.train.config_blocks import model_block
    m = model_block()
    m.num_hidden_layers, m.vision_depth = layers, 2
    return Agent(ml_collections.ConfigDict({"model": m}), seed=seed)
