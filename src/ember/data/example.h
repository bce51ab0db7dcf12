#pragma once
// What data sets hand out and loaders yield: an input and its (optional) target.

#include "ember/core/tensor.h"

namespace ember::data {

// One sample, or a batch of them after collation. target is undefined for unlabeled data.
struct Example {
  Tensor data;
  Tensor target;
};

// A batch of variable-length sequences padded to the longest (see pad_collate).
//   data:    [B, L_max, ...] padded with the pad value
//   target:  0-d targets stacked to [B]; sequence targets padded to [B, L_max, ...]
//   lengths: int64 [B], each sequence's true length
//   mask:    bool [B, L_max], true at real (non-pad) positions
struct PaddedBatch {
  Tensor data;
  Tensor target;
  Tensor lengths;
  Tensor mask;
};

}  // namespace ember::data
