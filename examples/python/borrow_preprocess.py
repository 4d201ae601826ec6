#!/usr/bin/python3
"""A borrower (issue 27): the preprocessing of the next data set, run on CPUs that the training job
lends while it computes (contract ``borrow_preprocess.msc``, ``class = opportunistic``).

    borrow_preprocess.py --data NEXT --out OUT [--size 96] [--crops 4] [--seed 0] [--snapshot-every 16]

For every image of a data set made by ``make_dataset.py`` (in the order of its manifest): decode the
JPEG with Pillow, cut ``--crops`` random square crops of 3/4 of its side (drawn from a generator seeded
with ``(seed, id, crop)``), resize each to ``--size`` (Lanczos), flip every other one left-right, and
write them as JPEGs ``OUT/images/<id>_<crop>.jpg`` (quality 90). Offline augmentation for the next
training run.

The node freezes, thaws and moves it at any instruction, and may end it (a take-back that could
neither shrink nor freeze it, or its contract released): nothing here depends on wall time, every
file is written under a temporary name and renamed into place, and every ``--snapshot-every`` images
its progress (``OUT/progress.json``: the number of images done, with the settings) is renamed into
place after their files. A new run resumes from that snapshot: an end loses at most the images since
it, which are done again with the same result, byte for byte. It prints ``preprocessed N of M`` at
every snapshot and ``done: N images, K files`` at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import sys
from typing import Any, Dict, List, Tuple

from PIL import Image


def manifest(root: str) -> List[Tuple[int, str]]:
    lines = open(os.path.join(root, "index.tsv"), encoding="utf-8").read().splitlines()
    if not lines or lines[0].split("\t") != ["id", "image", "caption"]:
        raise SystemExit("borrow_preprocess: %s is not a make_dataset.py set (no index.tsv)" % root)
    return [(int(fields[0]), fields[1]) for fields in (line.split("\t") for line in lines[1:])]


def write_atomically(path: str, data: bytes) -> None:
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)


def crops_of(image: Image.Image, sample_id: int, a: argparse.Namespace) -> List[bytes]:
    width, height = image.size
    side = max(1, min(width, height) * 3 // 4)
    out = []
    for crop in range(a.crops):
        # A generator per (seed, id, crop): the same crop whatever ran before, so a resumed run
        # writes what an uninterrupted one would.
        seed = int.from_bytes(hashlib.sha256(b"%d:%d:%d" % (a.seed, sample_id, crop)).digest()[:8], "little")
        draw = random.Random(seed)
        left, top = draw.randint(0, width - side), draw.randint(0, height - side)
        part = image.crop((left, top, left + side, top + side)).resize((a.size, a.size), Image.LANCZOS)
        if crop % 2:
            part = part.transpose(Image.FLIP_LEFT_RIGHT)
        buffer = io.BytesIO()
        part.save(buffer, "JPEG", quality=90)
        out.append(buffer.getvalue())
    return out


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="a data set made by make_dataset.py")
    ap.add_argument("--out", required=True, help="where the crops and progress.json go")
    ap.add_argument("--size", type=int, default=96, help="side of each crop written (default 96)")
    ap.add_argument("--crops", type=int, default=4, help="crops per image (default 4)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--snapshot-every", type=int, default=16, help="images between progress snapshots")
    a = ap.parse_args(argv)
    samples = manifest(a.data)
    os.makedirs(os.path.join(a.out, "images"), exist_ok=True)
    settings: Dict[str, Any] = {"data": os.path.abspath(a.data), "images": len(samples), "size": a.size,
                                "crops": a.crops, "seed": a.seed}
    progress_path = os.path.join(a.out, "progress.json")
    done = 0
    if os.path.exists(progress_path):
        progress = json.load(open(progress_path))
        if progress["settings"] != settings:
            raise SystemExit("borrow_preprocess: %s was made with other settings: %s" % (a.out, progress["settings"]))
        done = progress["done"]
        print("# resume at image %d of %d (its snapshot)" % (done, len(samples)), flush=True)
    else:
        print("# start: %d images, %d crops of %dx%d each" % (len(samples), a.crops, a.size, a.size), flush=True)

    def snapshot(count: int) -> None:
        write_atomically(progress_path, json.dumps({"done": count, "settings": settings}).encode())
        print("preprocessed %d of %d" % (count, len(samples)), flush=True)

    for index in range(done, len(samples)):
        sample_id, image_name = samples[index]
        with Image.open(os.path.join(a.data, image_name)) as image:
            image = image.convert("RGB")
            for crop, data in enumerate(crops_of(image, sample_id, a)):
                write_atomically(os.path.join(a.out, "images", "%06d_%d.jpg" % (sample_id, crop)), data)
        if (index + 1) % a.snapshot_every == 0 or index + 1 == len(samples):
            snapshot(index + 1)
    print("done: %d images, %d files" % (len(samples), len(samples) * a.crops), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
