"""``CaptionDataset``: the synthetic image+caption set, read as files and decoded like a real one.

Every byte goes through one ``read_bytes(path) -> bytes`` callable -- the manifest, the vocabulary,
each JPEG and each caption -- so that a training script can route all of the job's reads through the
project's io_uring reader on the plan's cores, and a test can count or fail them.  The default is a
plain file read.

Randomness: the only random draw is the optional horizontal flip, taken from torch's *global* CPU
generator.  ``mscale.data.StatefulDataLoader`` reseeds that generator from ``(seed, epoch, index)``
before each sample, so a sample is flipped the same way before and after a resume, in the main
process or in any worker.  The dataset keeps no state between calls.
"""

from __future__ import annotations

import io
import os
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset

from .tokenizer import WordTokenizer

__all__ = ["CaptionDataset", "Sample", "Batch", "collate", "read_file"]

ReadBytes = Callable[[str], bytes]
Sample = Dict[str, Union[int, torch.Tensor]]
Batch = Dict[str, Union[List[int], torch.Tensor]]

# What a horizontal mirror does to a caption: the grammar's only words for a side.
_MIRRORED = {"left": "right", "right": "left"}


def read_file(path: str) -> bytes:
    """The default ``read_bytes``: the whole file, read with plain ``open``/``read``."""
    with open(path, "rb") as stream:
        return stream.read()


class CaptionDataset(Dataset):
    """The samples of a set written by ``make_dataset.py``, in manifest order.

    ``dataset[i]`` is ``{"id": int, "pixels": FloatTensor[3, H, W] in [0, 1], "tokens":
    LongTensor[max_tokens]}``: the sample id from the manifest, the decoded image, and the caption
    as ``<bos> words <eos> <pad>...``.

    Args:
        root: the set's directory (holding ``index.tsv`` and ``vocab.txt``).
        image_size: side of the pixel tensors; an image of another size is resized (bilinear, which
            Pillow computes deterministically).
        max_tokens: length of every token tensor (captions are cut or padded to it).
        read_bytes: ``read_bytes(path) -> bytes`` for every read; ``read_file`` if ``None``.  With
            ``num_workers > 0`` it must survive being sent to the worker processes (picklable, or
            the ``fork`` start method).
        augment: flip each image left-right with probability 0.5, drawn from torch's global CPU
            generator, and swap "left" and "right" in its caption so that the caption stays true.
        tokenizer: a ``WordTokenizer``; by default the one of the set's ``vocab.txt``.
    """

    def __init__(self, root: str, image_size: int, max_tokens: int,
                 read_bytes: Optional[ReadBytes] = None, *, augment: bool = False,
                 tokenizer: Optional[WordTokenizer] = None) -> None:
        if image_size < 1:
            raise ValueError(f"image_size must be >= 1, got {image_size}")
        if max_tokens < 2:
            raise ValueError(f"max_tokens must be >= 2 (<bos> and <eos>), got {max_tokens}")
        self.root = root
        self.image_size = image_size
        self.max_tokens = max_tokens
        self.read_bytes: ReadBytes = read_file if read_bytes is None else read_bytes
        self.augment = augment
        self.entries: List[Tuple[int, str, str]] = self._read_manifest()
        if tokenizer is None:
            vocab = self.read_bytes(os.path.join(root, "vocab.txt")).decode("utf-8")
            tokenizer = WordTokenizer.from_vocab_text(vocab)
        self.tokenizer = tokenizer

    def _read_manifest(self) -> List[Tuple[int, str, str]]:
        path = os.path.join(self.root, "index.tsv")
        lines = self.read_bytes(path).decode("utf-8").splitlines()
        if not lines or lines[0].split("\t") != ["id", "image", "caption"]:
            raise ValueError(f"{path}: not a make_dataset.py manifest (header 'id image caption')")
        entries = []
        for number, line in enumerate(lines[1:], start=2):
            fields = line.split("\t")
            if len(fields) != 3:
                raise ValueError(f"{path}:{number}: expected 3 tab-separated fields, got "
                                 f"{len(fields)}")
            try:
                sample_id = int(fields[0])
            except ValueError:
                raise ValueError(f"{path}:{number}: sample id {fields[0]!r} is not an integer") \
                    from None
            entries.append((sample_id, fields[1], fields[2]))
        if not entries:
            raise ValueError(f"{path}: the manifest lists no samples")
        return entries

    def __len__(self) -> int:
        return len(self.entries)

    def decode_image(self, jpeg: bytes) -> torch.Tensor:
        """JPEG bytes to a float tensor ``[3, image_size, image_size]`` in [0, 1]."""
        with Image.open(io.BytesIO(jpeg)) as image:
            image = image.convert("RGB")
            if image.size != (self.image_size, self.image_size):
                image = image.resize((self.image_size, self.image_size), Image.BILINEAR)
            # np.array copies: a tensor over Pillow's read-only buffer would warn and alias it.
            array = np.array(image, dtype=np.uint8)
        return torch.from_numpy(array).permute(2, 0, 1).float().div_(255.0)

    def __getitem__(self, index: int) -> Sample:
        sample_id, image_name, caption_name = self.entries[index]
        pixels = self.decode_image(self.read_bytes(os.path.join(self.root, image_name)))
        words = self.tokenizer.words(
            self.read_bytes(os.path.join(self.root, caption_name)).decode("utf-8"))
        # A draw only when augmenting: a dataset without augmentation consumes no random numbers,
        # so it cannot shift the training loop's when used without the per-sample reseeding.
        if self.augment and bool(torch.rand(()) < 0.5):
            pixels = torch.flip(pixels, dims=(2,))
            words = [_MIRRORED.get(word, word) for word in words]
        tokens = torch.tensor(self.tokenizer.encode(" ".join(words), self.max_tokens),
                              dtype=torch.long)
        return {"id": sample_id, "pixels": pixels, "tokens": tokens}


def collate(samples: Sequence[Sample]) -> Batch:
    """Samples to a batch: ``{"ids": [int], "pixels": [B, 3, H, W], "tokens": [B, T]}``.

    The ids stay a list of ints (in batch order) so that a training loop can log which samples each
    step saw; nothing random happens here.
    """
    if not samples:
        raise ValueError("collate needs at least one sample")
    return {"ids": [int(sample["id"]) for sample in samples],
            "pixels": torch.stack([sample["pixels"] for sample in samples]),
            "tokens": torch.stack([sample["tokens"] for sample in samples])}
