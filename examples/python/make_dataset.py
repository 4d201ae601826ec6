#!/usr/bin/python3
"""Generate the synthetic image+caption data set of the example training job.

    make_dataset.py OUT_DIR --samples N --seed S [--image-size 32]

Each sample is a JPEG image of one or two simple shapes (circle, square, triangle, stripes) in a few
colours and two sizes, each in one cell of a 3x3 grid, and a caption that says what is where:

    a small red circle at the top left and a large blue square in the center

The set is a directory of real files, so that a training job reads and decodes it the way a real one
does (file reads, JPEG decoding with Pillow):

    OUT_DIR/images/000000.jpg     the image of sample 0
    OUT_DIR/captions/000000.txt   its caption, one line of UTF-8
    OUT_DIR/vocab.txt             every word the caption grammar can produce, one a line, sorted
    OUT_DIR/dataset.json          how the set was made (seed, samples, image size, JPEG settings)
    OUT_DIR/index.tsv             the manifest: a header, then "id<TAB>image<TAB>caption" per sample

Reproducible: sample ``i`` depends only on ``(seed, i, image size)``, drawn from its own generator,
so the same arguments give the same files byte for byte (with the same Pillow and libjpeg), and a
larger ``--samples`` extends a smaller set rather than changing it.  The last line printed is a
SHA-256 over every file of the set (``dataset_digest``) to compare two sets by.

A killed generator leaves no manifest that names a missing file: every file is written under a
temporary name and renamed into place, and ``index.tsv`` is renamed into place last, after all the
files it names.  An old manifest is removed before anything else is written, so a set being
regenerated has no manifest until it is complete.  (Renames make this safe against a killed process;
against a power cut the files would also need fsync, which a throw-away synthetic set does not pay.)
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import sys
from dataclasses import dataclass
from typing import Dict, Iterator, List, Sequence, Tuple

from PIL import Image, ImageDraw

FORMAT_VERSION = 1
JPEG_QUALITY = 90          # fixed: the bytes of a set must not depend on Pillow's default
JPEG_SUBSAMPLING = 0       # 4:4:4: at 32x32 pixels, 4:2:0 chroma would smear the colours together
BACKGROUND = (12, 12, 12)

COLOURS: Dict[str, Tuple[int, int, int]] = {
    "red": (220, 40, 40),
    "green": (40, 180, 60),
    "blue": (50, 90, 235),
    "yellow": (235, 210, 40),
    "white": (235, 235, 235),
}
SHAPES = ("circle", "square", "triangle", "stripes")
SIZES: Dict[str, float] = {"small": 0.55, "large": 0.9}  # side of the shape's box, in cells
ROWS = ("top", "middle", "bottom")
COLUMNS = ("left", "center", "right")

# Where a cell is, in words.  Left and right are the only words a horizontal mirror changes, which
# is what lets the data set's flip augmentation fix a caption by swapping them.
PLACES: Dict[Tuple[int, int], str] = {
    (0, 0): "at the top left", (0, 1): "at the top", (0, 2): "at the top right",
    (1, 0): "on the left", (1, 1): "in the center", (1, 2): "on the right",
    (2, 0): "at the bottom left", (2, 1): "at the bottom", (2, 2): "at the bottom right",
}


def vocabulary() -> List[str]:
    """Every word a caption can contain, sorted: the tokenizer's vocabulary, whatever was drawn."""
    words = {"a", "and"} | set(COLOURS) | set(SHAPES) | set(SIZES)
    for place in PLACES.values():
        words.update(place.split())
    return sorted(words)


@dataclass(frozen=True)
class Shape:
    """One shape of a scene: what it is and its box in pixels (inclusive corners)."""

    kind: str
    colour: str
    size: str
    row: int
    column: int
    box: Tuple[int, int, int, int]

    def phrase(self) -> str:
        # "stripes" is a plural: "large blue stripes", not "a large blue stripes".
        article = "" if self.kind == "stripes" else "a "
        return f"{article}{self.size} {self.colour} {self.kind} {PLACES[(self.row, self.column)]}"


def sample_rng(seed: int, index: int) -> random.Random:
    """The generator of sample ``index``: a hash of (seed, index), the same on every platform."""
    digest = hashlib.blake2b(digest_size=16, person=b"vlm.dataset")
    digest.update(seed.to_bytes(16, "little", signed=True))
    digest.update(index.to_bytes(16, "little", signed=True))
    return random.Random(int.from_bytes(digest.digest(), "little"))


def draw_scene(rng: random.Random, image_size: int) -> List[Shape]:
    """One or two shapes in distinct cells of the 3x3 grid, listed top to bottom, left to right."""
    count = rng.choice((1, 2))
    cells = sorted(rng.sample(sorted(PLACES), count))  # sorted: the caption reads in scan order
    cell = image_size / 3.0
    shapes = []
    for row, column in cells:
        kind = rng.choice(SHAPES)
        colour = rng.choice(sorted(COLOURS))
        size = rng.choice(sorted(SIZES))
        side = max(3, int(round(SIZES[size] * cell)))
        # Jitter the box inside its cell; the box never leaves the cell, so shapes never overlap.
        slack = max(0.0, cell - side)
        x0 = int(column * cell + rng.uniform(0.0, slack))
        y0 = int(row * cell + rng.uniform(0.0, slack))
        shapes.append(Shape(kind, colour, size, row, column,
                            (x0, y0, min(x0 + side - 1, image_size - 1),
                             min(y0 + side - 1, image_size - 1))))
    return shapes


def render(shapes: Sequence[Shape], image_size: int) -> Image.Image:
    """The scene as an RGB image; all drawing is integer rasterisation, hence deterministic."""
    image = Image.new("RGB", (image_size, image_size), BACKGROUND)
    draw = ImageDraw.Draw(image)
    for shape in shapes:
        fill = COLOURS[shape.colour]
        x0, y0, x1, y1 = shape.box
        if shape.kind == "circle":
            draw.ellipse((x0, y0, x1, y1), fill=fill)
        elif shape.kind == "square":
            draw.rectangle((x0, y0, x1, y1), fill=fill)
        elif shape.kind == "triangle":  # pointing up: a mirror image is the same triangle
            draw.polygon(((x0 + x1) / 2.0, y0, x1, y1, x0, y1), fill=fill)
        else:  # vertical stripes, one pixel or more wide, with gaps as wide
            width = max(1, (x1 - x0 + 1) // 5)
            for x in range(x0, x1 + 1, 2 * width):
                draw.rectangle((x, y0, min(x + width - 1, x1), y1), fill=fill)
    return image


def caption(shapes: Sequence[Shape]) -> str:
    return " and ".join(shape.phrase() for shape in shapes)


def encode_jpeg(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    # Every setting that changes the bytes is spelled out; no EXIF, no optimisation pass.
    image.save(buffer, format="JPEG", quality=JPEG_QUALITY, subsampling=JPEG_SUBSAMPLING,
               optimize=False, progressive=False)
    return buffer.getvalue()


def make_sample(seed: int, index: int, image_size: int) -> Tuple[bytes, str]:
    """The JPEG bytes and the caption of sample ``index``."""
    shapes = draw_scene(sample_rng(seed, index), image_size)
    return encode_jpeg(render(shapes, image_size)), caption(shapes)


def _temporary(path: str) -> str:
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}.tmp-{os.getpid()}")


def write_atomic(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` so that ``path`` is never seen holding part of it."""
    temporary = _temporary(path)
    with open(temporary, "wb") as stream:
        stream.write(data)
    os.replace(temporary, path)


def _is_temporary(name: str) -> bool:
    return name.startswith(".") and ".tmp-" in name


def _names(index: int) -> Tuple[str, str]:
    return f"images/{index:06d}.jpg", f"captions/{index:06d}.txt"


def generate(out_dir: str, samples: int, seed: int, image_size: int = 32) -> str:
    """Write the data set into ``out_dir`` (created if needed); return its digest."""
    if samples < 1:
        raise ValueError(f"--samples must be >= 1, got {samples}")
    if image_size < 9:
        raise ValueError(f"--image-size must be >= 9 (three cells of three pixels), got {image_size}")
    if not 0 <= seed < 1 << 64:
        raise ValueError(f"--seed must be in [0, 2**64), got {seed}")
    manifest = os.path.join(out_dir, "index.tsv")
    os.makedirs(out_dir, exist_ok=True)
    # First of all: no manifest while the set is incomplete (a rerun overwrites its files).
    if os.path.lexists(manifest):
        os.remove(manifest)
    for sub in ("images", "captions"):
        os.makedirs(os.path.join(out_dir, sub), exist_ok=True)

    rows = ["id\timage\tcaption"]
    for index in range(samples):
        jpeg, text = make_sample(seed, index, image_size)
        image_name, caption_name = _names(index)
        write_atomic(os.path.join(out_dir, image_name), jpeg)
        write_atomic(os.path.join(out_dir, caption_name), (text + "\n").encode("utf-8"))
        rows.append(f"{index}\t{image_name}\t{caption_name}")
    write_atomic(os.path.join(out_dir, "vocab.txt"), ("\n".join(vocabulary()) + "\n").encode())
    meta = {"format": FORMAT_VERSION, "seed": seed, "samples": samples, "image_size": image_size,
            "jpeg_quality": JPEG_QUALITY, "jpeg_subsampling": "4:4:4"}
    write_atomic(os.path.join(out_dir, "dataset.json"),
                 (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode())
    write_atomic(manifest, ("\n".join(rows) + "\n").encode())

    # Files of an earlier, larger or killed run are not part of this set: remove them, so that the
    # directory holds exactly the set and two sets compare equal file by file.
    listed = {name for index in range(samples) for name in _names(index)}
    for sub in ("images", "captions"):
        for name in os.listdir(os.path.join(out_dir, sub)):
            if f"{sub}/{name}" not in listed:
                os.remove(os.path.join(out_dir, sub, name))
    for name in os.listdir(out_dir):
        if _is_temporary(name):
            os.remove(os.path.join(out_dir, name))
    return dataset_digest(out_dir)


def _set_files(root: str) -> Iterator[str]:
    """The files of the set under ``root``, as relative paths in a fixed order."""
    with open(os.path.join(root, "index.tsv"), encoding="utf-8") as stream:
        lines = stream.read().splitlines()[1:]
    yield from ("dataset.json", "index.tsv", "vocab.txt")
    for line in lines:
        _, image_name, caption_name = line.split("\t")
        yield image_name
        yield caption_name


def dataset_digest(root: str) -> str:
    """SHA-256 over the names and contents of every file of the set (as the manifest lists them)."""
    digest = hashlib.sha256()
    for name in _set_files(root):
        with open(os.path.join(root, name), "rb") as stream:
            data = stream.read()
        # Length-prefixed, so that no two different sets hash the same bytes.
        for part in (name.encode(), data):
            digest.update(len(part).to_bytes(8, "little"))
            digest.update(part)
    return digest.hexdigest()


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", help="directory to write the set into (created if missing)")
    parser.add_argument("--samples", type=int, required=True, help="number of samples")
    parser.add_argument("--seed", type=int, required=True, help="seed, in [0, 2**64)")
    parser.add_argument("--image-size", type=int, default=32, help="side in pixels (default 32)")
    args = parser.parse_args(argv)
    try:
        digest = generate(args.out_dir, args.samples, args.seed, args.image_size)
    except (ValueError, OSError) as error:
        print(f"make_dataset.py: error: {error}", file=sys.stderr)
        return 2
    print(f"{args.samples} samples in {args.out_dir}")
    print(f"sha256 {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
