"""The tiny vocabulary retrained on PhoneSim's own text (`model.tokenizer = "tiny_phonesim"`).

The shipped tiny vocabulary (models/assets/tiny_sp.model) is trained on generic phone-agent text, so
PhoneSim's names, song and task titles split into 2-7 pieces (" Ocean Dreams" → ' O' 'ce' 'an' ' D'
're' 'am' 's'). Matching a goal's words to a UI line then means matching piece sequences. This
vocabulary adds, to the same generic corpus, every goal and every UI-text line (as the word-spaced
prompt shows them) along the oracle trajectories of all templates for training-range seeds, so each
such word is one piece (' Ocean' ' Dreams') and the quickstart's prompts are about 18 % shorter.
Digits stay one per piece. Test-range seeds (≥ 1000 in the shipped configs) are not read: the
vocabulary covers the simulator's word lists, not held-out instances.

    python -m gui_jax.rl.phonesim_vocab --out gui_jax/models/assets/tiny_phonesim_sp.model

`--numbers` builds the `tiny_phonesim_num` variant: the same corpus with "00".."99" as single pieces,
so an element index ("[11]") or an hour ("08:30" → '08' ':' '30') is one token per two digits. The
look-up a click needs (goal words → the line → its index) then ends in copying one token, not a digit
sequence. Text and parsing are unchanged; only the token boundaries move.

    python -m gui_jax.rl.phonesim_vocab --numbers --out gui_jax/models/assets/tiny_phonesim_num_sp.model
"""
from __future__ import annotations

import argparse
from typing import Iterable, Optional

from gui_jax.envs.sim import PhoneSim
from gui_jax.rl.prompting import PromptConfig, ui_text, word_spaced
from gui_jax.tasks.registry import list_templates, make_task

# The prompt form the lines take: word-spaced labels, flags, no class names, every element.
_LINE_FORM = PromptConfig(observation="ui_text", target="element", word_tokens=True, ui_text_skip_unlabeled=True,
                          ui_text_class=False, max_ui_lines=10_000)


def phonesim_text_lines(seeds: Iterable[int], templates: Optional[Iterable[str]] = None) -> list[str]:
    """Distinct goal and UI-text lines along the oracle trajectory of each (template, seed), in first-seen
    order (templates sorted, then seeds)."""
    sim = PhoneSim(render=False, max_steps=200)
    seeds = list(seeds)
    seen: dict[str, None] = {}
    for name in sorted(templates) if templates is not None else list_templates():
        for seed in seeds:
            task = make_task(name, seed)
            steps = list(sim.expert_actions(task))  # (the oracle plans on its own copy; reset after)
            obs = sim.reset(task)
            seen.setdefault(word_spaced(task.goal), None)
            for step in [None] + steps:
                if step is not None:
                    obs, done, _ = sim.step(step.action)
                    if done:
                        break
                for line in ui_text(obs, _LINE_FORM).split("\n"):
                    seen.setdefault(line, None)
    return [line for line in seen if line]


def train_phonesim_vocab(seeds: Iterable[int] = range(20), corpus_seed: int = 0, n_examples: int = 6000,
                         numbers: bool = False) -> bytes:
    """The serialised SentencePiece model: the generic tiny corpus followed by PhoneSim's lines
    (`numbers`: with "00".."99" as single pieces)."""
    from gui_jax.models.tokenizer import TWO_DIGIT_NUMBERS, train_sentencepiece
    from gui_jax.models.tokenizer_corpus import corpus_lines
    return train_sentencepiece(corpus_lines(corpus_seed, n_examples, phonesim_text_lines(seeds)), seed=corpus_seed,
                               extra_symbols=TWO_DIGIT_NUMBERS if numbers else ())


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="where to write the SentencePiece .model")
    ap.add_argument("--seeds", type=int, default=20, help="PhoneSim seeds 0..N-1 of every template")
    ap.add_argument("--numbers", action="store_true", help='"00".."99" as single pieces (tiny_phonesim_num)')
    args = ap.parse_args(argv)
    if not 0 < args.seeds < 1000:
        raise SystemExit(f"--seeds must be in 1..999 (test-range seeds start at 1000), got {args.seeds}")
    from gui_jax.models.tokenizer import SentencePieceTokenizer
    proto = train_phonesim_vocab(range(args.seeds), numbers=args.numbers)
    with open(args.out, "wb") as f:
        f.write(proto)
    print(f"wrote {args.out}: {len(proto)} bytes, vocab {SentencePieceTokenizer(proto).vocab_size}")


if __name__ == "__main__":
    main()
