#pragma once
// Internal: the autograd records of the normalisation and embedding ops
// (functions_norm.cpp). The op computes its output first (with the fused kernels), then
// calls one of these when autograd::needs_grad(...) holds for its inputs. Not installed API.
//
// Note [Fused norm backward]: the first-order backward of batch/layer/group norm runs
// the fused kernels (kernels/cpu/norm.h). When the backward itself is recorded
// (create_graph=true), the same closed form is written with ember ops instead, with the
// batch statistics recomputed from the saved input, so gradients of gradients are right.

#include <cstdint>

#include "ember/core/tensor.h"

namespace ember::autograd::fn {

// NativeBatchNormBackward0. mean/invstd: the statistics used (the batch's when training,
// else from the running ones), [C]. weight/bias may be undefined.
void batch_norm(const Tensor& out, const Tensor& input, const Tensor& weight, const Tensor& bias,
                const Tensor& mean, const Tensor& invstd, bool training, double eps);

// NativeLayerNormBackward0 (or `name`, e.g. NativeGroupNormBackward0): `input` normalised
// over its last `norm_dims` dims; weight/bias (shape of those dims) may be undefined.
// mean/rstd: one per row, [rows].
void layer_norm(const char* name, const Tensor& out, const Tensor& input, int64_t norm_dims, const Tensor& weight,
                const Tensor& bias, const Tensor& mean, const Tensor& rstd, double eps);

// EmbeddingBackward0: out = weight[indices]; the row padding_idx (-1: none) gets no
// gradient.
void embedding(const Tensor& out, const Tensor& weight, const Tensor& indices, int64_t padding_idx);

}  // namespace ember::autograd::fn
