"""CPU seconds of one trial of a catalogue row, straight through in this process (the driver
compiled first by a short warm-up piece); for comparing two versions on one quiet machine:

    .venv/bin/python benchmarks/trial_cpu.py gers2002-msd-f10-peephole-forget-open 0
    PYTHONPATH=OTHER_CHECKOUT .venv/bin/python benchmarks/trial_cpu.py gers2002-msd-f10-peephole-forget-open 0
"""
import sys, time, json
from lstmgraph.experiments import find_experiment
name, seed = sys.argv[1], int(sys.argv[2])
e = find_experiment(name)
plan = e.plan()
t = e.trial(plan, seed, None, "specialised")
t.advance(1000)   # warm: compiles the driver
start = time.process_time()
row = t.run()
print(json.dumps({"name": name, "seed": seed, "cpu": round(time.process_time() - start, 3), "steps": row["steps"]}))
