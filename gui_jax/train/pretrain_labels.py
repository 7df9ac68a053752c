"""Open label generator for pretraining screens: labels, values and the goal phrasings that name them.

Labels are far more numerous than PhoneSim's pools (word combinations of ~1,700 common words, person
names, numbers, prices, times, dates, percentages, short phrases), so a model cannot memorise where a
label sits; it has to read. Two disjoint pools by construction:
  - every word and name belongs to exactly one pool by a fixed hash of its stem (crc32, plural folded), so
    a `reading_eval` label never contains a `train` word;
  - every value string ("$12.40", "7:35 AM") belongs to one pool by the hash of the whole string;
  - both drop every word PhoneSim's apps and templates use (`phonesim_words`: collected from the string
    literals of gui_jax/envs/sim, plural/singular forms too) and every word of our own goal phrasings.
Only FORMAT_WORDS (month abbreviations, AM/PM) are shared: they are part of value formats, not labels.

`pieces` labels are made-up words glued from the letter pieces of the tiny tokenizer's vocabulary ("Garciazu
Ovalin"), under the same two rules (pool by hash, no PhoneSim or goal word). Word lists reach only the ~700
tokens their words split into; an agent on PhoneSim meets thousands more (names, app words), and a token the
base never trained has an embedding the look-up cannot match. Pieces cover most of the vocabulary.

`tokens` labels are made-up words each starting with a word-start token of the vocabulary drawn uniformly
("▁Garcia" + "zu": "Garciazu"), the token kept as the word's first token. Unlike `pieces`, they also serve as
the shared-word targets and distractors (`multiword_label`, `similar`): at the curricula's shared-word
probability 1 every target is a multi-word label, so without them the look-up trains on the ~300 word-start
tokens of the word lists only, and PhoneSim's names (one token each: "▁Garcia", "▁Silva") never.
"""
from __future__ import annotations

import ast
import functools
import pathlib
import re
import threading
import zlib
from typing import Optional

import numpy as np

from gui_jax.train import pretrain_words as W

POOLS = ("train", "reading_eval")
EVAL_SHARE = 5  # 1 in EVAL_SHARE words / names / values hash into reading_eval
LABEL_KINDS = ("words", "name", "phrase", "number", "price", "time", "date", "percent", "pieces", "tokens")
VALUE_KINDS = ("price", "time", "date", "percent", "number", "name", "words", "phrase")
MULTIWORD_KINDS = ("words", "name", "phrase")  # kinds that can share a word with a distractor
DEFAULT_LABEL_KINDS = {"words": 0.55, "name": 0.15, "phrase": 0.10, "number": 0.05, "price": 0.05,
                       "time": 0.04, "date": 0.03, "percent": 0.03}
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
FORMAT_WORDS = frozenset(m.lower() for m in MONTHS) | {"am", "pm"}

# ---- goal phrasings ({L} = the label as the screen shows it) ------------------------------------------
TAP_GOALS = ("Tap {L}", "Tap '{L}'.", "Tap on {L}", "Open {L}", "Open '{L}'.", "Select {L}", "Select '{L}'.",
             "Click {L}", "Choose {L}", "Press {L}")
HOME_GOALS = ("Open the {L} app", "Open {L}", "Launch {L}", "Launch the {L} app", "Start the {L} app",
              "Go to {L}", "Tap the {L} icon")
READ_GOALS = {
    "price": ("What is the price of {L}?", "How much is {L}?", "How much does {L} cost?"),
    "time": ("What time is {L}?", "When is {L}?"),
    "date": ("What date is {L}?", "On what date is {L}?"),
    "percent": ("What percentage does {L} show?", "What percent is {L} at?"),
    "number": ("What number is shown for {L}?", "What is the count for {L}?"),
    "name": ("Who is listed for {L}?", "Who is {L} assigned to?"),
    "words": ("What does {L} say?",),
    "phrase": ("What does {L} say?",),
}
# read goals as commands, no question mark (pretrain.read_imperative): every read goal above but one ends in "?" and
# every tap goal does not, so a base may decide answer-or-click by the "?"; it clicked on "Read the value of {L}." in
# ~90 % of base_eval's items. Only words of the phrasings above (goal_words unchanged, so the label pools are too).
READ_IMPERATIVE = ("Read the value of {L}.", "Show the value of {L}.", "Read what is shown for {L}.")
READ_IMPERATIVE_BY_KIND = {
    "price": ("Read the price of {L}.", "Show the price of {L}."),
    "time": ("Read the time of {L}.",),
    "date": ("Read the date of {L}.",),
    "percent": ("Read the percentage of {L}.",),
    "number": ("Read the number shown for {L}.", "Read the count for {L}."),
    "name": ("Read who is listed for {L}.",),
}
# by where the value sits relative to its label (any kind)
READ_WHERE = {"below": ("What is written under {L}?", "What is the value of {L}?", "What is shown for {L}?"),
              "beside": ("What is shown next to {L}?", "What is the value of {L}?", "Read the value of {L}."),
              "field": ("What is entered in {L}?", "What does the {L} field contain?")}
# (state kind, asked polarity) → phrasings; the answer is yes iff the element's state equals the polarity
STATE_GOALS = {
    ("switch", True): ("Is {L} on?", "Is {L} enabled?", "Is {L} turned on?"),
    ("switch", False): ("Is {L} off?", "Is {L} disabled?", "Is {L} turned off?"),
    ("checkbox", True): ("Is {L} checked?", "Is {L} done?", "Is {L} ticked?"),
    ("checkbox", False): ("Is {L} unchecked?", "Is {L} not done yet?"),
    ("tab", True): ("Is the {L} tab selected?", "Is {L} selected?"),
}
# "turn the named switch / checkbox to the other state": click its switch or checkbox, not the row's title
TOGGLE_GOALS = {
    ("switch", True): ("Turn off {L}", "Turn {L} off", "Disable {L}", "Switch off {L}."),
    ("switch", False): ("Turn on {L}", "Turn {L} on", "Enable {L}", "Switch on {L}."),
    ("checkbox", True): ("Uncheck {L}", "Mark {L} as not done", "Untick '{L}'."),
    ("checkbox", False): ("Mark {L} as done", "Check {L}", "Tick '{L}'.", "Complete {L}"),
}
YES, NO = "yes", "no"
# words of the prompt's own format ("Goal:", "UI:", the flags of a UI line): never inside a label
PROMPT_WORDS = frozenset({"goal", "ui", "click", "long", "scroll", "check", "on", "focus", "sel"})


def _words_of(text: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[A-Za-z]+", text)]


def goal_words() -> frozenset[str]:
    """Every word of our goal phrasings and answers: kept out of labels so a goal's only label words are the label."""
    texts = [*TAP_GOALS, *HOME_GOALS, *(t for v in READ_GOALS.values() for t in v),
             *(t for v in READ_WHERE.values() for t in v), *(t for v in STATE_GOALS.values() for t in v),
             *READ_IMPERATIVE, *(t for v in READ_IMPERATIVE_BY_KIND.values() for t in v),
             *(t for v in TOGGLE_GOALS.values() for t in v), YES, NO]
    return frozenset(w for t in texts for w in _words_of(t))


_AST_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def phonesim_words() -> frozenset[str]:
    """Lower-case words of every string literal (docstrings excepted) in gui_jax/envs/sim: app content pools,
    template goals and parameters, widget texts. A static scan: complete for literal pools, no simulator run."""
    import gui_jax.envs.sim as sim
    words: set[str] = set()
    for path in sorted(pathlib.Path(sim.__file__).parent.rglob("*.py")):
        with _AST_LOCK:   # CPython's ast.parse is not safe in concurrent threads (Grain's read threads)
            tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for n in ast.walk(tree):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
                words.update(_words_of(n.value))
    return frozenset(words)


def word_forms(word: str) -> set[str]:
    """The word with its simple plural / singular forms (lower case): 'lantern' ~ 'lanterns', 'berry' ~ 'berries'."""
    w = word.lower()
    forms = {w, w + "s", w + "es"}
    if w.endswith("ies"):
        forms.add(w[:-3] + "y")
    if w.endswith("es"):
        forms.add(w[:-2])
    if w.endswith("s") and not w.endswith("ss"):
        forms.add(w[:-1])
    if w.endswith("y"):
        forms.add(w[:-1] + "ies")
    return forms


def _stem(word: str) -> str:
    """Hash key of a word: its shortest simple form, so 'apple' and 'apples' always land in one pool."""
    return min(word_forms(word), key=lambda f: (len(f), f))


def pool_of(word: str) -> str:
    """The pool a word or name belongs to (fixed: crc32 of its stem)."""
    return POOLS[1] if zlib.crc32(_stem(word).encode()) % EVAL_SHARE == 0 else POOLS[0]


def pool_of_value(value: str) -> str:
    """The pool a value string belongs to (fixed: crc32 of the whole string)."""
    return POOLS[1] if zlib.crc32(value.encode()) % EVAL_SHARE == 0 else POOLS[0]


@functools.lru_cache(maxsize=1)
def excluded_words() -> frozenset[str]:
    """Words no label may contain: PhoneSim's, our goal phrasings' and the prompt format's, with their
    plural/singular forms."""
    base = phonesim_words() | goal_words() | PROMPT_WORDS
    return frozenset(f for w in base for f in word_forms(w))


def _keep(word: str, pool: str) -> bool:
    return pool_of(word) == pool and not (word_forms(word) & excluded_words())


def _case(words: list[str], title: bool) -> str:
    """Title Case or Sentence case (names keep their capitals)."""
    if title:
        return " ".join(w[:1].upper() + w[1:] for w in words)
    return " ".join([words[0][:1].upper() + words[0][1:], *words[1:]])


class LabelPool:
    """One pool's words and names, and the labels / values drawn from them (all draws from a numpy Generator)."""

    def __init__(self, name: str = "train"):
        if name not in POOLS:
            raise ValueError(f"pool must be one of {POOLS}, got {name!r}")
        self.name = name
        self.adjectives = [w for w in W.ADJECTIVES if _keep(w, name)]
        self.nouns = [w for w in W.NOUNS if _keep(w, name) and w not in W.ADJECTIVES]
        self.verbs = [w for w in W.VERBS if _keep(w, name) and w not in W.ADJECTIVES and w not in W.NOUNS]
        self.first = [w for w in W.FIRST_NAMES if _keep(w, name)]
        self.last = [w for w in W.LAST_NAMES if _keep(w, name)]
        self.category = {w: c for c, ws in (("adj", self.adjectives), ("noun", self.nouns), ("verb", self.verbs),
                                            ("first", self.first), ("last", self.last)) for w in ws}
        self.by_category = {"adj": self.adjectives, "noun": self.nouns, "verb": self.verbs,
                            "first": self.first, "last": self.last}

    @property
    def content_words(self) -> list[str]:
        """Common words of this pool (adjectives, nouns, verbs)."""
        return self.adjectives + self.nouns + self.verbs

    def words(self) -> frozenset[str]:
        """Every word (lower case) a label of this pool can contain, FORMAT_WORDS aside."""
        return frozenset(w.lower() for w in self.category)

    # ---- labels -----------------------------------------------------------------------------------------
    def _pick(self, rng: np.random.Generator, seq: list[str]) -> str:
        return seq[int(rng.integers(len(seq)))]

    def label(self, rng: np.random.Generator, kind: str) -> str:
        """A label of `kind` (LABEL_KINDS)."""
        if kind == "words":
            n = int(rng.choice(3, p=[0.3, 0.5, 0.2])) + 1
            return self._word_combo(rng, n)
        if kind == "name":
            first = self._pick(rng, self.first)
            return first if rng.random() < 0.15 else f"{first} {self._pick(rng, self.last)}"
        if kind == "phrase":
            parts = [self._pick(rng, self.verbs)]
            if rng.random() < 0.5:
                parts.append(self._pick(rng, self.adjectives))
            parts.append(self._pick(rng, self.nouns))
            return _case(parts, title=False)
        if kind in ("number", "price", "time", "date", "percent"):
            return self.value(rng, kind)
        if kind == "pieces":
            return self._pieces_label(rng)
        if kind == "tokens":
            return self.token_label(rng, int(rng.choice(3, p=[0.2, 0.6, 0.2])) + 1)
        raise ValueError(f"unknown label kind {kind!r}; known: {LABEL_KINDS}")

    def _piece_word(self, rng: np.random.Generator) -> str:
        pieces = vocabulary_pieces()
        for _ in range(100):
            n = int(rng.choice(3, p=[0.45, 0.4, 0.15])) + 1
            w = "".join(pieces[int(rng.integers(len(pieces)))] for _ in range(n))
            if rng.random() < 0.6:
                w = w[:1].upper() + w[1:]
            if _keep(w, self.name) and w.lower() not in FORMAT_WORDS:
                return w
        raise RuntimeError("no piece word hashed into this pool in 100 tries")

    def _pieces_label(self, rng: np.random.Generator) -> str:
        """1-3 made-up words; sometimes with a second part in brackets or after a dash, as list rows show
        ("Kai Sol - 2:01", "Jonas Rossi (new)"), so those tokens are trained too."""
        words = [self._piece_word(rng) for _ in range(int(rng.choice(3, p=[0.4, 0.45, 0.15])) + 1)]
        r = rng.random()
        if r < 0.1:
            return f"{' '.join(words)} ({self._piece_word(rng)})"
        if r < 0.2:
            return f"{' '.join(words)} - {self._piece_word(rng)}"
        return " ".join(words)

    def token_word(self, rng: np.random.Generator, piece_p: float = 0.5) -> str:
        """A made-up word whose first token is a word-start token drawn uniformly from the vocabulary
        (`vocabulary_word_tokens`), a letter piece appended when the bare word is excluded or with piece_p."""
        starts, pieces = vocabulary_word_tokens(), vocabulary_pieces()
        for _ in range(100):
            token_id, w = starts[int(rng.integers(len(starts)))]
            if rng.random() < piece_p or not _keep(w, self.name):
                w += pieces[int(rng.integers(len(pieces)))].lower()
            if _keep(w, self.name) and w.lower() not in FORMAT_WORDS and first_token(w) == token_id:
                return w
        raise RuntimeError("no token word hashed into this pool in 100 tries")

    def token_label(self, rng: np.random.Generator, n: int, piece_p: float = 0.5) -> str:
        """n distinct token words (`token_word`)."""
        words: list[str] = []
        while len(words) < n:
            w = self.token_word(rng, piece_p)
            if w.lower() not in {x.lower() for x in words}:
                words.append(w)
        return " ".join(words)

    def token_sentence(self, rng: np.random.Generator) -> str:
        """A message-like value of 2-5 token words ("photos Friday kept"), bare where the pool keeps the word,
        sometimes with a number among them and ending in "?" or "!": PhoneSim's snippets ("I sent the photos")
        write word-start tokens that no value of the word lists ever does."""
        words = self.token_label(rng, int(rng.integers(2, 6)), piece_p=0.0).split(" ")
        if rng.random() < 0.2:
            words.insert(int(rng.integers(len(words) + 1)), self.value(rng, "number"))
        return " ".join(words) + ("", "?", "!")[int(rng.choice(3, p=[0.7, 0.15, 0.15]))]

    def _word_combo(self, rng: np.random.Generator, n: int) -> str:
        if n == 1:
            parts = [self._pick(rng, self.adjectives if rng.random() < 0.3 else self.nouns)]
        elif n == 2:
            first = self.adjectives if rng.random() < 0.6 else self.nouns
            parts = [self._pick(rng, first), self._pick(rng, self.nouns)]
        else:
            parts = [self._pick(rng, self.adjectives), self._pick(rng, self.adjectives if rng.random() < 0.4 else
                                                                 self.nouns), self._pick(rng, self.nouns)]
        if len(set(parts)) < len(parts):  # "Quiet quiet" reads badly; redraw
            return self._word_combo(rng, n)
        return _case(parts, title=rng.random() < 0.6)

    def multiword_label(self, rng: np.random.Generator, token_share: float = 0.0) -> tuple[str, str]:
        """(label, kind) with at least two words, so distractors can share one word and still differ; a
        `tokens` label with probability token_share (0: no extra draw, so streams without it are unchanged)."""
        if token_share > 0 and rng.random() < token_share:
            return self.token_label(rng, 2 + int(rng.random() < 0.3)), "tokens"
        kind = MULTIWORD_KINDS[int(rng.choice(3, p=[0.7, 0.2, 0.1]))]
        if kind == "words":
            return self._word_combo(rng, 2 + int(rng.random() < 0.3)), kind
        if kind == "name":
            return f"{self._pick(rng, self.first)} {self._pick(rng, self.last)}", kind
        return self.label(rng, "phrase"), kind

    def similar(self, rng: np.random.Generator, label: str, kind: Optional[str] = None) -> Optional[str]:
        """A label sharing all words but one with `label` ("Quiet Fire" → "Quiet Letters" / "Midnight Fire"):
        one word swapped for another of its category (kind 'tokens': for another token word), its capitalisation
        kept. None for a one-word label."""
        parts = label.split(" ")
        if kind == "tokens" and len(parts) >= 2:
            i = int(rng.integers(len(parts)))
            lowered = {p.lower() for p in parts}
            for _ in range(20):
                new = self.token_word(rng)
                if new.lower() not in lowered:
                    return " ".join(parts[:i] + [new] + parts[i + 1:])
            return None
        known = [i for i, w in enumerate(parts) if (w if w in self.category else w.lower()) in self.category]
        if len(parts) < 2 or not known:  # one word, or a value ("7:35 AM"): nothing to share
            return None
        i = known[int(rng.integers(len(known)))]
        old = parts[i]
        cat = self.category[old if old in self.category else old.lower()]
        lowered = {p.lower() for p in parts}
        for _ in range(20):
            new = self._pick(rng, self.by_category[cat])
            if new.lower() not in lowered:
                break
        else:
            return None
        if old[:1].isupper():
            new = new[:1].upper() + new[1:]
        return " ".join(parts[:i] + [new] + parts[i + 1:])

    # ---- values -----------------------------------------------------------------------------------------
    def value(self, rng: np.random.Generator, kind: str) -> str:
        """A value of `kind` (VALUE_KINDS); numeric formats are redrawn until they hash into this pool."""
        if kind in ("name", "words", "phrase"):
            return self.label(rng, kind)
        make = {"number": _number, "price": _price, "time": _time, "date": _date, "percent": _percent}.get(kind)
        if make is None:
            raise ValueError(f"unknown value kind {kind!r}; known: {VALUE_KINDS}")
        while True:  # expected tries: 1.25 (train) or 5 (reading_eval)
            v = make(rng)
            if pool_of_value(v) == self.name:
                return v


def _number(rng) -> str:
    return str(int(rng.integers(1, 100))) if rng.random() < 0.5 else f"{int(rng.integers(100, 10000)):,}"


def _price(rng) -> str:
    return f"${float(np.exp(rng.uniform(np.log(0.5), np.log(2000.0)))):,.2f}"


def _time(rng) -> str:
    return f"{int(rng.integers(1, 13))}:{int(rng.integers(60)):02d} {'AM' if rng.random() < 0.5 else 'PM'}"


def _date(rng) -> str:
    return f"{MONTHS[int(rng.integers(12))]} {int(rng.integers(1, 29))}"


def _percent(rng) -> str:
    return f"{int(rng.integers(0, 101))}%"


@functools.lru_cache(maxsize=1)
def vocabulary_pieces() -> tuple[str, ...]:
    """The distinct letter-only pieces of the tiny tokenizer's vocabulary, SentencePiece's word-start mark
    dropped, sorted (the material of `pieces` labels)."""
    from gui_jax.models.tokenizer import tiny_tokenizer
    tok = tiny_tokenizer()
    pieces = {tok.id_to_token(i).lstrip("\u2581") for i in range(tok.vocab_size)}
    return tuple(sorted(p for p in pieces if p.isascii() and p.isalpha()))


@functools.lru_cache(maxsize=1)
def vocabulary_word_tokens() -> tuple[tuple[int, str], ...]:
    """(id, text) of the tiny tokenizer's word-start tokens of two or more ASCII letters, the mark dropped: the
    first tokens of `tokens` words."""
    from gui_jax.models.tokenizer import tiny_tokenizer
    tok = tiny_tokenizer()
    out = []
    for i in range(tok.vocab_size):
        t = tok.id_to_token(i)
        if t.startswith("\u2581") and len(t) >= 3 and t[1:].isascii() and t[1:].isalpha():
            out.append((i, t[1:]))
    return tuple(out)


@functools.lru_cache(maxsize=65536)
def first_token(word: str) -> int:
    """The id of the first token of `word` after a space (as a label follows "; " or another word)."""
    from gui_jax.models.tokenizer import tiny_tokenizer
    return tiny_tokenizer().encode(" " + word)[0]


@functools.lru_cache(maxsize=None)
def label_pool(name: str) -> LabelPool:
    """The shared (cached) LabelPool of `name`."""
    return LabelPool(name)


def label_words(label: str) -> list[str]:
    """The words of a label that belong to a pool (lower case; format words and digits left out)."""
    return [w for w in _words_of(label) if w not in FORMAT_WORDS]


def contains_label(line: str, label: str) -> bool:
    """Whether `label` occurs in `line` as a whole-word sequence, ignoring case ('Fire' is not in 'Firefly')."""
    return re.search(r"(?<![\w$])" + re.escape(label.lower()) + r"(?![\w%])", line.lower()) is not None
