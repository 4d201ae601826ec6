#!/usr/bin/python3
"""A borrower (issue 27): CPU inference of the trained model, run on CPUs that the training job lends
while it computes (contract ``borrow_infer.msc``, ``class = opportunistic``).

    borrow_infer.py --model MODEL.pt --data NEXT --out OUT [--batch 8] [--snapshot-every 2]

Loads the model the training job saved (``train.py --model-out``: its ``state_dict()``), captions the
images of a data set made by ``make_dataset.py`` (``TinyVLM.greedy``, one thread, no gradients) in
batches in the order of its manifest, and writes each batch's captions beside the true ones to
``OUT/captions/<first>.tsv`` (``id``, the caption made, the true caption). The model has seen shapes
and words of the same grammar, not these images: ``exact`` counts the captions equal to the truth.

Frozen, thawed or moved by the node at any instruction, it keeps no clock. Every
``--snapshot-every`` batches its progress (``OUT/progress.json``: images captioned, exact ones, the
settings) is renamed into place after their files, and a new run resumes from there: an end loses at
most the batches since, captioned again with the same result. It prints ``captioned N of M, exact K``
at every snapshot and ``done: N captions, exact K`` at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List

import torch

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
from vlm.data import CaptionDataset  # noqa: E402
from vlm.model import TinyVLM  # noqa: E402

MAX_TOKENS = 24  # train.py's


def write_atomically(path: str, data: bytes) -> None:
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="a state_dict saved by train.py --model-out")
    ap.add_argument("--data", required=True, help="a data set made by make_dataset.py (its images are captioned)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--snapshot-every", type=int, default=2, help="batches between progress snapshots")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)  # one lent CPU at most; more threads would only queue
    dataset = CaptionDataset(a.data, 32, MAX_TOKENS)  # train.py's image size; larger images are resized
    model = TinyVLM.for_dataset(dataset)
    model.load_state_dict(torch.load(a.model, map_location="cpu"))
    model.eval()
    tokenizer = dataset.tokenizer
    os.makedirs(os.path.join(a.out, "captions"), exist_ok=True)
    settings: Dict[str, Any] = {"model": os.path.abspath(a.model), "data": os.path.abspath(a.data),
                                "images": len(dataset), "batch": a.batch}
    progress_path = os.path.join(a.out, "progress.json")
    done, exact = 0, 0
    if os.path.exists(progress_path):
        progress = json.load(open(progress_path))
        if progress["settings"] != settings:
            raise SystemExit("borrow_infer: %s was made with other settings: %s" % (a.out, progress["settings"]))
        done, exact = progress["done"], progress["exact"]
        print("# resume at image %d of %d (its snapshot)" % (done, len(dataset)), flush=True)
    else:
        print("# start: %d images, batches of %d" % (len(dataset), a.batch), flush=True)

    batches = 0
    with torch.no_grad():
        while done < len(dataset):
            samples = [dataset[i] for i in range(done, min(done + a.batch, len(dataset)))]
            pixels = torch.stack([s["pixels"] for s in samples])
            made = model.greedy(pixels, tokenizer.bos_id, tokenizer.eos_id)
            lines = []
            for sample, tokens in zip(samples, made.tolist()):
                caption, truth = tokenizer.decode(tokens), tokenizer.decode(sample["tokens"].tolist())
                exact += caption == truth
                lines.append("%d\t%s\t%s\n" % (sample["id"], caption, truth))
            write_atomically(os.path.join(a.out, "captions", "%06d.tsv" % done), "".join(lines).encode())
            done += len(samples)
            batches += 1
            if batches % a.snapshot_every == 0 or done == len(dataset):
                write_atomically(progress_path, json.dumps({"done": done, "exact": exact, "settings": settings}).encode())
                print("captioned %d of %d, exact %d" % (done, len(dataset), exact), flush=True)
    print("done: %d captions, exact %d" % (done, exact), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
