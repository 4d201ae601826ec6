"""A tiny word-level tokenizer for the captions of the synthetic data set.

The captions come from a closed grammar (``make_dataset.py``), so a subword tokenizer would add
nothing but a dependency.  The vocabulary is the data set's ``vocab.txt`` -- every word the grammar
can produce, not just the words a particular draw happened to contain -- so that two sets made with
different seeds or sizes give the same ids and a model trained on one reads the other.

Ids are a pure function of the word list: the four special tokens first, then the words in sorted
order.  Nothing depends on hashing, dict order or the order the words were seen in.
"""

from __future__ import annotations

from typing import Iterable, List, Optional, Sequence

__all__ = ["WordTokenizer", "PAD", "BOS", "EOS", "UNK"]

PAD = "<pad>"
BOS = "<bos>"
EOS = "<eos>"
UNK = "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)  # ids 0, 1, 2, 3, in this order


class WordTokenizer:
    """Words to ids and back: ``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2, ``<unk>`` 3, then the words.

    Text is lower-cased and split on white space; a word outside the vocabulary becomes ``<unk>``.

    Args:
        words: the vocabulary; duplicates and the special tokens themselves are ignored, and the
            order does not matter (the words are sorted).
    """

    def __init__(self, words: Iterable[str]) -> None:
        cleaned = set()
        for word in words:
            if not isinstance(word, str):
                raise TypeError(f"a vocabulary word must be a str, got {type(word).__name__}")
            word = word.strip().lower()
            if not word:
                continue
            if any(ch.isspace() for ch in word):
                raise ValueError(f"a vocabulary word cannot contain white space: {word!r}")
            if word not in SPECIALS:
                cleaned.add(word)
        self.itos: List[str] = list(SPECIALS) + sorted(cleaned)
        self.stoi = {word: index for index, word in enumerate(self.itos)}
        self.pad_id, self.bos_id, self.eos_id, self.unk_id = (self.stoi[s] for s in SPECIALS)

    @classmethod
    def from_vocab_text(cls, text: str) -> "WordTokenizer":
        """From the contents of a ``vocab.txt``: one word a line."""
        return cls(text.splitlines())

    @classmethod
    def from_captions(cls, captions: Iterable[str]) -> "WordTokenizer":
        """From the words of some captions, for a set that ships no ``vocab.txt``."""
        return cls(word for text in captions for word in text.lower().split())

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    def __len__(self) -> int:
        return len(self.itos)

    def words(self, text: str) -> List[str]:
        """The words of ``text`` as the tokenizer sees them (lower case, split on white space)."""
        return text.lower().split()

    def encode(self, text: str, max_tokens: Optional[int] = None) -> List[int]:
        """``<bos>`` + the word ids + ``<eos>``, cut and padded to ``max_tokens`` when given.

        A caption too long for ``max_tokens`` loses words at its end but keeps its ``<eos>``, so
        the model always learns where a caption stops.
        """
        ids = [self.stoi.get(word, self.unk_id) for word in self.words(text)]
        if max_tokens is None:
            return [self.bos_id] + ids + [self.eos_id]
        if max_tokens < 2:
            raise ValueError(f"max_tokens must be >= 2 (<bos> and <eos>), got {max_tokens}")
        ids = [self.bos_id] + ids[:max_tokens - 2] + [self.eos_id]
        return ids + [self.pad_id] * (max_tokens - len(ids))

    def decode(self, ids: Sequence[int]) -> str:
        """The words of ``ids`` up to the first ``<eos>``, without ``<bos>`` and ``<pad>``."""
        words = []
        for raw in ids:
            index = int(raw)
            if index == self.eos_id:
                break
            if index in (self.bos_id, self.pad_id):
                continue
            words.append(self.itos[index] if 0 <= index < len(self.itos) else UNK)
        return " ".join(words)
