"""The training loop of ExactResume's docstring, for resume-stop.test: a small model, a log in the
format of mscale-train-sim and train.py (the recovery checker reads it), and the planned stop
(``should_stop``) ending the loop. The disk tier only, as on the node a moved job starts on.

usage: resume_stop.py DIR LOG STEPS EVERY [--ignore-stop]
--ignore-stop goes on after should_stop, as a loop that does not check it would."""
import sys

import torch

import mscale

directory, log_path, steps, every = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ignore_stop = "--ignore-stop" in sys.argv[5:]

torch.manual_seed(0)
model = torch.nn.Linear(1, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loader = mscale.StatefulDataLoader(list(range(40)), batch_size=4, shuffle=True, seed=3)
state = mscale.ExactResume(model=model, optimizer=optimizer, loader=loader, directory=directory, every=every,
                           memory_tier=False)
log = open(log_path, "a", buffering=1)
step = state.restore()
restored = state.restored_from
log.write("# resume step %d from %s snapshot %d\n" % (step, restored.tier, restored.step) if restored
          else "# start step 1 (no snapshot)\n")
while step <= steps and not (state.should_stop and not ignore_stop):
    epoch = loader.epoch
    for batch in loader:
        x = batch.float().unsqueeze(1) / 40
        loss = ((model(x) - 2 * x) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        log.write("step %d epoch %d ids %s loss %s lr 0x1p-7 scale 1\n" % (
            step, epoch, ",".join(str(int(i)) for i in batch), loss.item().hex()))
        state.step_done(step)
        if state.should_stop and not ignore_stop:
            log.write("# stopped after step %d: planned move\n" % step)
            break
        step += 1
        if step > steps:
            break
state.close()
if not state.should_stop:
    log.write("final step %d params %s\n" % (steps, ",".join(p.detach().numpy().tobytes().hex() for p in model.parameters())))
