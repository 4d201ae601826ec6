"""Tests of the example training job's parts (examples/python): data set, tokenizer, model.

The promise under test: the synthetic set is the same bytes for the same seed and never has a
manifest naming a missing file; the data set and model do what their docstrings say; and training is
deterministic bit for bit -- the same seed in two fresh processes, and a resume from a checkpoint in a
new process, give every step the same loss (float.hex), learning rate and sample ids.

``VLM_EXAMPLES`` names examples/python (vlm.test sets it); otherwise it is found from this file.
"""

import io
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from typing import Dict, List

import torch
import torch.nn.functional as F
from PIL import Image

EXAMPLES = os.environ.get("VLM_EXAMPLES") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "examples", "python")
sys.path.insert(0, EXAMPLES)

import make_dataset  # noqa: E402  (examples/python is on the path only now)
from vlm import CaptionDataset, TinyVLM, WordTokenizer, collate  # noqa: E402
from vlm import selftest  # noqa: E402

MAKE_DATASET = os.path.join(EXAMPLES, "make_dataset.py")


def files_of(root: str) -> Dict[str, bytes]:
    """Every file under ``root`` by relative path."""
    found = {}
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            with open(path, "rb") as stream:
                found[os.path.relpath(path, root)] = stream.read()
    return found


def generate_cli(out_dir: str, samples: int, seed: int, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, MAKE_DATASET, out_dir, "--samples", str(samples),
                           "--seed", str(seed), *extra], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


class MakeDatasetTest(unittest.TestCase):
    def setUp(self) -> None:
        self.scratch = tempfile.TemporaryDirectory(prefix="vlm-test-")
        self.addCleanup(self.scratch.cleanup)

    def path(self, name: str) -> str:
        return os.path.join(self.scratch.name, name)

    def test_same_seed_same_bytes(self) -> None:
        first, second = generate_cli(self.path("a"), 24, 7), generate_cli(self.path("b"), 24, 7)
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertEqual(second.returncode, 0, second.stderr)
        self.assertEqual(files_of(self.path("a")), files_of(self.path("b")))
        digest = first.stdout.split()[-1]
        self.assertEqual(digest, second.stdout.split()[-1])
        self.assertEqual(digest, make_dataset.dataset_digest(self.path("a")))
        self.assertEqual(len(files_of(self.path("a"))), 2 * 24 + 3)

    def test_other_seed_other_set(self) -> None:
        a = make_dataset.generate(self.path("a"), 16, 1)
        b = make_dataset.generate(self.path("b"), 16, 2)
        self.assertNotEqual(a, b)

    def test_larger_set_extends_smaller(self) -> None:
        make_dataset.generate(self.path("small"), 8, 5)
        make_dataset.generate(self.path("large"), 16, 5)
        small, large = files_of(self.path("small")), files_of(self.path("large"))
        for name in small:
            if name.startswith(("images/", "captions/")):
                self.assertEqual(small[name], large[name], name)

    def test_images_and_captions(self) -> None:
        make_dataset.generate(self.path("set"), 32, 3, image_size=48)
        vocabulary = set(make_dataset.vocabulary())
        for index in range(32):
            with Image.open(self.path(f"set/images/{index:06d}.jpg")) as image:
                self.assertEqual((image.format, image.size, image.mode), ("JPEG", (48, 48), "RGB"))
            with open(self.path(f"set/captions/{index:06d}.txt"), encoding="utf-8") as stream:
                text = stream.read()
            self.assertTrue(text.endswith("\n"))
            words = text.split()
            self.assertLessEqual(set(words), vocabulary)
            self.assertIn(words.count("and"), (0, 1))

    def test_rerun_replaces_a_larger_set(self) -> None:
        make_dataset.generate(self.path("set"), 20, 9)
        digest = make_dataset.generate(self.path("set"), 10, 9)
        self.assertEqual(digest, make_dataset.generate(self.path("fresh"), 10, 9))
        self.assertEqual(files_of(self.path("set")), files_of(self.path("fresh")))

    def test_killed_generator_leaves_no_manifest(self) -> None:
        # A complete set first, then a long regeneration killed part-way: the old manifest must be
        # gone (its files are being overwritten) and no new one may exist yet.
        make_dataset.generate(self.path("set"), 4, 1)
        child = subprocess.Popen([sys.executable, MAKE_DATASET, self.path("set"), "--samples",
                                  "100000", "--seed", "2"], stdout=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while len(os.listdir(self.path("set/images"))) < 50:
                self.assertLess(time.monotonic(), deadline, "the generator wrote nothing")
                self.assertIsNone(child.poll(), "the generator ended early")
                time.sleep(0.02)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
        self.assertFalse(os.path.exists(self.path("set/index.tsv")))
        # Whatever is there is whole: every JPEG written so far decodes.
        for name in os.listdir(self.path("set/images")):
            if not name.startswith("."):
                with Image.open(self.path(f"set/images/{name}")) as image:
                    image.load()
        # And a rerun cleans up: the set equals a fresh one, temporaries and extras gone.
        make_dataset.generate(self.path("set"), 6, 2)
        make_dataset.generate(self.path("fresh"), 6, 2)
        self.assertEqual(files_of(self.path("set")), files_of(self.path("fresh")))

    def test_bad_arguments(self) -> None:
        for samples, extra, message in ((4, ["--image-size", "4"], "--image-size must be >= 9"),
                                        (0, [], "--samples must be >= 1")):
            result = generate_cli(self.path("bad"), samples, 0, *extra)
            self.assertEqual(result.returncode, 2)
            self.assertIn(message, result.stderr)
            self.assertFalse(os.path.exists(self.path("bad/index.tsv")))


class TokenizerTest(unittest.TestCase):
    def test_ids_are_specials_then_sorted_words(self) -> None:
        tokenizer = WordTokenizer(["red", "a", "circle", "a", "<pad>"])
        self.assertEqual(tokenizer.itos, ["<pad>", "<bos>", "<eos>", "<unk>", "a", "circle", "red"])
        self.assertEqual((tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_id, tokenizer.unk_id),
                         (0, 1, 2, 3))
        self.assertEqual(WordTokenizer(["circle", "red", "a"]).itos, tokenizer.itos)

    def test_encode_decode(self) -> None:
        tokenizer = WordTokenizer(make_dataset.vocabulary())
        text = "a small red circle at the top left"
        ids = tokenizer.encode(text, 12)
        self.assertEqual(len(ids), 12)
        self.assertEqual((ids[0], ids[9], ids[10:]), (1, 2, [0, 0]))
        self.assertEqual(tokenizer.decode(ids), text)
        self.assertEqual(tokenizer.encode("A Purple circle")[2], tokenizer.unk_id)

    def test_truncation_keeps_eos(self) -> None:
        tokenizer = WordTokenizer(make_dataset.vocabulary())
        ids = tokenizer.encode("a small red circle at the top left", 5)
        self.assertEqual(len(ids), 5)
        self.assertEqual(tokenizer.decode(ids), "a small red")
        self.assertEqual(ids[-1], tokenizer.eos_id)
        with self.assertRaises(ValueError):
            tokenizer.encode("a", 1)


class CaptionDatasetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.scratch = tempfile.TemporaryDirectory(prefix="vlm-test-")
        cls.root = os.path.join(cls.scratch.name, "set")
        make_dataset.generate(cls.root, 16, 11)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.scratch.cleanup()

    def test_sample(self) -> None:
        dataset = CaptionDataset(self.root, 32, 24)
        self.assertEqual(len(dataset), 16)
        sample = dataset[3]
        self.assertEqual(sample["id"], 3)
        self.assertEqual((sample["pixels"].dtype, tuple(sample["pixels"].shape)),
                         (torch.float32, (3, 32, 32)))
        self.assertGreaterEqual(float(sample["pixels"].min()), 0.0)
        self.assertLessEqual(float(sample["pixels"].max()), 1.0)
        self.assertEqual((sample["tokens"].dtype, tuple(sample["tokens"].shape)),
                         (torch.int64, (24,)))
        with open(os.path.join(self.root, "captions/000003.txt"), encoding="utf-8") as stream:
            self.assertEqual(dataset.tokenizer.decode(sample["tokens"]), stream.read().strip())

    def test_every_read_goes_through_read_bytes(self) -> None:
        seen: List[str] = []

        def reader(path: str) -> bytes:
            seen.append(os.path.relpath(path, self.root))
            with open(path, "rb") as stream:
                return stream.read()

        dataset = CaptionDataset(self.root, 32, 24, read_bytes=reader)
        self.assertEqual(sorted(seen), ["index.tsv", "vocab.txt"])
        dataset[5]
        self.assertEqual(seen[2:], ["images/000005.jpg", "captions/000005.txt"])

    def test_pixels_are_the_decoded_jpeg(self) -> None:
        sample = CaptionDataset(self.root, 32, 24)[0]
        with Image.open(os.path.join(self.root, "images/000000.jpg")) as image:
            expected = torch.tensor(list(image.convert("RGB").getdata()), dtype=torch.float32)
        self.assertTrue(torch.equal(sample["pixels"].permute(1, 2, 0).reshape(-1, 3),
                                    expected / 255.0))

    def test_other_image_size_is_resized(self) -> None:
        self.assertEqual(tuple(CaptionDataset(self.root, 16, 24)[0]["pixels"].shape), (3, 16, 16))

    def test_flip_mirrors_pixels_and_caption(self) -> None:
        plain = CaptionDataset(self.root, 32, 24)
        augmented = CaptionDataset(self.root, 32, 24, augment=True)
        flips = 0
        for index in range(len(plain)):
            torch.manual_seed(index)
            got, want = augmented[index], plain[index]
            flipped = not torch.equal(got["pixels"], want["pixels"])
            if flipped:
                flips += 1
                self.assertTrue(torch.equal(got["pixels"], want["pixels"].flip(2)))
            text = plain.tokenizer.decode(want["tokens"])
            mirrored = " ".join({"left": "right", "right": "left"}.get(w, w) for w in text.split())
            self.assertEqual(augmented.tokenizer.decode(got["tokens"]),
                             mirrored if flipped else text)
            torch.manual_seed(index)  # the same seed, the same decision
            self.assertTrue(torch.equal(augmented[index]["pixels"], got["pixels"]))
        self.assertTrue(0 < flips < len(plain), f"{flips} flips of {len(plain)}")

    def test_no_augmentation_draws_nothing(self) -> None:
        state = torch.get_rng_state()
        CaptionDataset(self.root, 32, 24)[0]
        self.assertTrue(torch.equal(state, torch.get_rng_state()))

    def test_collate(self) -> None:
        dataset = CaptionDataset(self.root, 32, 24)
        batch = collate([dataset[i] for i in (4, 1, 9)])
        self.assertEqual(batch["ids"], [4, 1, 9])
        self.assertEqual(tuple(batch["pixels"].shape), (3, 3, 32, 32))
        self.assertEqual(tuple(batch["tokens"].shape), (3, 24))

    def test_bad_manifest(self) -> None:
        with tempfile.TemporaryDirectory() as root:
            with open(os.path.join(root, "index.tsv"), "w", encoding="utf-8") as stream:
                stream.write("id\timage\tcaption\nx\ta.jpg\ta.txt\n")
            with self.assertRaisesRegex(ValueError, "index.tsv:2: sample id 'x'"):
                CaptionDataset(root, 32, 24)


class TinyVLMTest(unittest.TestCase):
    def model(self, **kwargs: int) -> TinyVLM:
        torch.manual_seed(0)
        return TinyVLM(vocab=26, max_tokens=24, **kwargs)

    def inputs(self, batch: int = 2) -> Dict[str, torch.Tensor]:
        generator = torch.Generator().manual_seed(1)
        tokens = torch.randint(4, 26, (batch, 24), generator=generator)
        tokens[:, 0] = 1
        return {"pixels": torch.rand(batch, 3, 32, 32, generator=generator), "tokens": tokens}

    def test_parameter_count(self) -> None:
        self.assertEqual(self.model().num_parameters(), 126_656)

    def test_logits_shape(self) -> None:
        inputs = self.inputs(3)
        self.assertEqual(tuple(self.model()(inputs["pixels"], inputs["tokens"]).shape), (3, 24, 26))

    def test_causal(self) -> None:
        model = self.model().eval()
        inputs = self.inputs()
        changed = inputs["tokens"].clone()
        changed[:, 10:] = 5
        with torch.no_grad():
            before = model(inputs["pixels"], inputs["tokens"])
            after = model(inputs["pixels"], changed)
            other_image = model(torch.rand(2, 3, 32, 32), inputs["tokens"])
        self.assertTrue(torch.equal(before[:, :10], after[:, :10]))
        self.assertFalse(torch.equal(before[:, 10:], after[:, 10:]))
        self.assertFalse(torch.allclose(before[:, :1], other_image[:, :1]))  # the text sees the image

    def test_loss_is_next_token_cross_entropy_without_pads(self) -> None:
        model = self.model().eval()
        inputs = self.inputs()
        inputs["tokens"][0, 15:] = 0  # a short caption: pads from 15 on
        with torch.no_grad():
            logits = model(inputs["pixels"], inputs["tokens"])
            loss = model.loss(inputs)
        targets = inputs["tokens"][:, 1:]
        kept = targets != 0
        expected = F.cross_entropy(logits[:, :-1][kept], targets[kept])
        self.assertTrue(torch.allclose(loss, expected, rtol=0, atol=1e-6))
        self.assertEqual(model.loss_from_logits(logits, inputs["tokens"]).item(), loss.item())

    def test_dropout_draws_from_the_global_generator(self) -> None:
        model = self.model().train()
        inputs = self.inputs()
        torch.manual_seed(5)
        first = model.loss(inputs)
        torch.manual_seed(5)
        again = model.loss(inputs)
        second = model.loss(inputs)
        self.assertEqual(first.item().hex(), again.item().hex())
        self.assertNotEqual(first.item(), second.item())
        model.eval()
        with torch.no_grad():
            self.assertEqual(model.loss(inputs).item(), model.loss(inputs).item())

    def test_greedy(self) -> None:
        model = self.model().eval()
        tokens = model.greedy(torch.rand(2, 3, 32, 32), bos_id=1, eos_id=2)
        self.assertEqual(tuple(tokens.shape), (2, 24))
        self.assertTrue(bool((tokens[:, 0] == 1).all()))

    def test_bad_shapes(self) -> None:
        with self.assertRaises(ValueError):
            TinyVLM(image_size=30, patch=8, vocab=26)
        with self.assertRaises(ValueError):
            TinyVLM(dim=66, heads=4, vocab=26)


class DeterminismTest(unittest.TestCase):
    """Training in fresh processes: 20 steps of batch 8 on 64 samples, a checkpoint after step 10."""

    STEPS, SAVE_AT = 20, 10

    @classmethod
    def setUpClass(cls) -> None:
        cls.scratch = tempfile.TemporaryDirectory(prefix="vlm-test-")
        data = os.path.join(cls.scratch.name, "data")
        make_dataset.generate(data, 64, 0)
        checkpoint = os.path.join(cls.scratch.name, "step10.pt")
        common = ["--data", data, "--steps", str(cls.STEPS), "--seed", "0", "--batch-size", "8"]
        cls.first = selftest.run_child(common)
        cls.second = selftest.run_child(common + ["--save-at", str(cls.SAVE_AT),
                                                  "--checkpoint", checkpoint])
        cls.resumed = selftest.run_child(common + ["--resume", checkpoint])
        cls.workers = selftest.run_child(common + ["--resume", checkpoint, "--workers", "2"])
        cls.forgetful = selftest.run_child(common + ["--resume", checkpoint, "--forget-rng"])

    @classmethod
    def tearDownClass(cls) -> None:
        cls.scratch.cleanup()

    def assertSameSteps(self, run: Dict, first: int) -> None:
        self.assertEqual(selftest.compare("run", run, self.first, first, self.STEPS), [])
        for step in range(first, self.STEPS + 1):  # spelled out: the hex strings themselves
            self.assertEqual(run["steps"][step]["loss"], self.first["steps"][step]["loss"])

    def test_losses_are_real(self) -> None:
        losses = [float.fromhex(self.first["steps"][s]["loss"]) for s in range(1, self.STEPS + 1)]
        self.assertLess(losses[-1], losses[0])  # it learns
        self.assertEqual(self.first["final"]["parameters"], 126_656)
        ids = [i for s in range(1, 9) for i in self.first["steps"][s]["ids"]]
        self.assertEqual(sorted(ids), list(range(64)))  # epoch 0 sees every sample once

    def test_same_seed_fresh_process_bit_equal(self) -> None:
        self.assertSameSteps(self.second, 1)

    def test_resume_in_new_process_bit_equal(self) -> None:
        self.assertSameSteps(self.resumed, self.SAVE_AT + 1)

    def test_resume_with_workers_bit_equal(self) -> None:
        self.assertSameSteps(self.workers, self.SAVE_AT + 1)

    def test_resume_without_rng_state_differs(self) -> None:
        # The control: dropout makes the RNG state part of a step, so forgetting it shows.
        step = self.SAVE_AT + 1
        self.assertEqual(self.forgetful["steps"][step]["ids"], self.first["steps"][step]["ids"])
        self.assertNotEqual(self.forgetful["steps"][step]["loss"], self.first["steps"][step]["loss"])


if __name__ == "__main__":
    unittest.main()
