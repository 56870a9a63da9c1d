"""TensorFlow Datasets (TFDS) directories without TensorFlow.

``tfds build`` / ``download_and_prepare`` leave a directory such as
``~/tensorflow_datasets/mnist/3.0.1/`` holding ``dataset_info.json``,
``features.json``, ``<feature>.labels.txt`` files and the shards
``mnist-train.tfrecord-00000-of-00001``. This module opens such a directory and
decodes its examples exactly as ``tfds.as_numpy(builder.as_dataset(...))`` yields
them (images, class labels, text, encoded tensors, sequences, ragged values)::

    import tfrecord_lite.tfds as tfds

    builder = tfds.builder_from_directory("~/tensorflow_datasets/mnist/3.0.1")
    builder.info.splits["train"].num_examples            # 60000
    for ex in builder.as_dataset(split="train[:10%]"):    # a TFRecordDataset pipeline
        ex["image"], ex["label"]                          # uint8 (28, 28, 1), np.int64
    source = builder.as_data_source("test")               # random access, for Grain
    len(source), source[0], source[10:20]

    ds = tfds.load("mnist", split="train", as_supervised=True)   # prepared under ~/tensorflow_datasets

Episodic datasets (RLDS, Open X-Embodiment) store each episode's ``steps`` as a
``tfds.features.Dataset``: an episode's ``steps`` decodes to a dict of arrays with the
step as first axis, and ``as_steps`` hands out one step at a time::

    rlds = tfds.builder_from_directory("~/tensorflow_datasets/bridge/0.1.0")
    for episode in rlds.as_dataset("train"):
        episode["steps"]["observation"]["image"]          # uint8 (T, H, W, 3)
    for step in rlds.as_steps("train"):                    # episode_index, step_index, ...
        step["observation"]["image"], step["action"]

Nothing is downloaded or prepared: prepare datasets with TFDS (``tfds build NAME``)
on any machine, then read them here. Images need the ``image`` extra
(``tfrecord-lite-np[image]``: Pillow, and simplejpeg for JPEG pixels exactly as TensorFlow
decodes them).
``dataset_info.json`` and ``features.json`` are treated as untrusted input: sizes
are bounded and no name read from them can make a path outside the directory.

The modules: ``_dataset_info`` (the metadata), ``_splits`` (split strings),
``_builder`` (``as_dataset``), ``_source`` (``as_data_source``, random access),
``_load`` (datasets by name), ``_steps`` (episodes into steps); the feature connectors in ``_features`` (the base),
``_tensor_features``, ``_image_features``, ``_sequence_features``, built from
``features.json`` by ``_features_json`` and decoded by ``_decoder``.
"""

from ._builder import Builder, ReadConfig
from ._dataset_info import DatasetInfo, DatasetNotFoundError, SplitInfo
from ._decoder import SkipDecoding
from ._features import FeatureConnector, UnsupportedFeatureError
from ._image_features import Image
from ._load import builder, builder_from_directory, data_source, default_data_dir, load
from ._load import is_tfds_dir as is_tfds_dir
from ._sequence_features import Dataset, FeaturesDict, Sequence, Video
from ._source import DataSource
from ._splits import FileInstruction, file_instructions
from ._tensor_features import Audio, BBoxFeature, ClassLabel, Scalar, Tensor, Text

__all__ = [
    "Audio",
    "BBoxFeature",
    "Builder",
    "ClassLabel",
    "DataSource",
    "Dataset",
    "DatasetInfo",
    "DatasetNotFoundError",
    "FeatureConnector",
    "FeaturesDict",
    "FileInstruction",
    "Image",
    "ReadConfig",
    "Scalar",
    "Sequence",
    "SkipDecoding",
    "SplitInfo",
    "Tensor",
    "Text",
    "UnsupportedFeatureError",
    "Video",
    "builder",
    "builder_from_directory",
    "data_source",
    "default_data_dir",
    "file_instructions",
    "load",
]
