"""ember.utils.data: Dataset, DataLoader, samplers and default_collate (torch.utils.data).

num_workers > 0 uses threads (not processes): each worker builds whole batches and the
loader yields them in order, prefetching 2 batches per worker. The heavy ember calls
(stack/cat, matrix products, convolutions, backward, optimizer steps) release the GIL, so
collating overlaps training; pure-Python per-sample transforms still take turns on the
GIL (docs/python.md).
"""

import concurrent.futures as _futures
import math as _math
import numbers as _numbers

from ... import _C
from ..._C import Tensor

try:
    import numpy as _np
except ImportError:  # pragma: no cover
    _np = None


class Dataset:
    def __getitem__(self, index):
        raise NotImplementedError

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    def __iter__(self):
        raise NotImplementedError


class TensorDataset(Dataset):
    """Samples are tuples of the tensors' rows: dataset[i] = (t0[i], t1[i], ...)."""

    def __init__(self, *tensors):
        if any(tensors[0].shape[0] != t.shape[0] for t in tensors):
            raise ValueError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    def __init__(self, datasets):
        self.datasets = list(datasets)
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self):
        return self.cumulative_sizes[-1] if self.cumulative_sizes else 0

    def __getitem__(self, idx):
        if idx < 0:
            idx += len(self)
        start = 0
        for d, end in zip(self.datasets, self.cumulative_sizes):
            if idx < end:
                return d[idx - start]
            start = end
        raise IndexError("index out of range")


def random_split(dataset, lengths, generator=None):
    n = len(dataset)
    if all(0 <= x <= 1 for x in lengths) and _math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = [int(_math.floor(n * f)) for f in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        lengths = sizes
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    perm = _C.randperm(n).tolist()
    out, offset = [], 0
    for length in lengths:
        out.append(Subset(dataset, perm[offset:offset + length]))
        offset += length
    return out


# ---- samplers ----
class Sampler:
    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A fresh permutation per epoch, drawn from ember's generator (ember.manual_seed)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source, self.replacement, self._num_samples = data_source, replacement, num_samples

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        if self.replacement:
            return iter(_C.randint(0, n, (self.num_samples,)).tolist())
        return iter(_C.randperm(n).tolist()[:self.num_samples])

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    def __init__(self, indices, generator=None):
        self.indices = indices

    def __iter__(self):
        return (self.indices[i] for i in _C.randperm(len(self.indices)).tolist())

    def __len__(self):
        return len(self.indices)


class DistributedSampler(Sampler):
    """Rank `rank`'s share of a data set among `num_replicas` processes, with torch's
    algorithm (ember::data::DistributedSampler underneath): a permutation drawn from
    seed + epoch by ember's generator (when shuffle; so not torch's order, but the same
    on every rank), padded by repeating indices from its start to a multiple of
    num_replicas (or its tail dropped with drop_last), then every num_replicas-th index from
    `rank`. num_replicas and rank default to the default process group's. Call set_epoch()
    at the start of each epoch for a new shuffle (the same on every rank)."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None or rank is None:
            from ... import distributed as dist
            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            if num_replicas is None:
                num_replicas = dist.get_world_size()
            if rank is None:
                rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, seed, drop_last, 0
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = max(0, -(-(n - num_replicas) // num_replicas))
        else:
            self.num_samples = -(-n // num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        return iter(_C._distributed.distributed_sampler_indices(len(self.dataset), self.num_replicas, self.rank,
                                                                 self.shuffle, self.seed, self.epoch, self.drop_last))

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        self.epoch = epoch


class BatchSampler(Sampler):
    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size


# ---- collation ----
def default_collate(batch):
    """Stacks a list of samples: tensors along a new dim 0, numbers into a tensor, and
    tuples/lists/dicts element-wise (as torch's default_collate)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return _C.stack(list(batch), 0)
    if _np is not None and isinstance(elem, _np.ndarray):
        return _C.from_numpy(_np.stack(batch))
    if _np is not None and isinstance(elem, _np.generic):
        return _C._tensor(_np.array(batch), None)
    if isinstance(elem, bool):
        return _C._tensor(list(batch), _C.bool)
    if isinstance(elem, float):
        return _C._tensor(list(batch), _C.float64)
    if isinstance(elem, _numbers.Integral):
        return _C._tensor(list(batch), _C.int64)
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, dict):
        return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, (tuple, list)):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(s)) for s in zip(*batch)]
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found "
                    f"{type(elem)}")


def default_convert(data):
    if _np is not None and isinstance(data, _np.ndarray):
        return _C.from_numpy(data)
    return data


class DataLoader:
    """Batches of a Dataset: shuffle, drop_last, sampler/batch_sampler, collate_fn, and
    num_workers threads (see the module docstring)."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=2, persistent_workers=False,
                 pin_memory_device=""):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size = None
            drop_last = False
        elif sampler is None:
            sampler = RandomSampler(dataset) if shuffle else SequentialSampler(dataset)
        elif shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size, self.drop_last = batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batch_sampler is not None else default_convert)

    def _fetch(self, indices):
        if self.batch_sampler is None:
            return self.collate_fn(self.dataset[indices])
        return self.collate_fn([self.dataset[i] for i in indices])

    def __iter__(self):
        source = self.batch_sampler if self.batch_sampler is not None else self.sampler
        if self.num_workers == 0:
            for indices in source:
                yield self._fetch(indices)
            return
        with _futures.ThreadPoolExecutor(self.num_workers) as pool:
            if self.worker_init_fn is not None:
                list(pool.map(self.worker_init_fn, range(self.num_workers)))
            pending = []
            it = iter(source)
            depth = max(1, self.prefetch_factor * self.num_workers)
            for indices in it:
                pending.append(pool.submit(self._fetch, indices))
                if len(pending) >= depth:
                    yield pending.pop(0).result(timeout=self.timeout or None)
            for f in pending:
                yield f.result(timeout=self.timeout or None)

    def __len__(self):
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)
