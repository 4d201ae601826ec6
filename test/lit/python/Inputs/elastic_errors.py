"""The coded errors of ElasticBatchSampler, as a program that does not catch them prints them."""
from mscale.data import DataOrderStateError, DataOrderUsageError
from mscale.elastic import ElasticBatchSampler

try:
    ElasticBatchSampler(1000, 100, rank=0, world_size=3)
except DataOrderUsageError as e:
    print(e)
sampler = ElasticBatchSampler(1000, 100, rank=0, world_size=2)
try:
    sampler.load_state_dict(dict(sampler.state_dict(), consumed=150))
except DataOrderStateError as e:
    print(e)
print("position kept:", sampler.state_dict()["consumed"])
# A contract that asks for deterministic_reduction (MSCALE_DETERMINISTIC_REDUCTION=1): a step
# reduced through DeterministicReduction is committed, one reduced otherwise is refused.
import os
import tempfile

import torch

import mscale
from mscale.elastic import DeterministicReduction

os.environ["MSCALE_DETERMINISTIC_REDUCTION"] = "1"
model = torch.nn.Linear(2, 1)
with tempfile.TemporaryDirectory() as directory:
    state = mscale.ExactResume(model=model, directory=directory, every=100)
    reduction = DeterministicReduction(model.parameters())
    model(torch.ones(1, 2)).sum().backward()
    reduction.add()
    print("micro-batches reduced:", reduction.reduce())
    state.step_done(1)
    model(torch.ones(1, 2)).sum().backward()  # summed by hand, as DDP would
    try:
        state.step_done(2)
    except mscale.UsageError as e:
        print(e)
    state.close()
