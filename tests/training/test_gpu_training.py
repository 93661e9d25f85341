"""`train --trials N --device cuda`: a training run on the compiled engine's GPU executor writes
the files a CPU run writes (bit for bit in numba's CUDA simulator, whose arithmetic is the
CPU's), resumes on the GPU after an interruption, and is refused clearly where it cannot run."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

import lstmgraph
from lstmgraph import Overrides
from lstmgraph.engine.gpu import GpuUnavailable, population as gpu_population
from lstmgraph.progress import ProgressReport
from lstmgraph.training import EngineError, RunDirectoryError, resume_run, start_run

from conftest import SIMULATED, SPECS, invoke


pytestmark = pytest.mark.gpu
TIMING = SPECS / "gers2002_timing.yaml"


def _spec(tmp_path, **training):
    data = yaml.safe_load(TIMING.read_text())
    data["training"].update(training)
    path = tmp_path / "timing.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _same_weights(one, other) -> None:
    with np.load(one / "weights.npz") as a, np.load(other / "weights.npz") as b:
        for key in a.files:
            if key != "__meta__":
                np.testing.assert_allclose(b[key], a[key], rtol=0, atol=0 if SIMULATED else 1e-12, err_msg=key)


def test_a_run_on_the_gpu_ends_as_the_cpu_run_and_records_its_device(tmp_path):
    plan = lstmgraph.compile_spec(TIMING, Overrides(steps=300, seed=3))
    cpu = start_run(plan, tmp_path / "cpu", trials=3)
    gpu = start_run(plan, tmp_path / "gpu", trials=3, device="cuda")
    assert gpu.trainer.engine == "compiled" and gpu.trainer.device == "cuda"
    cpu.train(), gpu.train()
    assert json.loads((gpu.path / "run.json").read_text())["device"] == "cuda"
    assert "device" not in json.loads((cpu.path / "run.json").read_text())
    _same_weights(cpu.path, gpu.path)
    if SIMULATED:
        assert (gpu.path / "metrics.jsonl").read_bytes() == (cpu.path / "metrics.jsonl").read_bytes()


def test_an_interrupted_run_resumes_on_the_gpu_to_the_same_files(tmp_path):
    plan = lstmgraph.compile_spec(_spec(tmp_path, steps=1500, checkpoint_every=400))
    whole = start_run(plan, tmp_path / "whole", trials=2, device="cuda")
    whole.train()
    broken = start_run(plan, tmp_path / "broken", trials=2, device="cuda")

    class Interrupted(Exception):
        pass

    def interrupt(report: ProgressReport) -> None:
        if report.done >= 1000:                              # checkpoints at 400 and 800
            raise Interrupted
    with pytest.raises(Interrupted):
        broken.train(interrupt)
    resumed = resume_run(broken.path)
    assert resumed.trainer.device == "cuda"
    resumed.train()
    for name in ("metrics.csv", "metrics.jsonl"):
        assert (broken.path / name).read_bytes() == (whole.path / name).read_bytes(), name
    _same_weights(whole.path, broken.path)
    # The device is part of the run's identity: run.json edited to the CPU does not resume it.
    info = json.loads((whole.path / "run.json").read_text())
    del info["device"]
    (whole.path / "run.json").write_text(json.dumps(info))
    with pytest.raises(RunDirectoryError, match="checkpoint"):
        resume_run(whole.path)
    (whole.path / "run.json").write_text(json.dumps({**info, "device": "tpu"}))
    with pytest.raises(RunDirectoryError, match="unknown device 'tpu'"):
        resume_run(whole.path)


def test_what_the_gpu_cannot_train_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    plan = lstmgraph.compile_spec(TIMING, Overrides(steps=100))
    with pytest.raises(EngineError, match="numpy engine runs on the CPU only"):
        start_run(plan, tmp_path / "a", engine="numpy", device="cuda")
    bptt = lstmgraph.compile_spec(TIMING, Overrides(steps=100, learning_rule="bptt"))
    with pytest.raises(EngineError, match="learn by RTRL only, not bptt"):
        start_run(bptt, tmp_path / "b", device="cuda")

    def no_gpu(allow_simulator=True):
        raise GpuUnavailable("no CUDA GPU is available")
    monkeypatch.setattr(gpu_population, "cuda_module", no_gpu)
    with pytest.raises(EngineError, match="--device cuda: no CUDA GPU is available"):
        start_run(plan, tmp_path / "c", device="cuda")
    assert not any(tmp_path.iterdir())


def test_the_train_command_on_the_gpu(tmp_path):
    spec = _spec(tmp_path, steps=200)
    code, output = invoke("train", spec, "--trials", 2, "--device", "cuda", "--quiet", "--out", tmp_path / "run")
    assert code == 0, output
    code, output = invoke("train", "--resume", tmp_path / "run", "--device", "cuda")
    assert code == 2 and "--resume continues a run as it was started" in output
    code, output = invoke("train", spec, "--device", "cuda", "--engine", "numpy", "--out", tmp_path / "other")
    assert code == 2 and "numpy engine runs on the CPU only" in output
    code, output = invoke("train", spec, "--device", "tpu")
    assert code == 2 and "tpu" in output
