#pragma once
// Joining and shaping ops that build new tensors (copies).

#include <string_view>
#include <vector>

#include "ember/core/tensor.h"

namespace ember {

// Concatenates along an existing dim; dtypes promote as in torch.cat. 1-D empty tensors
// (size [0]) are skipped, as in PyTorch.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor concat(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Joins along a new dim; all tensors must have the same shape.
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor hstack(const std::vector<Tensor>& tensors);
Tensor vstack(const std::vector<Tensor>& tensors);
Tensor flip(const Tensor& t, IntArrayRef dims);
Tensor roll(const Tensor& t, IntArrayRef shifts, IntArrayRef dims = {});
Tensor tile(const Tensor& t, IntArrayRef dims);
Tensor repeat_interleave(const Tensor& t, int64_t repeats, std::optional<int64_t> dim = std::nullopt);
Tensor tril(const Tensor& t, int64_t diagonal = 0);
Tensor triu(const Tensor& t, int64_t diagonal = 0);
// torch.nn.functional.pad: pad lists (left, right) pairs starting from the LAST dim.
// mode: "constant" (uses value), "reflect", "replicate".
Tensor pad(const Tensor& t, IntArrayRef pad, std::string_view mode = "constant", double value = 0.0);
// int64 class indices -> int64 one-hot with a new last dim; num_classes -1 infers max+1.
Tensor one_hot(const Tensor& t, int64_t num_classes = -1);

}  // namespace ember
