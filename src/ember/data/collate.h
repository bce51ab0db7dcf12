#pragma once
// Collate functions: turn the samples of one batch into batch tensors.

#include <vector>

#include "ember/data/example.h"

namespace ember::data {

// Stacks same-shaped samples along a new dim 0 by copying each into one preallocated
// tensor: data [B, ...] and target [B, ...] (0-d targets give [B]). Targets must be all
// defined or all undefined. Shapes or dtypes that differ raise ember::Error naming the
// sample (use pad_collate for sequences of different lengths).
Example default_collate(std::vector<Example>&& samples);

// Stacks tensors of one shape and dtype into a new [N, ...] tensor (one copy per tensor).
// `what` names the field in error messages.
Tensor collate_tensors(const std::vector<Tensor>& tensors, const char* what = "data");

// Pads sequences [L_i, ...] (equal trailing dims) to the longest along dim 0 with
// pad_value; sequence targets (dim >= 1) are padded the same way with target_pad_value
// (-100 is cross_entropy's default ignore_index), 0-d targets are stacked.
PaddedBatch pad_collate(std::vector<Example>&& samples, double pad_value = 0.0, double target_pad_value = -100.0);

// pad_collate with fixed pad values, usable as a DataLoader collate function.
struct PadCollate {
  double pad_value = 0.0;
  double target_pad_value = -100.0;
  PaddedBatch operator()(std::vector<Example>&& samples) const {
    return pad_collate(std::move(samples), pad_value, target_pad_value);
  }
};

}  // namespace ember::data
