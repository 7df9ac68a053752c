"""Protobuf message classes built at runtime from a compact schema (no TensorFlow, no generated _pb2 files).

`build_messages` turns {message name: [Field, ...]} into a private descriptor pool and returns the message
classes; the protobuf runtime then does all wire encoding and decoding. Two schemas live here:
`tf.train.Example` (tensorflow/core/example/{example,feature}.proto) and the subset of android_env's
AndroidAccessibilityForest that AndroidControl's accessibility trees use. Fields we do not declare are kept
as unknown fields by protobuf, i.e. ignored, exactly as a reader compiled from the full .proto would.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_FDP = descriptor_pb2.FieldDescriptorProto
_SCALARS = {"bytes": _FDP.TYPE_BYTES, "string": _FDP.TYPE_STRING, "float": _FDP.TYPE_FLOAT,
            "int64": _FDP.TYPE_INT64, "int32": _FDP.TYPE_INT32, "bool": _FDP.TYPE_BOOL}


class Field(NamedTuple):
  """One field: type is a scalar name (see _SCALARS), another message's name, or 'map<string,Msg>'."""
  name: str
  number: int
  type: str
  repeated: bool = False
  oneof: Optional[str] = None    # name of the oneof group this field belongs to
  packed: Optional[bool] = None  # repeated scalars: None = proto3 default (packed)


def build_messages(package: str, messages: dict[str, list[Field]]) -> dict[str, type]:
  """Message classes {name: class} for a proto3 file `package` holding `messages` (in a private pool)."""
  fdp = descriptor_pb2.FileDescriptorProto(name=f"{package}.proto", package=package, syntax="proto3")
  for msg_name, fields in messages.items():
    msg = fdp.message_type.add(name=msg_name)
    oneofs: list[str] = []
    for f in fields:
      fd = msg.field.add(name=f.name, number=f.number,
                         label=_FDP.LABEL_REPEATED if f.repeated else _FDP.LABEL_OPTIONAL)
      if f.type.startswith("map<string,"):  # a map is a repeated nested *Entry message (key=1, value=2)
        value_type = f.type[len("map<string,"):-1]
        entry = msg.nested_type.add(name=f.name.title().replace("_", "") + "Entry")
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=_FDP.TYPE_STRING, label=_FDP.LABEL_OPTIONAL)
        entry.field.add(name="value", number=2, type=_FDP.TYPE_MESSAGE, label=_FDP.LABEL_OPTIONAL,
                        type_name=f".{package}.{value_type}")
        fd.label, fd.type, fd.type_name = _FDP.LABEL_REPEATED, _FDP.TYPE_MESSAGE, \
            f".{package}.{msg_name}.{entry.name}"
      elif f.type in _SCALARS:
        fd.type = _SCALARS[f.type]
      else:
        fd.type, fd.type_name = _FDP.TYPE_MESSAGE, f".{package}.{f.type}"
      if f.packed is not None:
        fd.options.packed = f.packed
      if f.oneof is not None:
        if f.oneof not in oneofs:
          oneofs.append(f.oneof)
          msg.oneof_decl.add(name=f.oneof)
        fd.oneof_index = oneofs.index(f.oneof)
  pool = descriptor_pool.DescriptorPool()
  pool.Add(fdp)
  return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.{name}"))
          for name in messages}


def example_messages(package: str, *, packed: bool = True) -> dict[str, type]:
  """tf.train.Example and its parts; packed=False writes float/int64 lists one field per value."""
  return build_messages(package, {
      "BytesList": [Field("value", 1, "bytes", repeated=True)],
      "FloatList": [Field("value", 1, "float", repeated=True, packed=packed)],
      "Int64List": [Field("value", 1, "int64", repeated=True, packed=packed)],
      "Feature": [Field("bytes_list", 1, "BytesList", oneof="kind"),
                  Field("float_list", 2, "FloatList", oneof="kind"),
                  Field("int64_list", 3, "Int64List", oneof="kind")],
      "Features": [Field("feature", 1, "map<string,Feature>")],
      "Example": [Field("features", 1, "Features")],
  })


# AndroidAccessibilityNodeInfo fields we read (android_env/proto/a11y), as (field name, number, UIElement attr).
NODE_STRINGS = (("class_name", 3, "cls"), ("content_description", 4, "content_desc"), ("text", 7, "text"),
                ("view_id_resource_name", 10, "resource_id"))
NODE_FLAGS = (("is_checkable", 12, "checkable"), ("is_checked", 13, "checked"), ("is_clickable", 14, "clickable"),
              ("is_enabled", 16, "enabled"), ("is_focusable", 17, "focusable"), ("is_focused", 18, "focused"),
              ("is_long_clickable", 19, "long_clickable"), ("is_password", 20, "password"),
              ("is_scrollable", 21, "scrollable"), ("is_selected", 22, "selected"))


def accessibility_forest_messages(package: str = "gui_jax.a11y") -> dict[str, type]:
  """AndroidAccessibilityForest{windows=1} > Window{tree=11} > NodeTree{nodes=1} > Node (fields above)."""
  return build_messages(package, {
      "ProtoRect": [Field(n, i, "int32") for i, n in enumerate(("left", "top", "right", "bottom"), 1)],
      "AndroidAccessibilityNodeInfo": (
          [Field("unique_id", 1, "int32"), Field("bounds_in_screen", 2, "ProtoRect")]
          + [Field(name, num, "string") for name, num, _ in NODE_STRINGS]
          + [Field(name, num, "bool") for name, num, _ in NODE_FLAGS]),
      "AndroidAccessibilityNodeTree": [Field("nodes", 1, "AndroidAccessibilityNodeInfo", repeated=True)],
      "AndroidAccessibilityWindowInfo": [Field("tree", 11, "AndroidAccessibilityNodeTree")],
      "AndroidAccessibilityForest": [Field("windows", 1, "AndroidAccessibilityWindowInfo", repeated=True)],
  })
