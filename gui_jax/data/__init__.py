"""gui_jax.data: offline episode formats (ours, AndroidControl) and random-access sources.

Grain pipelines live in `gui_jax.data.pipeline` (imported on demand so that this package does
not require grain).
"""
from gui_jax.data.androidcontrol import (AndroidControlFormatError, convert_androidcontrol_to_store,
                                         read_androidcontrol, write_androidcontrol_tfrecord)
from gui_jax.data.episode_store import EpisodeMeta, EpisodeStore, write_store_index
from gui_jax.data.steps import StepDataset, StepRecord
from gui_jax.data.tfrecord import TFRecordError, iter_tfrecord, write_tfrecord

__all__ = [
    "AndroidControlFormatError", "EpisodeMeta", "EpisodeStore", "StepDataset", "StepRecord",
    "TFRecordError", "convert_androidcontrol_to_store", "iter_tfrecord", "read_androidcontrol",
    "write_androidcontrol_tfrecord", "write_store_index", "write_tfrecord",
]
