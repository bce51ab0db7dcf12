"""ember.distributed and ember.nn.parallel.DistributedDataParallel from Python: real
processes on 127.0.0.1 (tests/python/dist_worker.py, one per rank, started by the test
or by ember-run), their results checked against a single-process reference. Each scenario
runs once per module (a fixture) and several tests read its results."""

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.nn.functional as F

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="ember was built without Gloo")

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "dist_worker.py")
# build/python/ember/__init__.py -> build/tools/ember-run (the build tree; absent when installed)
EMBER_RUN = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(ember.__file__))), "tools", "ember-run")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(scenario, world, outdir, via_ember_run=False, timeout=90, extra_env=None):
    """Runs `world` ranks of the scenario; returns [(arrays, info)] per rank. Kills every rank
    at the deadline, so a hang fails the test instead of stalling the suite."""
    outdir = str(outdir)
    env = dict(os.environ, OMP_NUM_THREADS="1", **(extra_env or {}))
    if via_ember_run:
        cmds = [([EMBER_RUN, "--standalone", "--nproc-per-node", str(world), sys.executable, WORKER, scenario,
                  outdir], env)]
    else:
        port = str(free_port())
        cmds = [([sys.executable, WORKER, scenario, outdir],
                 dict(env, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=port)) for r in range(world)]
    procs = [subprocess.Popen(c, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True) for c, e in cmds]
    outputs = []
    try:
        for p in procs:
            outputs.append(p.communicate(timeout=timeout)[0])
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        pytest.fail(f"scenario {scenario} did not finish within {timeout} s")
    for p, o in zip(procs, outputs):
        assert p.returncode == 0, f"scenario {scenario}: a rank exited with {p.returncode}:\n" + "\n".join(outputs)
    res = []
    for r in range(world):
        with np.load(os.path.join(outdir, f"rank{r}.npz")) as z:
            arrays = {k: z[k] for k in z.files}
        with open(os.path.join(outdir, f"rank{r}.json")) as f:
            res.append((arrays, json.load(f)))
    return res


# ---------------------------------------------------------------- collectives, 3 ranks

W = 3


def base(rank, np_dtype, shape=(2, 3)):
    return (np.arange(int(np.prod(shape))).reshape(shape) * (rank + 1) + rank).astype(np_dtype)


@pytest.fixture(scope="module")
def coll(tmp_path_factory):
    return launch("collectives", W, tmp_path_factory.mktemp("collectives"))


NP = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "int32": np.int32, "float16": np.float16,
      "bfloat16": np.float32, "uint8": np.uint8}


def test_init_and_queries(coll):
    for r, (_, info) in enumerate(coll):
        assert info["is_initialized"] is True
        assert (info["rank"], info["world"], info["backend"]) == (r, W, "gloo")
        assert info["initialized_after_destroy"] is False


@pytest.mark.parametrize("name", list(NP))
@pytest.mark.parametrize("op", ["SUM", "MAX", "MIN", "PRODUCT", "AVG"])
def test_all_reduce(coll, name, op):
    key = f"all_reduce_{op}_{name}"
    if op == "AVG" and name in ("int64", "int32", "uint8"):
        assert key not in coll[0][0]
        return
    xs = np.stack([base(r, np.float64) for r in range(W)])
    want = {"SUM": xs.sum(0), "MAX": xs.max(0), "MIN": xs.min(0), "PRODUCT": xs.prod(0), "AVG": xs.mean(0)}[op]
    if name == "uint8":
        want = np.stack([base(r, np.uint8) for r in range(W)]).prod(0, dtype=np.uint8) if op == "PRODUCT" else want
    rtol = {"float16": 1e-3, "bfloat16": 1e-2}.get(name, 1e-6)
    for arrays, _ in coll:
        np.testing.assert_allclose(arrays[key].astype(np.float64), np.asarray(want, np.float64), rtol=rtol)
        if name not in ("bfloat16",):
            assert arrays[key].dtype == NP[name]


@pytest.mark.parametrize("name", list(NP))
def test_broadcast(coll, name):
    for arrays, _ in coll:
        np.testing.assert_array_equal(arrays[f"broadcast_{name}"].astype(np.float64), base(1, np.float64))


def test_all_reduce_transposed_and_async(coll):
    want_t = sum(base(r, np.float32, (3, 2)) for r in range(W)).T
    want_a = sum(base(r, np.float32, (64,)) for r in range(W))
    for arrays, info in coll:
        np.testing.assert_array_equal(arrays["all_reduce_transposed"], want_t)
        np.testing.assert_array_equal(arrays["all_reduce_async"], want_a)
        assert info["async_wait"] is True and info["async_done"] == [True, True, True]


def test_reduce_gather_scatter(coll):
    total = sum(base(r, np.float32) for r in range(W))
    np.testing.assert_array_equal(coll[2][0]["reduce"], total)
    np.testing.assert_array_equal(coll[0][0]["gather"], np.stack([base(r, np.float32) for r in range(W)]))
    assert "gather" not in coll[1][0]
    for r, (arrays, _) in enumerate(coll):
        np.testing.assert_array_equal(arrays["scatter"], base(r, np.float32) * 10)


def test_all_gather(coll):
    stacked = np.stack([base(r, np.float32) for r in range(W)])
    for arrays, _ in coll:
        np.testing.assert_array_equal(arrays["all_gather"], stacked)
        np.testing.assert_array_equal(arrays["all_gather_into_tensor"], stacked.reshape(W * 2, 3))


def test_reduce_scatter(coll):
    for r, (arrays, _) in enumerate(coll):
        np.testing.assert_array_equal(arrays["reduce_scatter"], sum(base(q, np.float32) * (r + 1) for q in range(W)))
        flat = np.stack([base(q, np.float32, (2 * W,)) for q in range(W)]).max(0)
        np.testing.assert_array_equal(arrays["reduce_scatter_tensor_max"], flat[2 * r:2 * r + 2])


def test_all_to_all(coll):
    for r, (arrays, _) in enumerate(coll):
        np.testing.assert_array_equal(arrays["all_to_all"], np.stack([np.full(2, 10.0 * j + r) for j in range(W)]))
        # rank j sent r + 1 rows of value 100 j + r
        want = np.concatenate([np.full((r + 1, 2), 100.0 * j + r) for j in range(W)])
        np.testing.assert_array_equal(arrays["all_to_all_single_uneven"], want)


def test_point_to_point(coll):
    for r, (arrays, info) in enumerate(coll):
        left = (r - 1) % W
        assert info["recv_from"] == left
        np.testing.assert_array_equal(arrays["recv"], np.full(4, 1.0 + left))
        np.testing.assert_array_equal(arrays["irecv"], np.full(3, 7.0 * left))


def test_subgroup(coll):
    total = base(0, np.float32) + base(2, np.float32)
    for r in (0, 2):
        np.testing.assert_array_equal(coll[r][0]["sub_all_reduce"], total)
        assert (coll[r][1]["sub_rank"], coll[r][1]["sub_size"]) == ({0: 0, 2: 1}[r], 2)
    # rank 1 is no member: its tensor is untouched, and the group queries say -1 as torch's do
    np.testing.assert_array_equal(coll[1][0]["sub_all_reduce"], base(1, np.float32))
    assert (coll[1][1]["sub_rank"], coll[1][1]["sub_size"]) == (-1, -1)


def test_object_collectives(coll):
    for r, (_, info) in enumerate(coll):
        assert info["all_gather_object"] == [[q, [float(q)] * 2] for q in range(W)]
        assert info["broadcast_object_list"] == ["hello", {"k": [1, 2]}, 3.5]
        assert info["scatter_object_list"] == f"obj{r}" * (r + 1)
    assert coll[2][1]["gather_object"] == [["from", q] for q in range(W)]
    assert coll[0][1]["gather_object"] is None


# ---------------------------------------------------------------- errors, 2 ranks

@pytest.fixture(scope="module")
def errs(tmp_path_factory):
    return launch("errors", 2, tmp_path_factory.mktemp("errors"))


def test_mismatch_raises_on_every_rank(errs):
    for _, info in errs:
        msg = info["mismatch"]
        assert msg.startswith("[")
        assert "mismatch: rank 0 called all_reduce(f32[4], SUM), rank 1 called broadcast(f32[4], root=0)" in msg
        assert "every rank of a group must issue the same collectives in the same order" in msg
        assert "rank 0 called all_reduce(f32[4], SUM), rank 1 called all_reduce(f32[5], SUM)" in info["async_shape"]
        completed, success, exc = info["async_flags"]
        assert completed and not success and "f32[5]" in exc


def test_group_usable_after_mismatch(errs):
    for arrays, _ in errs:
        np.testing.assert_array_equal(arrays["after_mismatch"], np.full(3, 3.0))


def test_argument_errors(errs):
    info = errs[0][1]
    assert info["bad_src"][0] == "RuntimeError" and info["bad_src"][1].startswith("[broadcast] src rank 5")
    assert info["avg_int"][0] == "RuntimeError" and "ReduceOp::AVG needs a floating-point tensor" in info["avg_int"][1]
    assert info["list_len"][0] == "RuntimeError" and "[all_gather] tensor_list has 1 tensors" in info["list_len"][1]
    assert info["not_tensor"][0] == "TypeError" and "must be an ember Tensor" in info["not_tensor"][1]
    assert info["reinit"][0] == "RuntimeError" and "already initialized" in info["reinit"][1]
    assert info["backend"][0] == "ValueError" and "'nccl' is not available" in info["backend"][1]


def test_timeout_names_the_missing_rank(errs):
    info = errs[0][1]
    msg = info["timeout"]
    assert msg.startswith("[all_reduce] collective #")
    assert "did not complete within 3000 ms: rank 1 never arrived" in msg
    assert "rank 0 reached it" in msg
    assert 2.5 < info["timeout_seconds"] < 20
    assert "the process group is unusable after an earlier failure" in info["after_timeout"]


# ---------------------------------------------------------------- DDP, 2 ranks via ember-run

@pytest.fixture(scope="module")
def ddp(tmp_path_factory):
    if not os.path.exists(EMBER_RUN):
        pytest.skip(f"{EMBER_RUN} is not built")
    d = tmp_path_factory.mktemp("ddp")
    rng = np.random.default_rng(0)
    data = os.path.join(str(d), "data.npz")
    np.savez(data, x=rng.standard_normal((8, 5)).astype(np.float32), y=rng.integers(0, 3, 8).astype(np.int64))
    return launch("ddp", 2, d, via_ember_run=True, extra_env={"DDP_DATA": data}), np.load(data)


def reference_net(state):
    from dist_worker import Net
    net = Net()
    net.load_state_dict({k: ember.from_numpy(v.copy()) for k, v in state.items()})
    return net


def grads(net, x, y):
    net.zero_grad()
    F.cross_entropy(net(x), y).backward()
    return {k: p.grad.numpy().copy() for k, p in net.named_parameters()}


def test_ddp_step_equals_single_process_step(ddp):
    sys.path.insert(0, HERE)
    ranks, data = ddp
    x, y = ember.from_numpy(data["x"]), ember.from_numpy(data["y"])
    init = {k[len("init."):]: v for k, v in ranks[0][0].items() if k.startswith("init.")}
    net = reference_net(init)
    g = grads(net, x, y)  # the whole batch in one process
    for arrays, info in ranks:
        for k in g:
            np.testing.assert_allclose(arrays["grad1." + k], g[k], rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(arrays["param1." + k], init[k] - 0.1 * g[k], rtol=1e-5, atol=1e-6)
        assert info["state_dict_keys"] == ["module.fc1.weight", "module.fc1.bias", "module.fc2.weight",
                                           "module.fc2.bias"]
        assert info["bucket_names"] == [["fc2.bias", "fc2.weight", "fc1.bias", "fc1.weight"]]
    assert [info["env"] for _, info in ranks] == [["0", "0", "2"], ["1", "1", "2"]]


def test_ddp_no_sync_accumulates(ddp):
    sys.path.insert(0, HERE)
    ranks, data = ddp
    net = reference_net({k[len("param1."):]: v for k, v in ranks[0][0].items() if k.startswith("param1.")})
    x, y = ember.from_numpy(data["x"]), ember.from_numpy(data["y"])
    per = []
    for r in range(2):
        a = grads(net, x[4 * r:4 * r + 2], y[4 * r:4 * r + 2])
        b = grads(net, x[4 * r + 2:4 * r + 4], y[4 * r + 2:4 * r + 4])
        per.append((a, b))
        for k in a:  # under no_sync: this rank's own gradient, not averaged
            np.testing.assert_allclose(ranks[r][0]["local2." + k], a[k], rtol=1e-5, atol=1e-7)
    for arrays, _ in ranks:
        for k in per[0][0]:
            want = sum(a[k] + b[k] for a, b in per) / 2
            np.testing.assert_allclose(arrays["grad2." + k], want, rtol=1e-5, atol=1e-7)


def test_ddp_unused_parameters(ddp):
    ranks, _ = ddp
    for r, (arrays, info) in enumerate(ranks):
        msg = info["unused_error"]
        assert msg.startswith("[DistributedDataParallel] the last backward did not produce gradients for 2 of 6 "
                              f"parameters on rank {r}")
        assert "'spare.weight', 'spare.bias'" in msg and "find_unused_parameters=true" in msg
        assert info["unused_grad_is_none"] is True
    np.testing.assert_array_equal(ranks[0][0]["unused_fc1_grad"], ranks[1][0]["unused_fc1_grad"])


def test_ddp_comm_hooks_bucket_view_static_graph(tmp_path):
    """register_comm_hook with the built-in hooks, gradient_as_bucket_view and static_graph
    against plain DDP (tests/python/dist_worker.py ddp_hooks, 2 ranks)."""
    ranks = launch("ddp_hooks", 2, tmp_path)
    for arrays, info in ranks:
        for step in range(3):
            for k, want in arrays.items():
                prefix, kind, name = k.split(".", 2)
                if prefix != f"grad{step}":
                    continue
                if kind in ("allreduce", "view"):
                    np.testing.assert_array_equal(want, arrays[f"grad{step}.plain.{name}"], err_msg=f"{kind} {k}")
                if kind == "fp16":
                    plain = arrays[f"grad{step}.plain.{name}"]
                    # float16 values, within its rounding of the float32 result
                    np.testing.assert_array_equal(want.astype(np.float16).astype(np.float32), want)
                    np.testing.assert_allclose(want, plain, rtol=0, atol=4 * 2.0 ** -11 * 4 * np.abs(plain).max())
                if kind == "static":
                    np.testing.assert_array_equal(want, arrays[f"grad{step}.dynamic.{name}"], err_msg=k)
            assert f"grad{step}.static.spare.weight" not in arrays
            assert info[f"view_adjacent{step}"] == 3 * 4
            assert info[f"static_rebuilt{step}"] == (step > 0)
        assert any(not np.array_equal(arrays[f"grad0.fp16.{n}"], arrays[f"grad0.plain.{n}"])
                   for n in ("fc1.weight", "fc2.weight"))
        assert "a communication hook is already registered" in info["twice_error"]
        assert "ember runs only the built-in hooks" in info["custom_error"]
    for k in ranks[0][0]:
        np.testing.assert_array_equal(ranks[0][0][k], ranks[1][0][k], err_msg=k)


def test_distributed_sampler_from_group(ddp):
    ranks, _ = ddp
    for r, (_, info) in enumerate(ranks):
        s = ember.utils.data.DistributedSampler(list(range(11)), num_replicas=2, rank=r, shuffle=True, seed=3)
        s.set_epoch(2)
        assert info["sampler"] == list(s) and len(info["sampler"]) == 6
    # the two ranks' shares cover the data set, padded by one repeated index
    assert sorted(set(ranks[0][1]["sampler"]) | set(ranks[1][1]["sampler"])) == list(range(11))


# ---------------------------------------------------------------- one process

@pytest.mark.parametrize("n,replicas,shuffle,drop_last", [(10, 3, True, False), (10, 3, False, False),
                                                          (10, 3, True, True), (7, 4, True, False), (2, 3, False, True)])
def test_distributed_sampler_matches_torch(n, replicas, shuffle, drop_last):
    """Without shuffle the indices are torch's; with shuffle the permutation comes from ember's
    generator (not torch's bits), so only the lengths, the partition and the padding rule
    are compared."""
    import torch.utils.data as tud
    for epoch in (0, 5):
        shares = []
        for rank in range(replicas):
            e = ember.utils.data.DistributedSampler(list(range(n)), replicas, rank, shuffle, seed=7,
                                                    drop_last=drop_last)
            t = tud.DistributedSampler(list(range(n)), replicas, rank, shuffle, seed=7, drop_last=drop_last)
            e.set_epoch(epoch)
            t.set_epoch(epoch)
            assert len(e) == len(t) and len(list(e)) == len(list(t))
            if not shuffle:
                assert list(e) == list(t)
            shares.append(list(e))
        flat = [i for s in shares for i in s]
        if drop_last:
            assert len(set(flat)) == len(flat) == replicas * (n // replicas)
        else:
            assert set(flat) == set(range(n))
    if shuffle:
        a = ember.utils.data.DistributedSampler(list(range(n)), replicas, 0, True, seed=7, drop_last=drop_last)
        b = ember.utils.data.DistributedSampler(list(range(n)), replicas, 0, True, seed=7, drop_last=drop_last)
        assert list(a) == list(b)  # the same seed and epoch on every rank: the same permutation


def test_distributed_sampler_errors():
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        ember.utils.data.DistributedSampler(list(range(5)), num_replicas=3, rank=3)


def test_not_initialized_errors():
    assert dist.is_initialized() is False
    with pytest.raises(RuntimeError, match=r"^\[get_rank\] the default process group is not initialized"):
        dist.get_rank()
    with pytest.raises(RuntimeError, match=r"^\[all_reduce\] the default process group is not initialized"):
        dist.all_reduce(ember.ones(2))
    with pytest.raises(RuntimeError, match=r"^\[init_process_group\] init_method env:// needs MASTER_ADDR"):
        old = os.environ.pop("MASTER_ADDR", None)
        try:
            dist.init_process_group("gloo", rank=0, world_size=1)
        finally:
            if old is not None:
                os.environ["MASTER_ADDR"] = old
    with pytest.raises(RuntimeError, match=r"^\[init_process_group\] backend 'nccl' is not available"):
        dist.init_process_group("nccl", rank=0, world_size=1)


def test_single_process_group_with_a_store(tmp_path):
    store = dist.FileStore(str(tmp_path / "store"))
    store.set("k", "v")
    assert store.get("k") == b"v" and store.add("n", 2) == 2 and store.check(["k"])
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        t = ember.arange(4.0)
        dist.all_reduce(t)
        np.testing.assert_array_equal(t.numpy(), np.arange(4.0))
        assert dist.get_world_size() == 1 and dist.GroupMember.WORLD is not None
    finally:
        dist.destroy_process_group()
    assert dist.GroupMember.WORLD is None
    tcp = dist.TCPStore("127.0.0.1", 0, is_master=True, timeout=5)
    tcp.set("a", b"\x00\x01")
    assert tcp.get("a") == b"\x00\x01"
    with pytest.raises(RuntimeError, match=r"^\[TCPStore.wait\] timed out after 200 ms waiting for key 'missing'"):
        tcp.wait(["missing"], timeout=0.2)


def test_ddp_example_runs():
    """examples/python/distributed_ddp.py (docs/distributed.md) on 2 ranks via ember-run."""
    if not os.path.exists(EMBER_RUN):
        pytest.skip(f"{EMBER_RUN} is not built")
    script = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "python", "distributed_ddp.py")
    out = subprocess.run([EMBER_RUN, "--standalone", "--nproc-per-node", "2", sys.executable, script, "--epochs", "3"],
                         capture_output=True, text=True, timeout=90, env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert out.returncode == 0, out.stdout + out.stderr
    losses = [float(line.split()[-1]) for line in out.stdout.splitlines() if line.startswith("epoch ")]
    assert len(losses) == 3 and losses[-1] < 0.5 * losses[0], out.stdout
    assert "replicas identical on 2 ranks: True" in out.stdout


MPIRUN = shutil.which("mpirun")


@pytest.mark.skipif(not dist.is_mpi_available() or MPIRUN is None,
                    reason="ember was built without MPI (libopenmpi-dev), or mpirun (openmpi-bin) is missing")
def test_mpi_backend_under_mpirun(tmp_path):
    """init_process_group("mpi") on 2 processes started by mpirun (this machine only): rank and
    size from MPI, a float32 SUM and a bfloat16 MAX against the values the ranks put in."""
    script = tmp_path / "mpi_worker.py"
    script.write_text(textwrap.dedent("""
        import ember
        import ember.distributed as dist
        dist.init_process_group("mpi")
        rank, world = dist.get_rank(), dist.get_world_size()
        assert dist.get_backend() == "mpi", dist.get_backend()
        t = ember.full((3,), float(rank + 1))
        dist.all_reduce(t)
        b = ember.full((2,), rank + 0.5).to(ember.bfloat16)
        dist.all_reduce(b, op=dist.ReduceOp.MAX)
        print(f"rank {rank} of {world}: {t.numpy().tolist()} {b.to(ember.float32).numpy().tolist()}", flush=True)
        dist.destroy_process_group()
    """))
    env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = [MPIRUN, "-np", "2", "--oversubscribe", "--mca", "btl", "self,vader", "--mca",
           "btl_vader_single_copy_mechanism", "none", "--mca", "oob_tcp_if_include", "lo", "-x", "PYTHONPATH",
           sys.executable, str(script)]
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120,
                       start_new_session=True)
    assert p.returncode == 0, p.stdout
    assert "rank 0 of 2: [3.0, 3.0, 3.0] [1.5, 1.5]" in p.stdout, p.stdout
    assert "rank 1 of 2: [3.0, 3.0, 3.0] [1.5, 1.5]" in p.stdout, p.stdout
