"""benchmarks/sft_packing.py packs the same quickstart SFT batches two ways: both train the same response tokens;
the even split computes fewer token slots, in micro-batches of at most 6 rows."""
from benchmarks.sft_packing import VARIANTS, packed_variants


def test_variants_carry_the_same_steps_in_fewer_slots():
    _, real, micro = packed_variants(8)
    trained = {name: sum(int(mb["loss_mask"].sum()) for m in ms for mb in m) for name, ms in micro.items()}
    assert len(set(trained.values())) == 1 and trained["512_fixed"] > 8 * 16
    slots = {name: sum(mb["input_ids"].size for m in ms for mb in m) for name, ms in micro.items()}
    assert real < slots["512_even"] < slots["512_fixed"]
    assert all(mb["input_ids"].shape[0] <= 6 for name in VARIANTS for m in micro[name] for mb in m)
    assert {mb["input_ids"].shape[0] for m in micro["512_fixed"] for mb in m} == {6}
    # the even split keeps rows over 512 tokens apart: a micro-batch of 768 holds only rows that need it
    wide = [mb for m in micro["512_even"] for mb in m if mb["input_ids"].shape[1] > 512]
    assert all(((mb["segment_ids"] > 0).sum(1) > 512).all() for mb in wide)
    fixed_wide = [mb for m in micro["512_fixed"] for mb in m if mb["input_ids"].shape[1] > 512]
    assert any(((mb["segment_ids"] > 0).sum(1) <= 512).any() for mb in fixed_wide)
