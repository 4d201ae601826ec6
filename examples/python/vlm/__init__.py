"""A small but real vision-language training job's parts: data set, tokenizer, model.

``make_dataset.py`` (next to this package) writes the synthetic image+caption set;
``CaptionDataset`` reads and decodes it, ``WordTokenizer`` turns captions into ids, and ``TinyVLM``
learns to caption the images.  ``python3 -m vlm.selftest check`` proves the training is
deterministic bit for bit, across fresh processes and across a save and resume.
"""

from .data import CaptionDataset, collate, read_file
from .model import TinyVLM
from .tokenizer import WordTokenizer

__all__ = ["CaptionDataset", "TinyVLM", "WordTokenizer", "collate", "read_file"]
