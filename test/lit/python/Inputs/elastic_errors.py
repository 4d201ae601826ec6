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
