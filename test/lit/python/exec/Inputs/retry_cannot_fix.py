"""A worker whose failures say whether a restart can help.  Usage: retry_cannot_fix.py CASE WORKDIR

  crash-then-wrong-model  the first attempt trains 6 steps (a snapshot every 3) and raises a plain
                          RuntimeError: the supervisor restarts it; the restart's model has another
                          shape, so its restore raises ERR_PY_023, which no restart can fix.
  always-crashes          every attempt raises the same RuntimeError before any step: retryable,
                          so the restart budget decides; each fault line carries the error."""
import os
import sys

import torch

import mscale

case, work = sys.argv[1], sys.argv[2]
restarted = os.environ.get("MSCALE_RESUME") == "1"
if case == "always-crashes":
    raise RuntimeError("the data path %s is empty" % work)

torch.manual_seed(0)
model = torch.nn.Linear(4, 3 if restarted else 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
resume = mscale.ExactResume(model=model, optimizer=optimizer, directory=os.path.join(work, "ckpt"),
                            every=3, memory_tier=False, background_disk=False)
start = resume.restore()
for step in range(start, 7):
    optimizer.zero_grad()
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()
    resume.step_done(step)
raise RuntimeError("loss is nan at step 6")
