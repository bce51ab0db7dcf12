#pragma once
// Internal: the autograd entry points of the indexing, scatter/gather, masked, advanced
// indexing and sorting ops (functions_index.cpp). An op calls one of these only when
// autograd::needs_grad(...) holds for its inputs; the entry runs the op's own forward
// (passed in, run with grad mode off) and records the backward node. Not installed API.

#include <cstdint>
#include <string_view>
#include <tuple>
#include <vector>

#include "ember/autograd/functions.h"

namespace ember {

// The tensor-valued masked_fill/index_fill forms are declared in ops/index.h.

}  // namespace ember

namespace ember::autograd::fn {

using ForwardPair = FunctionRef<std::tuple<Tensor, Tensor>()>;

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index, Forward forward);
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index, Forward forward);

// The scatter family. Src: scatter with a src tensor; Value: scatter with a scalar (src
// undefined); Add: scatter_add; Reduce: scatter_reduce with `reduce` and include_self.
enum class ScatterKind : uint8_t { Src, Value, Add, Reduce };
Tensor scatter(ScatterKind kind, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
               std::string_view reduce, bool include_self, Forward forward);
void scatter_(ScatterKind kind, const char* name, const Tensor& self, int64_t dim, const Tensor& index,
              const Tensor& src, std::string_view reduce, bool include_self, ForwardInplace forward);

// index_add (alpha), index_copy, index_fill with a scalar (source undefined) or a 0-d
// tensor value (source = the value).
enum class IndexKind : uint8_t { Add, Copy, Fill, FillTensor };
Tensor index_func(IndexKind kind, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                  const Scalar& alpha, Forward forward);
void index_func_(IndexKind kind, const char* name, const Tensor& self, int64_t dim, const Tensor& index,
                 const Tensor& source, const Scalar& alpha, ForwardInplace forward);

// masked_fill with a scalar (value undefined) or a 0-d tensor value.
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value, Forward forward);
void masked_fill_(const Tensor& self, const Tensor& mask, const Tensor& value, ForwardInplace forward);
Tensor masked_select(const Tensor& self, const Tensor& mask, Forward forward);
Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source, Forward forward);
void masked_scatter_(const Tensor& self, const Tensor& mask, const Tensor& source, ForwardInplace forward);

// Advanced indexing (undefined entries of `indices` are full slices).
Tensor index(const Tensor& self, const std::vector<Tensor>& indices, Forward forward);
void index_put_(const Tensor& self, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate,
                ForwardInplace forward);

// sort / topk / kthvalue: (values, indices); the values get the node `name`, whose
// gradient is scattered back through the indices along dim (keepdim false: the
// indices lack dim).
std::tuple<Tensor, Tensor> select_values(const char* name, const Tensor& self, int64_t dim, bool keepdim,
                                         ForwardPair forward);

}  // namespace ember::autograd::fn
