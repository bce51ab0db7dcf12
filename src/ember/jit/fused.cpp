#include "ember/jit/fused.h"

#include <algorithm>

#include "ember/core/check.h"
#include "ember/core/parallel.h"
#include "ember/jit/ops.h"
#include "ember/ops/creation.h"
#include "ember/ops/pointwise_nodes.h"

namespace ember::jit {

Tensor run_fused_elementwise(const std::vector<Tensor>& inputs, const Value::Dict& attrs) {
  const Value::List& ops = attrs["ops"].to_list();
  const Value::List& args = attrs["args"].to_list();
  const Value::List& step_attrs = attrs["attrs"].to_list();
  const size_t steps = ops.size();
  EMBER_CHECK(steps > 0 && args.size() == steps && step_attrs.size() == steps,
              "[fused_elementwise] malformed program: ", steps, " ops, ", args.size(), " arg lists, ",
              step_attrs.size(), " attribute sets");
  EMBER_CHECK(!inputs.empty(), "[fused_elementwise] needs at least one input");
  // The output shape: the largest input (the others have its shape or one element).
  DimVector shape;
  int64_t n = 0;
  for (const Tensor& t : inputs) {
    EMBER_CHECK(t.defined() && t.dtype() == kFloat32, "[fused_elementwise] inputs must be float32 tensors");
    if (t.numel() > n) {
      n = t.numel();
      shape = DimVector(t.sizes());
    }
  }
  std::vector<std::vector<int64_t>> arg_ids(steps);
  for (size_t s = 0; s < steps; ++s) {
    arg_ids[s] = args[s].to_int_list();
    for (int64_t k : arg_ids[s]) {
      EMBER_CHECK(k < static_cast<int64_t>(inputs.size()) && k >= -static_cast<int64_t>(s),
                  "[fused_elementwise] step ", s, " reads operand ", k, ", which does not exist before it");
    }
  }
  std::vector<Tensor> flat;  // contiguous inputs; one-element ones stay as they are
  for (const Tensor& t : inputs) {
    EMBER_CHECK(t.numel() == n || t.numel() == 1, "[fused_elementwise] input of ", t.numel(),
                " elements does not match the output's ", n);
    flat.push_back(t.numel() == n ? t.contiguous() : t.reshape({1}));
  }
  Tensor out = empty(shape, TensorOptions(kFloat32));
  float* out_data = out.data_ptr<float>();
  const int64_t blocks = (n + kFusedBlock - 1) / kFusedBlock;
  parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<float> scratch(static_cast<size_t>(kFusedBlock) * (steps - 1));
    std::vector<Tensor> results(steps);
    std::vector<Tensor> operands;
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t start = b * kFusedBlock;
      const int64_t len = std::min(kFusedBlock, n - start);
      auto operand = [&](int64_t k) -> Tensor {
        if (k < 0) return results[static_cast<size_t>(-1 - k)];
        const Tensor& t = flat[static_cast<size_t>(k)];
        if (t.numel() == 1 && n != 1) return t.expand({len});
        return from_blob(t.data_ptr<float>() + start, {len}, TensorOptions(kFloat32));
      };
      for (size_t s = 0; s < steps; ++s) {
        float* dst = s + 1 == steps ? out_data + start : scratch.data() + s * kFusedBlock;
        Tensor target = from_blob(dst, {len}, TensorOptions(kFloat32));
        const std::string& op = ops[s].to_string();
        operands.clear();
        for (int64_t k : arg_ids[s]) operands.push_back(operand(k));
        const Value::Dict& a = step_attrs[s].to_dict();
        bool done;
        if (operands.size() == 1 && detail::is_unary_node(op)) {
          done = detail::run_unary_node_out(op, target, operands[0], a);
        } else {
          done = detail::run_binary_node_out(op, target, operands, a);
        }
        if (!done) {
          // A step whose first operand is a broadcast scalar: compute it out of place.
          const OpDef* def = find_op(op);
          EMBER_CHECK(def != nullptr, "[fused_elementwise] unknown op '", op, "'");
          Tensor r = call_op(*def, operands, a).at(0);
          EMBER_CHECK(r.dtype() == kFloat32 && r.numel() == len, "[fused_elementwise] step '", op,
                      "' does not give float32 of the block's size");
          target.copy_(r);
        }
        results[s] = target;
      }
    }
  });
  return out;
}

}  // namespace ember::jit
