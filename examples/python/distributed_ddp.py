"""Data-parallel training from Python, torch.distributed's way: one process per rank.

    build/tools/ember-run --standalone --nproc-per-node 2 \\
        /usr/bin/python3 examples/python/distributed_ddp.py [--epochs 3]

(PYTHONPATH=build/python.) Each rank trains a small MLP on its DistributedSampler share of a
synthetic data set; DistributedDataParallel averages the gradients during backward, so the
replicas stay identical. Rank 0 prints the loss and, at the end, checks that every rank
holds the same parameters."""

import argparse

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.parallel import DistributedDataParallel as DDP
from ember.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    a = ap.parse_args()
    dist.init_process_group("gloo")  # env://: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from ember-run
    rank, world = dist.get_rank(), dist.get_world_size()

    ember.manual_seed(0)  # the same data set on every rank
    x = ember.randn(512, 10)
    y = (x[:, 0] + x[:, 1] > 0).long()
    data = TensorDataset(x, y)

    ember.manual_seed(1 + rank)  # different initial weights: DDP broadcasts rank 0's
    model = DDP(nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2)))
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sampler = DistributedSampler(data, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=32, sampler=sampler)
    for epoch in range(a.epochs):
        sampler.set_epoch(epoch)  # a new shuffle, the same on every rank
        total = ember.zeros(2)
        for xb, yb in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()  # gradients averaged over the ranks here
            opt.step()
            total += ember.tensor([loss.item() * len(yb), float(len(yb))])
        dist.all_reduce(total)  # every rank's loss sum and sample count
        if rank == 0:
            print(f"epoch {epoch}: mean loss {total[0].item() / total[1].item():.4f}")

    flat = ember.cat([p.detach().reshape(-1) for p in model.parameters()])
    copies = [ember.zeros_like(flat) for _ in range(world)]
    dist.all_gather(copies, flat)
    same = all(bool((c == copies[0]).all()) for c in copies)
    if rank == 0:
        print(f"replicas identical on {world} ranks: {same}")
    dist.destroy_process_group()
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
