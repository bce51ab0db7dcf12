"""ZeroRedundancyOptimizer, FullyShardedDataParallel and sharded checkpoints from Python:
real processes on 127.0.0.1 (tests/python/shard_worker.py, one per rank), their results
checked against plain DistributedDataParallel and against a single-process reference
(Adam on the whole batch). Each scenario runs once per module (a fixture)."""

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.distributed as dist

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="ember was built without Gloo")

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "shard_worker.py")
sys.path.insert(0, HERE)
import shard_worker  # noqa: E402  (the model, the data and the reference)

PARAMS = ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(scenario, world, outdir, env=None, timeout=120):
    """Runs `world` ranks of the scenario; returns [(arrays, info)] per rank."""
    port = str(free_port())
    base = dict(os.environ, OMP_NUM_THREADS="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=port, WORLD_SIZE=str(world),
                **(env or {}))
    procs = [subprocess.Popen([sys.executable, WORKER, scenario, str(outdir)], env=dict(base, RANK=str(r)),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
             for r in range(world)]
    outputs = []
    try:
        for p in procs:
            outputs.append(p.communicate(timeout=timeout)[0])
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        pytest.fail(f"scenario {scenario} did not finish within {timeout} s")
    for p in procs:
        assert p.returncode == 0, f"scenario {scenario}: a rank exited with {p.returncode}:\n" + "\n".join(outputs)
    res = []
    for r in range(world):
        with np.load(os.path.join(outdir, f"rank{r}.npz")) as z:
            arrays = {k: z[k] for k in z.files}
        with open(os.path.join(outdir, f"rank{r}.json")) as f:
            res.append((arrays, json.load(f)))
    return res


def reference(steps):
    out = {}
    shard_worker.reference(out, steps)
    return out


# ---------------------------------------------------------------- ZeroRedundancyOptimizer, 2 ranks

@pytest.fixture(scope="module")
def zero(tmp_path_factory):
    d = tmp_path_factory.mktemp("zero")
    ckpt = str(d / "ckpt")
    return launch("zero", 2, d, env={"CKPT": ckpt}), ckpt


def test_zero_adam_equals_single_process_adam(zero):
    (r0, _), (r1, _) = zero[0]
    for k in PARAMS:
        np.testing.assert_array_equal(r0["zero." + k], r1["zero." + k])  # identical on every rank
        np.testing.assert_allclose(r0["zero." + k], r0["ref." + k], rtol=0, atol=1e-6)
        assert not np.allclose(r0["zero." + k], shard_worker_init(k))  # it did train


def shard_worker_init(key):
    return shard_worker.model_for(1).state_dict()[key].numpy()


def test_zero_partition_follows_the_cpp_rule(zero):
    (_, i0), (_, i1) = zero[0]
    # sizes 35, 7, 42, 6, 18, 3: largest first, each to the emptier rank (Note [ZeRO partition])
    assert i0["partition"] == [[[[7], [6, 7], [6]]], [[[7, 5], [3, 6], [3]]]]
    assert i1["partition"] == i0["partition"]
    assert i0["local_params"] == 3 and i1["local_params"] == 3
    # Adam's exp_avg and exp_avg_sq for 55 and 56 elements, and a float step per parameter
    assert i0["local_state_bytes"] == 2 * 55 * 4 + 3 * 4
    assert i1["local_state_bytes"] == 2 * 56 * 4 + 3 * 4


def test_zero_consolidated_state_dict(zero):
    (r0, i0), (_, i1) = zero[0]
    assert i0["state_keys"] == list(range(6))
    for i in range(6):
        assert i0[f"step.{i}"] == 3.0
        for key in ("exp_avg", "exp_avg_sq"):
            np.testing.assert_allclose(r0[f"state.{i}.{key}"], r0[f"refstate.{i}.{key}"], rtol=1e-5, atol=1e-9)
    # loaded into a plain Adam, it steps as the reference does
    np.testing.assert_allclose(r0["resumed.fc1.weight"], r0["refnext.fc1.weight"], rtol=0, atol=1e-6)
    assert i1["state_dict_error"] == ("[ZeroRedundancyOptimizer.state_dict] call consolidate_state_dict(to=1) on "
                                      "every rank first (it was never called)")


def test_zero_checkpoint_loads_in_one_process(zero):
    from ember.distributed.checkpoint import load_full_checkpoint
    (r0, i0), _ = zero[0]
    model, optim = load_full_checkpoint(zero[1])
    assert list(model.keys()) == PARAMS
    for k in PARAMS:
        np.testing.assert_array_equal(model[k].numpy(), r0["zero." + k])
    assert optim["param_groups"][0]["params"] == list(range(6))
    assert optim["param_groups"][0]["lr"] == shard_worker.LR
    for i in range(6):
        np.testing.assert_array_equal(optim["state"][i]["exp_avg"].numpy(), r0[f"state.{i}.exp_avg"])
        assert optim["state"][i]["step"].item() == 3.0
    # and into a plain model and optimizer
    m = shard_worker.model_for(9)
    m.load_state_dict(model)
    opt = ember.optim.Adam(m.parameters(), lr=1.0)
    opt.load_state_dict(optim)
    assert opt.param_groups[0]["lr"] == shard_worker.LR and opt.param_groups[0]["betas"] == (0.9, 0.999)
    np.testing.assert_array_equal(m.fc2.weight.detach().numpy(), r0["zero.fc2.weight"])


def test_zero_checkpoint_of_2_ranks_loads_in_3(zero, tmp_path_factory):
    (saved, _), _ = zero[0]
    d = tmp_path_factory.mktemp("zero3")
    ranks = launch("zero_load", 3, d, env={"CKPT": zero[1]})
    ref = reference(shard_worker.STEPS + 1)
    for arrays, info in ranks:
        assert info["lr"] == [shard_worker.LR, shard_worker.LR]  # the saved options replace lr=0.5
        for k in PARAMS:
            np.testing.assert_array_equal(arrays["loaded." + k], saved["zero." + k])
            # one more step with 3 ranks equals the reference's 4th
            np.testing.assert_allclose(arrays["next." + k], ref["ref." + k], rtol=0, atol=1e-6)
    assert sum(info["local_params"] for _, info in ranks) == 6  # each parameter's state on one rank
    for i in range(6):
        np.testing.assert_array_equal(ranks[0][0][f"state.{i}.exp_avg"], saved[f"state.{i}.exp_avg"])


# ---------------------------------------------------------------- FSDP, 2 ranks, then 3

@pytest.fixture(scope="module")
def fsdp(tmp_path_factory):
    d = tmp_path_factory.mktemp("fsdp")
    ckpt = str(d / "ckpt")
    return launch("fsdp", 2, d, env={"CKPT": ckpt}), ckpt


@pytest.mark.parametrize("strategy", ["FULL_SHARD", "SHARD_GRAD_OP"])
def test_fsdp_training_equals_ddp(fsdp, strategy):
    for r, (arrays, _) in enumerate(fsdp[0]):
        for k in PARAMS:
            np.testing.assert_allclose(arrays[f"{strategy}." + k], arrays["ddp." + k], rtol=0, atol=1e-6,
                                       err_msg=f"rank {r} {k}")
            np.testing.assert_allclose(arrays[f"{strategy}." + k], arrays["ref." + k], rtol=0, atol=1e-6)


def test_fsdp_parameters_are_the_shards(fsdp):
    (_, i0), (_, i1) = fsdp[0]
    assert i0["units"] == ["fc1", "fc2", "fc3"]
    assert i0["names"] == ["_fsdp_wrapped_module.fc1._flat_param", "_fsdp_wrapped_module.fc2._flat_param",
                           "_fsdp_wrapped_module.fc3._flat_param"]
    # units of 42, 48 and 21 elements, padded to a multiple of 2 and halved
    assert i0["shard_sizes"] == [21, 24, 11] and i1["shard_sizes"] == [21, 24, 11]


def test_fsdp_memory_stats(fsdp):
    (_, i0), _ = fsdp[0]
    s = i0["stats"]
    assert s["sharded_parameter_bytes"] == (21 + 24 + 11) * 4
    assert s["sharded_gradient_bytes"] == (21 + 24 + 11) * 4
    assert s["full_parameter_bytes"] == (42 + 48 + 21) * 4
    assert s["optimizer_state_bytes"] == 2 * (21 + 24 + 11) * 4 + 3 * 4  # exp_avg, exp_avg_sq, a step per shard
    assert s["gathered_bytes_now"] == 0
    assert s["peak_gathered_bytes"] == 48 * 4  # FULL_SHARD: one unit (the largest) at a time


def test_fsdp_checkpoint_of_2_ranks_loads_in_one_process(fsdp):
    from ember.distributed.checkpoint import load_full_checkpoint
    (r0, _), _ = fsdp[0]
    model, optim = load_full_checkpoint(fsdp[1])
    assert list(model.keys()) == PARAMS
    for k in PARAMS:
        np.testing.assert_array_equal(model[k].numpy(), r0["saved." + k])
    assert [tuple(optim["state"][i]["exp_avg"].shape) for i in range(6)] == [(7, 5), (7,), (6, 7), (6,), (3, 6),
                                                                              (3,)]
    assert all(optim["state"][i]["step"].item() == 3.0 for i in range(6))


def test_save_state_dict_loads_into_a_plain_module(fsdp):
    import ember.distributed.checkpoint as dcp
    (r0, _), _ = fsdp[0]
    plain = shard_worker.model_for(9)
    sd = {"model": plain.state_dict(), "epoch": 0}
    dcp.load_state_dict(sd, dcp.FileSystemReader(fsdp[1] + "_sd"), no_dist=True)
    assert sd["epoch"] == 3
    for k in PARAMS:
        np.testing.assert_array_equal(plain.state_dict()[k].numpy(), r0["saved." + k])
    with pytest.raises(RuntimeError, match=r"^\[load_state_dict\] 'model.fc1.weight' is \[7, 5\] in the checkpoint "
                                           r"but \[5, 7\] here; load a checkpoint of the same model"):
        dcp.load_state_dict({"model": {"fc1.weight": ember.zeros(5, 7)}}, dcp.FileSystemReader(fsdp[1] + "_sd"))


@pytest.fixture(scope="module")
def fsdp3(fsdp, tmp_path_factory):
    d = tmp_path_factory.mktemp("fsdp3")
    ckpt2 = str(d / "ckpt3")
    return launch("fsdp_load", 3, d, env={"CKPT": fsdp[1], "CKPT2": ckpt2}), ckpt2


def test_fsdp_checkpoint_of_2_ranks_loads_in_3(fsdp, fsdp3):
    from ember.distributed.checkpoint import load_full_checkpoint
    (saved, _), _ = fsdp[0]
    for arrays, info in fsdp3[0]:
        assert info["lr"] == shard_worker.LR  # the saved options replace the optimizer's
        for k in PARAMS:
            np.testing.assert_array_equal(arrays["loaded." + k], saved["saved." + k])
    # the state the 3 ranks hold, saved again, is the state the 2 ranks saved
    m2, o2 = load_full_checkpoint(fsdp[1])
    m3, o3 = load_full_checkpoint(fsdp3[1])
    for k in PARAMS:
        np.testing.assert_array_equal(m2[k].numpy(), m3[k].numpy())
    for i in range(6):
        for key in ("exp_avg", "exp_avg_sq", "step"):
            np.testing.assert_array_equal(o2["state"][i][key].numpy(), o3["state"][i][key].numpy())
    # and training goes on from it: one more step with 3 ranks equals the reference's 4th
    ref = reference(shard_worker.STEPS + 1)
    for arrays, _ in fsdp3[0]:
        for k in PARAMS:
            np.testing.assert_allclose(arrays["next." + k], ref["ref." + k], rtol=0, atol=1e-6)


# ---------------------------------------------------------------- errors (one process)

def test_fsdp_refuses_a_module_without_parameters():
    from ember.distributed.fsdp import FSDP
    with pytest.raises(ValueError) as e:
        FSDP(ember.nn.ReLU())
    assert str(e.value) == ("[FullyShardedDataParallel] the module (ReLU) has no parameters, so there is nothing to "
                            "shard; wrap a module that has parameters, or run this one without FSDP")


def test_fsdp_refuses_no_shard():
    from ember.distributed.fsdp import FSDP, ShardingStrategy
    with pytest.raises(ValueError, match=r"^\[FullyShardedDataParallel\] ShardingStrategy.NO_SHARD is not supported; "
                                         r"use ember.nn.parallel.DistributedDataParallel"):
        FSDP(shard_worker.MLP(), sharding_strategy=ShardingStrategy.NO_SHARD)


def test_zero_refuses_a_class_that_is_not_an_optimizer():
    from ember.distributed.optim import ZeroRedundancyOptimizer
    with pytest.raises(TypeError, match=r"^\[ZeroRedundancyOptimizer\] optimizer_class must be an "
                                        r"ember.optim.Optimizer subclass"):
        ZeroRedundancyOptimizer(shard_worker.MLP().parameters(), optimizer_class=dict, lr=0.1)


def test_loading_a_missing_checkpoint_names_it(tmp_path):
    import ember.distributed.checkpoint as dcp
    missing = str(tmp_path / "nowhere")
    msg = (f"[load_sharded] '{missing}' is not a sharded checkpoint: its metadata.safetensors is missing (the "
           "directory does not exist, or no save finished there)")
    with pytest.raises(RuntimeError) as e:
        dcp.load_full_checkpoint(missing)
    assert str(e.value) == msg
    with pytest.raises(RuntimeError) as e:
        dcp.load_state_dict({"w": ember.zeros(2)}, dcp.FileSystemReader(missing))
    assert str(e.value) == msg


def test_sharded_example_runs(tmp_path):
    """examples/python/distributed_sharded.py (docs/distributed.md) on 2 ranks."""
    script = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "python", "distributed_sharded.py")
    env = dict(os.environ, OMP_NUM_THREADS="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE="2")
    procs = [subprocess.Popen([sys.executable, script, "--ckpt", str(tmp_path / "ckpt")], env=dict(env, RANK=str(r)),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
             for r in range(2)]
    try:
        outs = [p.communicate(timeout=90)[0] for p in procs]
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        pytest.fail("the example did not finish within 90 s")
    assert all(p.returncode == 0 for p in procs), "\n".join(outs)
    lines = outs[0].splitlines()
    assert lines[0].startswith("fsdp: loss ") and "parameters held here 836 B of 1672 B" in lines[0], outs[0]
    assert float(lines[0].split()[2].rstrip(";")) < 0.3, outs[0]  # it learned (chance: 0.69)
    assert "4 consolidated" in lines[1], outs[0]
    assert lines[2].startswith("checkpoint equals the trained model: True"), outs[0]
