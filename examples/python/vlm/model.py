"""``TinyVLM``: a small decoder-only vision-language model, LLaVA-shaped.

    image [B,3,H,W] --Conv2d(stride=patch)--> patches [B,P,vision_dim] (+ vision positions)
                    --projector (Linear, GELU, Linear)--> image tokens [B,P,dim]
    caption ids [B,T] --Embedding--> text tokens [B,T,dim] (+ text positions)
    [image tokens ; text tokens] --dropout, depth x pre-norm block (causal self-attention, MLP)-->
    LayerNorm --> LM head on the text positions --> logits [B,T,vocab]

The loss is next-token cross-entropy on the caption only: the image is the prompt, pads are
ignored.  Attention is causal over the whole sequence, so every image token sees only the image
tokens before it and every text token sees the whole image and the text before it.

Determinism.  The block is written out here rather than taken from ``nn.TransformerEncoderLayer``,
whose fast path (taken in eval mode under some conditions) runs different kernels from training.
Every op used (conv, matmul, softmax, layer norm, embedding, cross-entropy, dropout) is deterministic
on the CPU for a fixed number of threads; the random numbers -- the initial weights and every dropout
mask -- come from torch's global CPU generator.  For losses equal bit for bit across runs and across a
resume, a training script should, before building anything:

    torch.use_deterministic_algorithms(True)  # refuse, rather than silently run, a nondeterministic op
    torch.set_num_threads(1)                  # reduction order of the CPU kernels depends on threads
    torch.manual_seed(seed)                   # weights and dropout masks

and save / restore ``torch.get_rng_state()`` with the model and optimizer.  ``vlm.selftest`` checks
exactly this.
"""

from __future__ import annotations

import math
from typing import Dict, Optional, Union

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["Block", "TinyVLM"]


class Block(nn.Module):
    """A pre-norm transformer block: x + attn(norm(x)), then x + mlp(norm(x)), with dropout."""

    def __init__(self, dim: int, heads: int, dropout: float = 0.1, mlp_ratio: int = 4) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim ({dim}) must be a multiple of heads ({heads})")
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.attn_drop = nn.Dropout(dropout)
        self.resid_drop = nn.Dropout(dropout)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_ratio * dim), nn.GELU(),
                                 nn.Linear(mlp_ratio * dim, dim), nn.Dropout(dropout))

    def forward(self, x: torch.Tensor, blocked: torch.Tensor) -> torch.Tensor:
        """``x`` [B,S,dim]; ``blocked`` [S,S] bool, true where a query may not see a key."""
        batch, length, dim = x.shape
        head_dim = dim // self.heads
        qkv = self.qkv(self.norm1(x)).view(batch, length, 3, self.heads, head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each [B, heads, S, head_dim]
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(head_dim))
        weights = self.attn_drop(scores.masked_fill(blocked, float("-inf")).softmax(dim=-1))
        attended = (weights @ v).transpose(1, 2).reshape(batch, length, dim)
        x = x + self.resid_drop(self.proj(attended))
        return x + self.mlp(self.norm2(x))


class TinyVLM(nn.Module):
    """A tiny vision-language model: image patches as a prompt, then the caption, causally.

    With the defaults (32x32 images, 8x8 patches, width 64, 2 blocks, 4 heads) and the data set's
    26-id vocabulary and 24 tokens it has 126,656 parameters; 16 image tokens + 24 text tokens.

    Args:
        image_size: side of the square input images, a multiple of ``patch``.
        patch: side of a patch; the patch embedding is a ``Conv2d`` with this kernel and stride.
        dim: width of the transformer (the text width).
        depth: number of transformer blocks.
        heads: attention heads per block (``dim`` must be a multiple).
        vocab: number of token ids (``WordTokenizer.vocab_size``).
        max_tokens: caption length, the number of text positions.
        dropout: dropout probability everywhere (embeddings, attention weights, residuals, MLP).
        pad_id: the id the loss ignores.
        vision_dim: width of the patch embedding before the projector; ``dim`` by default.
    """

    def __init__(self, image_size: int = 32, patch: int = 8, dim: int = 64, depth: int = 2,
                 heads: int = 4, *, vocab: int, max_tokens: int = 24, dropout: float = 0.1,
                 pad_id: int = 0, vision_dim: Optional[int] = None) -> None:
        super().__init__()
        if image_size % patch:
            raise ValueError(f"image_size ({image_size}) must be a multiple of patch ({patch})")
        if vocab < 1 or max_tokens < 2:
            raise ValueError(f"need vocab >= 1 and max_tokens >= 2, got {vocab} and {max_tokens}")
        vision_dim = dim if vision_dim is None else vision_dim
        self.image_size = image_size
        self.patch = patch
        self.num_patches = (image_size // patch) ** 2
        self.max_tokens = max_tokens
        self.vocab = vocab
        self.pad_id = pad_id

        self.patch_embed = nn.Conv2d(3, vision_dim, kernel_size=patch, stride=patch)
        self.vision_pos = nn.Parameter(torch.zeros(1, self.num_patches, vision_dim))
        self.projector = nn.Sequential(nn.Linear(vision_dim, dim), nn.GELU(), nn.Linear(dim, dim))
        self.token_embed = nn.Embedding(vocab, dim)
        self.text_pos = nn.Parameter(torch.zeros(1, max_tokens, dim))
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(Block(dim, heads, dropout) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        length = self.num_patches + max_tokens
        # Not persistent: it is a function of the shape, so a state_dict need not carry it. uint8, not
        # bool: DistributedDataParallel broadcasts buffers at start and gloo has no bool type.
        self.register_buffer("blocked", torch.ones(length, length, dtype=torch.uint8).triu(1),
                             persistent=False)
        self.apply(self._init_weights)
        nn.init.normal_(self.vision_pos, std=0.02)
        nn.init.normal_(self.text_pos, std=0.02)

    @classmethod
    def for_dataset(cls, dataset: "object", **kwargs: Union[int, float]) -> "TinyVLM":
        """A model sized for a ``CaptionDataset``: its image size, vocabulary, length and pad id."""
        return cls(image_size=dataset.image_size, vocab=dataset.tokenizer.vocab_size,
                   max_tokens=dataset.max_tokens, pad_id=dataset.tokenizer.pad_id, **kwargs)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        # Small normal weights (GPT-2 style) keep the first losses near log(vocab); drawn from the
        # global generator in module order, so torch.manual_seed fixes them.
        if isinstance(module, (nn.Linear, nn.Conv2d, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)

    def num_parameters(self) -> int:
        return sum(parameter.numel() for parameter in self.parameters())

    def forward(self, pixels: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """Logits ``[B, T, vocab]`` at the text positions; position t predicts token t + 1."""
        if pixels.shape[-2:] != (self.image_size, self.image_size):
            raise ValueError(f"expected {self.image_size}x{self.image_size} images, got "
                             f"{tuple(pixels.shape[-2:])}")
        length = tokens.shape[1]
        if length > self.max_tokens:
            raise ValueError(f"{length} tokens, more than max_tokens={self.max_tokens}")
        patches = self.patch_embed(pixels).flatten(2).transpose(1, 2) + self.vision_pos
        image = self.projector(patches)
        text = self.token_embed(tokens) + self.text_pos[:, :length]
        x = self.drop(torch.cat([image, text], dim=1))
        total = self.num_patches + length
        blocked = self.blocked[:total, :total].bool()
        for block in self.blocks:
            x = block(x, blocked)
        return self.head(self.norm(x[:, self.num_patches:]))

    def loss(self, batch: Dict[str, torch.Tensor]) -> torch.Tensor:
        """Mean cross-entropy of the next caption token, over the non-pad targets of the batch."""
        tokens = batch["tokens"]
        return self.loss_from_logits(self.forward(batch["pixels"], tokens), tokens)

    def loss_from_logits(self, logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """``loss`` on logits computed already: for a wrapper such as ``DistributedDataParallel``,
        which reduces the gradients only of what its own ``forward()`` computed."""
        return F.cross_entropy(logits[:, :-1].reshape(-1, self.vocab),
                               tokens[:, 1:].reshape(-1), ignore_index=self.pad_id)

    @torch.no_grad()
    def greedy(self, pixels: torch.Tensor, bos_id: int, eos_id: int) -> torch.Tensor:
        """Captions ``[B, max_tokens]`` by greedy decoding (call ``eval()`` first); pad after eos."""
        batch = pixels.shape[0]
        tokens = torch.full((batch, self.max_tokens), self.pad_id, dtype=torch.long,
                            device=pixels.device)
        tokens[:, 0] = bos_id
        done = torch.zeros(batch, dtype=torch.bool, device=pixels.device)
        for position in range(1, self.max_tokens):
            # Causal: the pads after `position` do not change the logits at `position - 1`.
            step = self.forward(pixels, tokens)[:, position - 1].argmax(dim=-1)
            tokens[:, position] = torch.where(done, torch.full_like(step, self.pad_id), step)
            done |= step == eos_id
            if bool(done.all()):
                break
        return tokens
