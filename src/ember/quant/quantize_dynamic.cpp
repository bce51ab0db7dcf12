// quant::quantize_dynamic: swaps float layers for their dynamic int8 counterparts.

#include <map>
#include <memory>

#include "ember/core/check.h"
#include "ember/core/warning.h"
#include "ember/nn/modules/linear.h"
#include "ember/nn/modules/rnn.h"
#include "ember/quant/quant.h"

namespace ember::quant {

namespace {

constexpr const char* kOp = "[quant::quantize_dynamic]";

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

struct Walk {
  const std::set<ModuleKind>& kinds;
  std::vector<std::string> replaced;
  // Old module -> its replacement, so that a layer registered twice stays shared.
  std::map<const nn::Module*, std::pair<std::shared_ptr<nn::Module>, std::string>> done;
  std::map<const nn::Module*, std::shared_ptr<nn::Module>> old;

  void visit(nn::Module& parent, const std::string& prefix) {
    for (const std::string& name : parent.named_children().keys()) {
      std::shared_ptr<nn::Module> child = *parent.named_children().find(name);
      const std::string qualified = join(prefix, name);
      if (auto it = done.find(child.get()); it != done.end()) {
        parent.replace_module(name, it->second.first);
        continue;
      }
      std::shared_ptr<nn::Module> q;
      if (auto* lin = dynamic_cast<nn::LinearImpl*>(child.get()); lin && kinds.count(ModuleKind::Linear)) {
        q = std::make_shared<DynamicQuantizedLinearImpl>(*lin);
      } else if (auto* lstm = dynamic_cast<nn::LSTMImpl*>(child.get()); lstm && kinds.count(ModuleKind::LSTM)) {
        q = std::make_shared<DynamicQuantizedLSTMImpl>(*lstm);
      }
      if (q) {
        parent.replace_module(name, q);
        replaced.push_back(qualified);
        done.emplace(child.get(), std::make_pair(q, qualified));
        old.emplace(child.get(), child);
      } else {
        visit(*child, qualified);
      }
    }
  }
};

}  // namespace

std::vector<std::string> quantize_dynamic(nn::Module& model, const std::set<ModuleKind>& kinds, DType dtype) {
  EMBER_CHECK(dtype == kInt8, kOp, " dtype ", dtype,
              " is not supported; dynamic quantization stores weights as int8 (ember::kInt8, torch.qint8)");
  EMBER_CHECK(!kinds.empty(), kOp,
              " the set of module kinds is empty; pass {quant::ModuleKind::Linear} and/or quant::ModuleKind::LSTM");
  EMBER_CHECK(dynamic_cast<nn::LinearImpl*>(&model) == nullptr, kOp,
              " the model itself is a Linear and cannot be replaced in place; construct "
              "quant::DynamicQuantizedLinear(*linear) instead, or quantize the module that holds it");
  EMBER_CHECK(dynamic_cast<nn::LSTMImpl*>(&model) == nullptr, kOp,
              " the model itself is an LSTM and cannot be replaced in place; construct "
              "quant::DynamicQuantizedLSTM(*lstm) instead, or quantize the module that holds it");
  Walk walk{kinds, {}, {}, {}};
  walk.visit(model, "");
  // A replaced layer that someone still holds (a holder member of a custom module) would
  // keep running in float through that handle.
  for (const auto& [ptr, module] : walk.old) {
    if (module.use_count() > 1) {
      warn(std::string(kOp) + " '" + walk.done[ptr].second +
           "' was replaced in the module tree, but the float layer is still held elsewhere (e.g. a holder member "
           "that the parent's forward calls directly); calls through that handle stay float. Build the model from "
           "nn::Sequential/ModuleList, or call children through the module tree");
    }
  }
  return walk.replaced;
}

int64_t state_dict_bytes(const nn::Module& model) {
  int64_t bytes = 0;
  for (const auto& item : model.state_dict()) bytes += static_cast<int64_t>(item.value().nbytes());
  return bytes;
}

}  // namespace ember::quant
