"""AndroidControl TFRecord reader/writer: round trips, wire-format parity, corrupt records."""
import gzip
import json
import struct

import numpy as np
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from gui_jax.core.types import Action, Episode, Observation, UIElement
from gui_jax.data import tfrecord
from gui_jax.data.androidcontrol import (AndroidControlFormatError, androidcontrol_example,
                                         androidcontrol_to_action, convert_androidcontrol_to_store,
                                         encode_accessibility_forest, episode_to_androidcontrol,
                                         parse_accessibility_forest, read_androidcontrol,
                                         target_bbox_from_elements, write_androidcontrol_tfrecord)
from gui_jax.data.episode_store import EpisodeStore
from gui_jax.data.protos import Field, build_messages


def _img(rng, h, w):
    return rng.integers(0, 256, (h, w, 3), dtype=np.uint8)


def _fixture_episodes():
    rng = np.random.default_rng(0)
    return [
        {"episode_id": 101, "goal": "Öffne die Uhr-App und stelle einen Wecker — 7:30",
         "screenshots": [_img(rng, 10, 6) for _ in range(4)],
         "actions": [{"action_type": "open_app", "app_name": "Uhr"},
                     {"action_type": "click", "x": 3, "y": 7},
                     {"action_type": "input_text", "text": "7:30 Übung 日本語"}],
         "step_instructions": ["Öffne die Uhr", "Tippe auf +", "Gib die Zeit ein"]},
        {"episode_id": 2**40 + 5, "goal": "搜索天气",
         "screenshots": [_img(rng, 8, 5) for _ in range(6)],
         "actions": [{"action_type": "scroll", "direction": "down"},
                     {"action_type": "long_press", "x": 1.5, "y": 2},
                     {"action_type": "navigate_back"}, {"action_type": "navigate_home"},
                     {"action_type": "wait"}],
         "step_instructions": ["向下滚动", "长按", "返回", "主页", "等待"]},
        {"episode_id": 7, "goal": "Type a note then stop",
         "screenshots": [_img(rng, 7, 7) for _ in range(4)],
         "actions": [{"action_type": "type", "x": 2, "y": 3, "text": "emoji 🙂"},
                     {"action_type": "swipe", "direction": "left"},
                     {"action_type": "status", "goal_status": "infeasible"}],
         "step_instructions": ["type", "swipe", "give up"]},
    ]


EXPECTED_ACTIONS = [
    [Action(type="open", text="Uhr"), Action(type="click", x=3.0, y=7.0),
     Action(type="type", text="7:30 Übung 日本語")],
    [Action(type="scroll", direction="down"), Action(type="long_press", x=1.5, y=2.0),
     Action(type="system_button", button="Back"), Action(type="system_button", button="Home"),
     Action(type="wait", time=1.0)],
    [Action(type="type", text="emoji 🙂", x=2.0, y=3.0), Action(type="scroll", direction="right"),
     Action(type="terminate", status="failure")],
]


@pytest.fixture
def fixture_file(tmp_path):
    path = tmp_path / "android_control-00000-of-00001"
    write_androidcontrol_tfrecord(path, _fixture_episodes())
    return path


def test_round_trip_fields_and_pixels(fixture_file):
    eps = list(read_androidcontrol(fixture_file))
    src = _fixture_episodes()
    assert [e.episode_id for e in eps] == ["101", str(2**40 + 5), "7"]
    for ep, s, expected in zip(eps, src, EXPECTED_ACTIONS):
        assert ep.goal == s["goal"]
        assert ep.actions == expected
        assert ep.step_instructions == s["step_instructions"]
        assert len(ep.observations) == len(s["screenshots"])
        for obs, img in zip(ep.observations, s["screenshots"]):
            assert obs.screenshot.dtype == np.uint8 and np.array_equal(obs.screenshot, img)
            assert obs.screen_size == (img.shape[1], img.shape[0])
            assert obs.goal == s["goal"]
        assert ep.info["raw_actions"] == [json.dumps(a, ensure_ascii=False) for a in s["actions"]]
        assert ep.info["androidcontrol_episode_id"] == int(ep.episode_id)


def test_file_layout_by_hand(fixture_file):
    raw = gzip.decompress(fixture_file.read_bytes())
    first = androidcontrol_example(_fixture_episodes()[0])
    (length,) = struct.unpack("<Q", raw[:8])
    assert length == len(first)
    assert raw[12:12 + length] == first
    # walk every record with struct only
    pos, lengths = 0, []
    while pos < len(raw):
        (n,) = struct.unpack("<Q", raw[pos:pos + 8])
        lengths.append(n)
        pos += 12 + n + 4
    assert pos == len(raw)
    assert lengths == [len(androidcontrol_example(e)) for e in _fixture_episodes()]
    # masked CRC of the length header, from the published RFC 3720 CRC-32C definition
    (stored,) = struct.unpack("<I", raw[8:12])
    c = tfrecord.crc32c(raw[:8])
    assert stored == (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _crc32c_bitwise(data):
    """Reference CRC-32C, one bit at a time (reflected Castagnoli polynomial 0x82F63B78)."""
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    return c ^ 0xFFFFFFFF


def test_crc32c_known_vectors_and_bitwise_reference():
    assert tfrecord.crc32c(b"123456789") == 0xE3069283
    assert tfrecord.crc32c(bytes(32)) == 0x8A9136AA  # RFC 3720 B.4
    assert tfrecord.crc32c(b"\xff" * 32) == 0x62A8AB43
    assert tfrecord.crc32c(bytes(range(32))) == 0x46DD794E
    data = np.random.default_rng(1).integers(0, 256, 3001, dtype=np.uint8).tobytes()
    for n in (0, 1, 7, 1024, 3001):
        ref = _crc32c_bitwise(data[:n])
        assert tfrecord.crc32c(data[:n]) == ref
        assert tfrecord.crc32c(memoryview(data)[:n]) == ref
        assert tfrecord.crc32c(bytearray(data[:n])) == ref
    assert tfrecord.masked_crc32c(b"") == ((0 >> 15 | 0 << 17) + 0xA282EAD8) & 0xFFFFFFFF


def _example_class():
    """tf.train.Example built from a hand-written descriptor, parsed by the protobuf runtime."""
    fdp = descriptor_pb2.FileDescriptorProto(name="ex_test.proto", package="tfx", syntax="proto3")
    L = descriptor_pb2.FieldDescriptorProto
    def msg(name, fields):
        m = fdp.message_type.add(name=name)
        for fname, num, ftype, label, tname, packed in fields:
            f = m.field.add(name=fname, number=num, type=ftype, label=label)
            if tname:
                f.type_name = tname
            if packed is not None:
                f.options.packed = packed
        return m
    msg("BytesList", [("value", 1, L.TYPE_BYTES, L.LABEL_REPEATED, None, None)])
    msg("FloatList", [("value", 1, L.TYPE_FLOAT, L.LABEL_REPEATED, None, True)])
    msg("Int64List", [("value", 1, L.TYPE_INT64, L.LABEL_REPEATED, None, True)])
    feat = msg("Feature", [("bytes_list", 1, L.TYPE_MESSAGE, L.LABEL_OPTIONAL, ".tfx.BytesList", None),
                           ("float_list", 2, L.TYPE_MESSAGE, L.LABEL_OPTIONAL, ".tfx.FloatList", None),
                           ("int64_list", 3, L.TYPE_MESSAGE, L.LABEL_OPTIONAL, ".tfx.Int64List", None)])
    feat.oneof_decl.add(name="kind")
    for f in feat.field:
        f.oneof_index = 0
    feats = msg("Features", [("feature", 1, L.TYPE_MESSAGE, L.LABEL_REPEATED, ".tfx.Features.FeatureEntry", None)])
    entry = feats.nested_type.add(name="FeatureEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=L.TYPE_STRING, label=L.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=L.TYPE_MESSAGE, label=L.LABEL_OPTIONAL, type_name=".tfx.Feature")
    msg("Example", [("features", 1, L.TYPE_MESSAGE, L.LABEL_OPTIONAL, ".tfx.Features", None)])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tfx.Example"))


@pytest.mark.parametrize("packed", [True, False])
def test_example_wire_parity_with_protobuf_runtime(packed):
    Example = _example_class()
    feats = {"b": ("bytes", [b"x", "ü".encode(), b""]), "f": ("float", [1.5, -2.25, 0.0]),
             "i": ("int64", [0, -1, 2**62, -(2**63), 300]), "empty": ("int64", [])}
    ours = tfrecord.encode_example(feats, packed=packed)
    ex = Example.FromString(ours)
    assert list(ex.features.feature["b"].bytes_list.value) == feats["b"][1]
    assert list(ex.features.feature["f"].float_list.value) == feats["f"][1]
    assert list(ex.features.feature["i"].int64_list.value) == feats["i"][1]
    # and the other way: protobuf's serialization parsed by our decoder
    parsed = tfrecord.parse_example(ex.SerializeToString())
    assert parsed["b"].kind == "bytes" and parsed["b"].values == feats["b"][1]
    assert parsed["f"].values == feats["f"][1] and parsed["i"].values == feats["i"][1]
    assert parsed["empty"].kind == "int64" and parsed["empty"].values == []


def test_unpacked_lists_and_episode_round_trip(tmp_path):
    rng = np.random.default_rng(3)
    elems = [UIElement(0, "android.widget.Button", (-2, 0, 5, 4), text="Weiter ▶", clickable=True,
                       enabled=True, resource_id="id/next"),
             UIElement(1, "android.widget.EditText", (0, 4, 6, 9), content_desc="Suche", focusable=True,
                       focused=True, enabled=True, long_clickable=True, scrollable=True, selected=True,
                       checkable=True, checked=True, password=True)]
    obs = [Observation(screenshot=_img(rng, 9, 6), ui_elements=elems, goal="g ✓", screen_size=(6, 9))
           for _ in range(3)]
    actions = [Action(type="click", x=2.0, y=3.0), Action(type="terminate", status="success")]
    ep = Episode(episode_id="42", goal="g ✓", observations=obs, actions=actions,
                 step_instructions=["tap", "done"])
    d = episode_to_androidcontrol(ep, with_ui_trees=True)
    d["packed"] = False
    path = tmp_path / "x.tfrecord"
    write_androidcontrol_tfrecord(path, [d], compress=False)
    (back,) = read_androidcontrol(path, parse_ui_trees=True, keep_accessibility_trees=False)
    assert back.observations == ep.observations and back.actions == ep.actions
    assert back.step_instructions == ep.step_instructions and back.episode_id == "42"
    assert parse_accessibility_forest(encode_accessibility_forest(elems)) == elems
    # the click at (2, 3) hits only the clickable button; terminate has no target
    assert back.target_bboxes == [(-2.0, 0.0, 5.0, 4.0), None]


def test_target_bbox_prefers_smallest_clickable():
    big = UIElement(0, "Frame", (0, 0, 100, 100), clickable=True)
    small = UIElement(1, "Text", (10, 10, 20, 20))
    button = UIElement(2, "Button", (5, 5, 30, 30), clickable=True)
    hit = target_bbox_from_elements([big, small, button], Action(type="click", x=15, y=15))
    assert hit == (5.0, 5.0, 30.0, 30.0)
    assert target_bbox_from_elements([small], Action(type="click", x=15, y=15)) == (10.0, 10.0, 20.0, 20.0)
    assert target_bbox_from_elements([small], Action(type="click", x=50, y=15)) is None


def test_convert_to_store(fixture_file, tmp_path):
    n = convert_androidcontrol_to_store(fixture_file, tmp_path / "store", episode_ids=[101, 7],
                                        keep_raw_trees=True)
    store = EpisodeStore(tmp_path / "store")
    assert n == 2 and store.ids == ["101", "7"]
    direct = [e for e in read_androidcontrol(fixture_file) if e.episode_id in ("101", "7")]
    for got, want in zip(store, direct):
        assert got.observations == want.observations and got.actions == want.actions
        assert got.goal == want.goal and got.step_instructions == want.step_instructions
        assert got.info["accessibility_trees_b64"] == ["", "", "", ""]


def test_scroll_conventions_and_filter(fixture_file):
    assert androidcontrol_to_action({"action_type": "scroll", "direction": "up"}) == \
        Action(type="scroll", direction="up")
    assert androidcontrol_to_action({"action_type": "scroll", "direction": "up"},
                                    scroll_convention="finger") == Action(type="scroll", direction="down")
    assert androidcontrol_to_action({"action_type": "swipe", "direction": "up"}) == \
        Action(type="scroll", direction="down")
    eps = list(read_androidcontrol([fixture_file, fixture_file], episode_ids=[7]))
    assert [e.episode_id for e in eps] == ["7", "7"]


def _rewrite_gzip(path, fn):
    raw = bytearray(gzip.decompress(path.read_bytes()))
    path.write_bytes(gzip.compress(bytes(fn(raw))))


def _record_offsets(raw):
    pos, offs = 0, []
    while pos < len(raw):
        (n,) = struct.unpack("<Q", raw[pos:pos + 8])
        offs.append((pos, n))
        pos += 16 + n
    return offs


def test_flipped_data_byte_names_record(fixture_file):
    def flip(raw):
        start, n = _record_offsets(raw)[1]
        raw[start + 12 + n // 2] ^= 0x40
        return raw
    _rewrite_gzip(fixture_file, flip)
    it = read_androidcontrol(fixture_file)
    assert next(it).episode_id == "101"
    with pytest.raises(AndroidControlFormatError, match=r"record 1: bad data CRC") as e:
        next(it)
    assert e.value.record_index == 1 and str(fixture_file) in str(e.value)


def test_flipped_length_header(fixture_file):
    def flip(raw):
        raw[2] ^= 1
        return raw
    _rewrite_gzip(fixture_file, flip)
    with pytest.raises(AndroidControlFormatError, match=r"record 0: bad length CRC"):
        list(read_androidcontrol(fixture_file))


def test_truncated_record(fixture_file, tmp_path):
    _rewrite_gzip(fixture_file, lambda raw: raw[:-30])
    with pytest.raises(AndroidControlFormatError, match=r"record 2: truncated record"):
        list(read_androidcontrol(fixture_file))
    # a truncated GZIP stream (file cut mid-way) is an error too, not a silent short read
    cut = tmp_path / "cut.gz"
    write_androidcontrol_tfrecord(cut, _fixture_episodes())
    cut.write_bytes(cut.read_bytes()[:-40])
    with pytest.raises(AndroidControlFormatError, match=r"record \d"):
        list(read_androidcontrol(cut))


def _write_one(tmp_path, **changes):
    eps = _fixture_episodes()
    eps[2].update(changes)
    path = tmp_path / "bad.gz"
    write_androidcontrol_tfrecord(path, eps)
    return path


def test_missing_field_named(tmp_path):
    path = _write_one(tmp_path, drop_features=["step_instructions"])
    with pytest.raises(AndroidControlFormatError,
                       match=r"record 2: field 'step_instructions': missing feature") as e:
        list(read_androidcontrol(path))
    assert e.value.field == "step_instructions"


def test_bad_action_json_names_record_step_field(tmp_path):
    acts = _fixture_episodes()[2]["actions"]
    acts[1] = '{"action_type": "click", "x": 3'
    path = _write_one(tmp_path, actions=acts)
    with pytest.raises(AndroidControlFormatError,
                       match=r"record 2: field 'actions': step 1: bad action JSON") as e:
        list(read_androidcontrol(path))
    assert (e.value.record_index, e.value.step, e.value.field) == (2, 1, "actions")


@pytest.mark.parametrize("action, message", [
    ({"action_type": "teleport"}, "unknown action_type 'teleport'"),
    ({"action_type": "click", "x": "3", "y": 1}, "'x' must be a number"),
    ({"action_type": "scroll", "direction": "sideways"}, "'direction' must be one of"),
    ({"action_type": "status", "goal_status": "maybe"}, "unknown goal_status"),
])
def test_bad_action_values(tmp_path, action, message):
    acts = _fixture_episodes()[2]["actions"]
    acts[0] = action
    path = _write_one(tmp_path, actions=acts)
    with pytest.raises(AndroidControlFormatError, match=r"record 2: field 'actions': step 0: " + message):
        list(read_androidcontrol(path))


def test_count_mismatch_and_bad_image(tmp_path):
    path = _write_one(tmp_path, screenshot_widths=[7, 7, 7])
    with pytest.raises(AndroidControlFormatError,
                       match=r"field 'screenshot_widths': screenshot count mismatch: 3 entries for 4"):
        list(read_androidcontrol(path))
    ep = _fixture_episodes()[2]
    path = _write_one(tmp_path, screenshots=ep["screenshots"][:2])
    with pytest.raises(AndroidControlFormatError, match=r"field 'screenshots': screenshot count mismatch"):
        list(read_androidcontrol(path))
    shots = list(ep["screenshots"])
    shots[3] = b"\x89PNG not really"
    path = _write_one(tmp_path, screenshots=shots, screenshot_widths=[7] * 4, screenshot_heights=[7] * 4)
    with pytest.raises(AndroidControlFormatError, match=r"record 2: field 'screenshots': step 3: undecodable image"):
        list(read_androidcontrol(path))


def test_wrong_feature_kind(tmp_path):
    ex = tfrecord.parse_example(androidcontrol_example(_fixture_episodes()[0]))
    feats = {k: (v.kind, v.values) for k, v in ex.items()}
    feats["episode_id"] = ("bytes", [b"101"])
    path = tmp_path / "kind.gz"
    tfrecord.write_tfrecord(path, [tfrecord.encode_example(feats)])
    with pytest.raises(AndroidControlFormatError,
                       match=r"record 0: field 'episode_id': expected a int64_list feature, got bytes"):
        list(read_androidcontrol(path))


def test_garbage_example_bytes(tmp_path):
    path = tmp_path / "garbage.gz"
    tfrecord.write_tfrecord(path, [b"\x0a\xff\xff\xff\x0f"])
    with pytest.raises(AndroidControlFormatError, match=r"record 0: malformed Example proto"):
        list(read_androidcontrol(path))


def test_accessibility_trees_skip_unknown_fields_and_name_corrupt_step(tmp_path):
    # A writer with a fuller schema (extra node/window fields, two windows): extras are ignored, order kept.
    Forest = build_messages("fuller_a11y", {
        "Rect": [Field(n, i, "int32") for i, n in enumerate(("l", "t", "r", "b"), 1)],
        "Node": [Field("bounds", 2, "Rect"), Field("cls", 3, "string"), Field("hint_text", 5, "string"),
                 Field("text", 7, "string"), Field("window_id", 11, "int32"), Field("clickable", 14, "bool"),
                 Field("enabled", 16, "bool"), Field("child_ids", 26, "int32", repeated=True)],
        "Tree": [Field("nodes", 1, "Node", repeated=True)],
        "Window": [Field("title", 3, "string"), Field("tree", 11, "Tree")],
        "Forest": [Field("windows", 1, "Window", repeated=True)],
    })["Forest"]
    forest = Forest()
    start, dialog = forest.windows.add(title="Start"), forest.windows.add(title="Dialog")
    start.tree.nodes.add(cls="Button", text="Start ✓", hint_text="h", clickable=True, enabled=True,
                         child_ids=[1, 2]).bounds.l = -5
    start.tree.nodes.add()
    dialog.tree.nodes.add(cls="Button", text="Dialog ✓", window_id=1, clickable=True)
    got = parse_accessibility_forest(forest.SerializeToString())
    assert [(e.index, e.cls, e.text, e.clickable, e.enabled) for e in got] == [
        (0, "Button", "Start ✓", True, True), (1, "", "", False, False), (2, "Button", "Dialog ✓", True, False)]
    assert got[0].bounds == (-5, 0, 0, 0)
    forest_bytes = encode_accessibility_forest([UIElement(0, "Text", (1, 2, 3, 4), text="Hallo")])
    path = _write_one(tmp_path, accessibility_trees=[forest_bytes, forest_bytes, b"\x0a\xff\xff\xff\x0f",
                                                      forest_bytes])
    with pytest.raises(AndroidControlFormatError,
                       match=r"record 2: field 'accessibility_trees': step 2: malformed AndroidAccessibilityForest"):
        list(read_androidcontrol(path, parse_ui_trees=True))
    assert len(list(read_androidcontrol(path, parse_ui_trees=False))) == 3
