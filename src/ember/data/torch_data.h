#pragma once
// The libtorch-style data API (torch::data of PyTorch's C++ API) in ember::data::api:
//
//   namespace api = ember::data::api;
//   auto loader = api::make_data_loader(
//       api::datasets::TensorDataset(ember::randn({100, 3})).map(api::transforms::Stack<api::TensorExample>()),
//       api::DataLoaderOptions(32).workers(2));
//   for (api::TensorExample& batch : *loader) { ... }   // batch.data: [32, 3] (the last [4, 3])
//
//   api::Example<Data, Target>, TensorExample          (types.h)
//   datasets::{BatchDataset, Dataset, StreamDataset, StatefulDataset, MapDataset,
//              SharedBatchDataset + make_shared_dataset, TensorDataset}     (datasets.h)
//   datasets::{ChunkDataReader, ChunkDatasetOptions, ChunkDataset}     (chunk.h)
//   datasets::MNIST(root, Mode::kTrain / kTest)                       (mnist.h)
//   transforms::{BatchTransform, Transform, Lambda, BatchLambda, TensorTransform,
//                TensorLambda, Normalize, Collation, Collate, Stack}   (transforms.h)
//   samplers::{Sampler, SequentialSampler, RandomSampler, StreamSampler, BatchSize,
//              DistributedRandomSampler, DistributedSequentialSampler,
//              CustomBatchRequest}                                     (samplers.h)
//   DataLoaderOptions, FullDataLoaderOptions, make_data_loader, StatelessDataLoader,
//   StatefulDataLoader, Iterator, WorkerException                      (loader.h)
//   detail::{Queue, DataShuttle, sequencers::{NoSequencer, OrderedSequencer}}  (detail.h)
//   ember::serialize::{OutputArchive, InputArchive}, ember::save/load(obj, stream|file)
//                                                                      (archive.h)
//
// Not in ember::data itself because ember's own data API (ember/data/data.h) already
// names ember::data::Example, DataLoaderOptions and transforms::Normalize differently.
// A libtorch compatibility header maps it: namespace torch { namespace data = ::ember::data::api; }
// This header is not part of ember/ember.h (template-heavy); include it where used.

#include "ember/data/api/archive.h"
#include "ember/data/api/chunk.h"
#include "ember/data/api/datasets.h"
#include "ember/data/api/detail.h"
#include "ember/data/api/loader.h"
#include "ember/data/api/mnist.h"
#include "ember/data/api/samplers.h"
#include "ember/data/api/transforms.h"
#include "ember/data/api/types.h"
