#pragma once
// TensorImpl: the (storage, sizes, strides, offset, dtype) tuple behind a Tensor handle.
// Views are new TensorImpls over the same Storage.

#include <cstdint>
#include <memory>

#include "ember/core/dtype.h"
#include "ember/core/shape.h"
#include "ember/core/storage.h"

namespace ember {

namespace autograd {
struct AutogradMeta;  // defined in ember/autograd/autograd_meta.h
}

class TensorImpl final : public IntrusiveTarget {
 public:
  TensorImpl(Storage storage, DType dtype, IntArrayRef sizes, IntArrayRef strides,
             int64_t storage_offset);
  ~TensorImpl() override;

  IntArrayRef sizes() const { return sizes_; }
  IntArrayRef strides() const { return strides_; }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t numel() const { return numel_; }
  int64_t storage_offset() const { return storage_offset_; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  bool is_contiguous() const { return is_contiguous_; }
  const Storage& storage() const { return storage_; }
  // Address of element [0, 0, ...]; null for tensors without memory.
  void* data() const {
    auto* base = static_cast<char*>(storage_->data());
    return base ? base + storage_offset_ * static_cast<int64_t>(element_size(dtype_)) : nullptr;
  }

  // Replaces the geometry (used by in-place shape changes such as detach_ and resize).
  void set_sizes_and_strides(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset);
  // Makes this tensor use src's storage, dtype and geometry (PyTorch's `t.data = src`);
  // autograd state stays. Used by Module::to(dtype) to convert parameters in place.
  void set_data(const TensorImpl& src);

  autograd::AutogradMeta* autograd_meta() const { return autograd_meta_.get(); }
  // Whether any autograd state exists and says this tensor requires grad.
  bool requires_grad() const;
  // Creates the autograd record on first use.
  autograd::AutogradMeta& ensure_autograd_meta();
  void clear_autograd_meta();

  // For a view made by a view op: the tensor whose storage it views (never itself a
  // view). Autograd uses it to rewrite the base's history when the view is modified in
  // place. Null for non-views and for detach().
  TensorImpl* view_base() const { return view_base_.get(); }
  const IntrusivePtr<TensorImpl>& view_base_ptr() const { return view_base_; }
  void set_view_base(IntrusivePtr<TensorImpl> base) { view_base_ = std::move(base); }

  // Created inside InferenceMode: never enters autograd, has no version counter bumps.
  bool is_inference() const { return is_inference_; }
  // Views take the flag from their base, not from the mode they are made in.
  void set_inference(bool inference) { is_inference_ = inference; }

 private:
  void refresh();

  Storage storage_;
  DimVector sizes_;
  DimVector strides_;
  int64_t storage_offset_ = 0;
  int64_t numel_ = 1;
  std::unique_ptr<autograd::AutogradMeta> autograd_meta_;
  IntrusivePtr<TensorImpl> view_base_;
  DType dtype_;
  bool is_contiguous_ = true;
  bool is_inference_ = false;
};

// Millions of tensors can be alive at once (activations, optimizer state); growing this
// struct costs memory and cache misses on every op. Raise the bound only with a reason.
static_assert(sizeof(TensorImpl) <= 192, "TensorImpl grew; see the comment above");

// True when sizes/strides describe row-major order with no gaps (size-1 dims ignored).
bool compute_contiguous(IntArrayRef sizes, IntArrayRef strides);
// Row-major strides for sizes.
DimVector contiguous_strides(IntArrayRef sizes);

}  // namespace ember
