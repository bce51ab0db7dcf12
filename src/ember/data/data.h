#pragma once
// ember::data: data sets, samplers, the threaded DataLoader, collate functions, transforms,
// MNIST/Fashion-MNIST (IDX files), memory-mapped token data and a progress bar. See docs/data.md.

#include "ember/data/collate.h"
#include "ember/data/dataloader.h"
#include "ember/data/dataset.h"
#include "ember/data/example.h"
#include "ember/data/idx.h"
#include "ember/data/progress.h"
#include "ember/data/sample_rng.h"
#include "ember/data/sampler.h"
#include "ember/data/token_dataset.h"
#include "ember/data/transforms.h"
