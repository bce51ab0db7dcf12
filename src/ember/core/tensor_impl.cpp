#include "ember/core/tensor_impl.h"

#include "ember/autograd/autograd_meta.h"
#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"

namespace ember {

Storage make_storage(size_t nbytes, Device device) {
  return Storage::make(get_allocator(device.type())->allocate(nbytes), nbytes);
}

bool compute_contiguous(IntArrayRef sizes, IntArrayRef strides) {
  // An empty tensor is contiguous whatever its strides; checking this first also keeps the
  // running product below from overflowing on shapes like {0, 2^62, 2^62}.
  for (int64_t s : sizes)
    if (s == 0) return true;
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector strides(sizes.size());
  int64_t s = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = s;
    // Only a tensor with a zero-size dim can get here with a product past int64 (factories
    // check numel); its strides never address memory, so saturating is harmless.
    if (__builtin_mul_overflow(s, sizes[d] > 1 ? sizes[d] : 1, &s)) s = INT64_MAX;
  }
  return strides;
}

TensorImpl::TensorImpl(Storage storage, DType dtype, IntArrayRef sizes, IntArrayRef strides,
                       int64_t storage_offset)
    : storage_(std::move(storage)),
      sizes_(sizes),
      strides_(strides),
      storage_offset_(storage_offset),
      dtype_(dtype),
      is_inference_(InferenceMode::is_enabled()) {
  refresh();
}

TensorImpl::~TensorImpl() = default;

void TensorImpl::set_sizes_and_strides(IntArrayRef sizes, IntArrayRef strides,
                                       int64_t storage_offset) {
  sizes_ = sizes;
  strides_ = strides;
  storage_offset_ = storage_offset;
  refresh();
}

void TensorImpl::set_data(const TensorImpl& src) {
  storage_ = src.storage_;
  dtype_ = src.dtype_;
  set_sizes_and_strides(src.sizes_, src.strides_, src.storage_offset_);
}

void TensorImpl::refresh() {
  int64_t n = 1;
  for (int64_t s : sizes_) {
    if (s == 0) {
      n = 0;
      break;
    }
    // A view can claim any sizes (expand, as_strided): refuse those whose element count
    // int64 cannot hold, before anything multiplies it.
    EMBER_CHECK(!__builtin_mul_overflow(n, s, &n), "[tensor] sizes ", IntArrayRef(sizes_),
                " have more elements than fit in int64");
  }
  numel_ = n;
  is_contiguous_ = compute_contiguous(sizes_, strides_);
}

bool TensorImpl::requires_grad() const { return autograd_meta_ && autograd_meta_->requires_grad; }

void TensorImpl::clear_autograd_meta() { autograd_meta_.reset(); }

autograd::AutogradMeta& TensorImpl::ensure_autograd_meta() {
  if (!autograd_meta_) autograd_meta_ = std::make_unique<autograd::AutogradMeta>();
  return *autograd_meta_;
}

}  // namespace ember
