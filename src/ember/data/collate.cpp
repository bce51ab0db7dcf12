#include "ember/data/collate.h"

#include <algorithm>
#include <cstring>

#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/ops/creation.h"

namespace ember::data {

namespace {

// Copies src into row b of batch: a memcpy for contiguous samples, copy_ otherwise.
void copy_row(const Tensor& batch, int64_t b, const Tensor& src) {
  const size_t bytes = src.nbytes();
  if (src.is_contiguous() && !src.requires_grad()) {
    if (bytes) std::memcpy(static_cast<char*>(batch.data_ptr()) + static_cast<size_t>(b) * bytes, src.data_ptr(), bytes);
  } else {
    Tensor row = batch.select(0, b);
    row.copy_(src.detach());
  }
}

std::vector<int64_t> with_batch_dim(int64_t n, IntArrayRef sizes) {
  std::vector<int64_t> out{n};
  out.insert(out.end(), sizes.begin(), sizes.end());
  return out;
}

}  // namespace

Tensor collate_tensors(const std::vector<Tensor>& tensors, const char* what) {
  EMBER_CHECK(!tensors.empty(), "[collate] got an empty batch");
  const Tensor& first = tensors[0];
  EMBER_CHECK(first.defined(), "[collate] sample 0 of the batch has an undefined ", what);
  for (size_t i = 1; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    EMBER_CHECK(t.defined(), "[collate] sample ", i, " of the batch has an undefined ", what);
    EMBER_CHECK(t.sizes() == first.sizes() && t.dtype() == first.dtype(), "[collate] ", what, " of sample ", i,
                " has sizes ", t.sizes(), " and dtype ", t.dtype(), " but sample 0 has sizes ", first.sizes(),
                " and dtype ", first.dtype(), "; samples must match (use pad_collate for variable-length sequences)");
  }
  Tensor out = empty(with_batch_dim(static_cast<int64_t>(tensors.size()), first.sizes()), first.options());
  for (size_t i = 0; i < tensors.size(); ++i) copy_row(out, static_cast<int64_t>(i), tensors[i]);
  return out;
}

Example default_collate(std::vector<Example>&& samples) {
  OpScope scope("default_collate");
  EMBER_CHECK(!samples.empty(), "[default_collate] got an empty batch");
  std::vector<Tensor> data, targets;
  data.reserve(samples.size());
  const bool has_target = samples[0].target.defined();
  for (size_t i = 0; i < samples.size(); ++i) {
    data.push_back(std::move(samples[i].data));
    EMBER_CHECK(samples[i].target.defined() == has_target, "[default_collate] sample ", i, " has ",
                has_target ? "no target" : "a target", " but sample 0 ", has_target ? "has one" : "has none",
                "; targets must be all defined or all undefined");
    if (has_target) targets.push_back(std::move(samples[i].target));
  }
  Example out;
  out.data = collate_tensors(data, "data");
  if (has_target) out.target = collate_tensors(targets, "target");
  return out;
}

namespace {

IntArrayRef tail(IntArrayRef sizes) { return IntArrayRef(sizes.data() + 1, sizes.size() - 1); }

// Pads sequences [L_i, ...] along dim 0 into [B, L_max, ...] filled with pad.
Tensor pad_sequences(const std::vector<Tensor>& seqs, int64_t max_len, double pad, const char* what) {
  const Tensor& first = seqs[0];
  std::vector<int64_t> sizes{static_cast<int64_t>(seqs.size()), max_len};
  for (int64_t d = 1; d < first.dim(); ++d) sizes.push_back(first.size(d));
  Tensor out = full(sizes, pad, first.options());
  for (size_t i = 0; i < seqs.size(); ++i) {
    const Tensor& s = seqs[i];
    EMBER_CHECK(s.dim() == first.dim() && s.dtype() == first.dtype() && tail(s.sizes()) == tail(first.sizes()),
                "[pad_collate] ", what, " of sample ", i, " has sizes ", s.sizes(), " and dtype ", s.dtype(),
                " but sample 0 has sizes ", first.sizes(), " and dtype ", first.dtype(),
                "; only dim 0 (the length) may differ");
    if (s.size(0) > 0) out.select(0, static_cast<int64_t>(i)).narrow(0, 0, s.size(0)).copy_(s.detach());
  }
  return out;
}

}  // namespace

PaddedBatch pad_collate(std::vector<Example>&& samples, double pad_value, double target_pad_value) {
  OpScope scope("pad_collate");
  EMBER_CHECK(!samples.empty(), "[pad_collate] got an empty batch");
  const auto n = static_cast<int64_t>(samples.size());
  std::vector<Tensor> data, targets;
  std::vector<int64_t> lengths;
  const bool has_target = samples[0].target.defined();
  for (size_t i = 0; i < samples.size(); ++i) {
    const Tensor& d = samples[i].data;
    EMBER_CHECK(d.defined() && d.dim() >= 1, "[pad_collate] sample ", i,
                " must be a sequence with at least one dim (its length), got ",
                d.defined() ? "a 0-d tensor" : "an undefined tensor");
    EMBER_CHECK(samples[i].target.defined() == has_target, "[pad_collate] sample ", i,
                " differs from sample 0 in having a target; targets must be all defined or all undefined");
    data.push_back(d);
    lengths.push_back(d.size(0));
    if (has_target) targets.push_back(samples[i].target);
  }
  const int64_t max_len = *std::max_element(lengths.begin(), lengths.end());
  PaddedBatch out;
  out.data = pad_sequences(data, max_len, pad_value, "data");
  if (has_target) {
    if (targets[0].dim() == 0) {
      out.target = collate_tensors(targets, "target");
    } else {
      out.target = pad_sequences(targets, max_len, target_pad_value, "target");
    }
  }
  out.lengths = tensor(lengths);
  out.mask = zeros({n, max_len}, TensorOptions(kBool));
  bool* m = out.mask.data_ptr<bool>();
  for (int64_t i = 0; i < n; ++i) std::fill(m + i * max_len, m + i * max_len + lengths[static_cast<size_t>(i)], true);
  return out;
}

}  // namespace ember::data
