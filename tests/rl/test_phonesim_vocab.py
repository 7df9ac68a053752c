"""The tiny vocabulary retrained on PhoneSim text: reproducible asset, one piece per simulator word."""
import pytest

from gui_jax.models.tokenizer import TINY_PHONESIM_SP_MODEL_PATH, SentencePieceTokenizer, tiny_tokenizer
from gui_jax.rl.agent import load_tokenizer
from gui_jax.rl.phonesim_vocab import main, phonesim_text_lines, train_phonesim_vocab
from gui_jax.rl.prompting import word_spaced
from gui_jax.tasks.registry import make_task


def test_shipped_asset_is_what_the_builder_makes(tmp_path):
    with open(TINY_PHONESIM_SP_MODEL_PATH, "rb") as f:
        shipped = f.read()
    assert train_phonesim_vocab(range(20)) == shipped
    out = tmp_path / "v.model"
    main(["--out", str(out), "--seeds", "20"])
    assert out.read_bytes() == shipped


def test_simulator_words_are_single_pieces_and_digits_are_not_merged():
    new, old = load_tokenizer("tiny_phonesim"), tiny_tokenizer()
    assert new.vocab_size == old.vocab_size and new.image_pad_id == old.image_pad_id  # same model shapes
    line = "[33] ; Ocean Dreams"
    assert [new.decode([i]) for i in new.encode(line)] == ["[", "3", "3", "]", " ;", " Ocean", " Dreams"]
    assert len(old.encode(line)) == 13  # the generic vocabulary splits the title into 7 pieces
    goal = word_spaced("Mark the task 'Plan trip' as done.")
    assert [new.decode([i]) for i in new.encode(goal)][3:6] == [" '", " Plan", " trip"]
    assert new.decode(new.encode(goal)) == goal


def test_text_lines_hold_goals_and_ui_lines_in_first_seen_order():
    lines = phonesim_text_lines(range(2), templates=["tasks.complete"])
    goals = [word_spaced(make_task("tasks.complete", s).goal) for s in range(2)]
    assert lines[0] == goals[0] and goals[1] in lines
    assert len(lines) == len(set(lines)) and "" not in lines
    # the task list before and after the oracle's tick (the trajectory's later screens are read too)
    assert [x for x in lines if "Cancel gym" in x] == [goals[0], "[35] click,check; Done: Cancel gym trial",
                                                       "[36] ; Cancel gym trial", "[35] click,check,on; Done: Cancel gym trial"]
    assert phonesim_text_lines(range(2), templates=["tasks.complete"]) == lines


def test_tokenizer_names_and_paths():
    tok = load_tokenizer(TINY_PHONESIM_SP_MODEL_PATH)
    assert isinstance(tok, SentencePieceTokenizer) and tok.encode("Ocean") == load_tokenizer("tiny_phonesim").encode("Ocean")
    with pytest.raises(ValueError, match="unknown tokenizer 'nope'.*tiny_phonesim"):
        load_tokenizer("nope")
    with pytest.raises(SystemExit, match="--seeds must be in 1..999"):
        main(["--out", "x.model", "--seeds", "1000"])


def test_number_vocabulary_is_reproducible_and_makes_two_digits_one_piece(tmp_path):
    from gui_jax.models.tokenizer import TINY_PHONESIM_NUM_SP_MODEL_PATH
    with open(TINY_PHONESIM_NUM_SP_MODEL_PATH, "rb") as f:
        shipped = f.read()
    out = tmp_path / "n.model"
    main(["--out", str(out), "--seeds", "20", "--numbers"])
    assert out.read_bytes() == shipped
    num, plain = load_tokenizer("tiny_phonesim_num"), load_tokenizer("tiny_phonesim")
    assert num.vocab_size == plain.vocab_size and num.image_pad_id == plain.image_pad_id  # same model shapes
    line = "[11] click,check,on; 08:30 Call mom ON"
    assert [num.decode([i]) for i in num.encode(line)] == [
        "[", "11", "]", " click", ",", "check", ",", "on", ";", " ", "08", ":", "30", " Call", " mom", " ON"]
    assert [plain.decode([i]) for i in plain.encode("[11]")] == ["[", "1", "1", "]"]
    # longest match first, odd digit counts end in a single digit; every string round-trips
    for text in ["123", "2026-03-16", '{"action": "click", "element": 7}', "x9y"]:
        assert num.decode(num.encode(text)) == text
    assert [num.decode([i]) for i in num.encode("12345")] == ["12", "34", "5"]
