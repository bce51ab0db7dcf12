// The module-tree passes of static quantization: fuse_modules, prepare and convert (with the
// linking of adjacent quantized layers, Note [Activation codes] in quantized_ops.h).

#include <map>
#include <sstream>

#include "ember/core/check.h"
#include "ember/core/warning.h"
#include "ember/nn/modules/activation.h"
#include "ember/nn/modules/batchnorm.h"
#include "ember/nn/modules/container.h"
#include "ember/nn/modules/conv.h"
#include "ember/nn/modules/linear.h"
#include "ember/nn/modules/pooling.h"
#include "ember/quant/qat.h"
#include "ember/quant/static_quant.h"

namespace ember::quant {

namespace {

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

std::shared_ptr<nn::Module> child_at(nn::Module& parent, const std::string& name) {
  return *parent.named_children().find(name);
}

// Why a Conv2d cannot be quantized ("" when it can).
std::string conv_unsupported(const nn::Conv2dImpl& conv) {
  const nn::Conv2dOptions& o = conv.options;
  if (o.padding_mode() != "zeros") return "its padding_mode is '" + o.padding_mode() + "' (only 'zeros' has an int8 version)";
  if (o.padding_str() == "same") {
    for (size_t i = 0; i < 2; ++i) {
      if ((o.dilation()[i] * (o.kernel_size()[i] - 1)) % 2 != 0) return "its padding='same' pads unevenly";
    }
  }
  return "";
}

bool is_prepared_or_converted(const nn::Module* m) {
  if (const auto* ff = dynamic_cast<const FloatFunctionalImpl*>(m)) return ff->mode() != FloatFunctionalImpl::Mode::Float;
  return dynamic_cast<const ObservedLinearImpl*>(m) || dynamic_cast<const ObservedConv2dImpl*>(m) ||
         dynamic_cast<const StaticQuantizedLinearImpl*>(m) || dynamic_cast<const QuantizedConv2dImpl*>(m) ||
         dynamic_cast<const QATConv2dImpl*>(m) || dynamic_cast<const QATLinearImpl*>(m);
}

struct PrepareWalk {
  const QConfig& config;
  std::vector<std::string> observed;
  std::map<const nn::Module*, std::shared_ptr<nn::Module>> done;
  // The float layers replaced, with their names: one still held elsewhere afterwards (a holder
  // member that a custom forward calls) would keep running in float.
  std::vector<std::pair<std::shared_ptr<nn::Module>, std::string>> old;

  void visit(nn::Module& parent, const std::string& prefix) {
    const bool sequential = dynamic_cast<nn::SequentialImpl*>(&parent) != nullptr;
    const std::vector<std::string> names = parent.named_children().keys();
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string& name = names[i];
      std::shared_ptr<nn::Module> child = child_at(parent, name);
      if (auto it = done.find(child.get()); it != done.end()) {
        parent.replace_module(name, it->second);
        continue;
      }
      if (is_prepared_or_converted(child.get())) {
        EMBER_ERROR("[quant::prepare] '", join(prefix, name), "' (", child->name(),
                    ") is already prepared or converted; call quant::prepare once, on the float model");
      }
      auto next = [&](size_t k) -> std::shared_ptr<nn::Module> {
        return sequential && k < names.size() ? child_at(parent, names[k]) : nullptr;
      };
      std::shared_ptr<nn::Module> replacement;
      size_t last = i;  // the last child fused into this one
      if (auto* ff = dynamic_cast<FloatFunctionalImpl*>(child.get())) {
        ff->start_observing(config);  // in place (Note [FloatFunctional])
        observed.push_back(join(prefix, name));
        continue;
      }
      if (auto lin = std::dynamic_pointer_cast<nn::LinearImpl>(child)) {
        const bool relu = dynamic_cast<nn::ReLUImpl*>(next(i + 1).get()) != nullptr;
        if (relu) last = i + 1;
        replacement = std::make_shared<ObservedLinearImpl>(lin, relu, config);
      } else if (auto conv = std::dynamic_pointer_cast<nn::Conv2dImpl>(child)) {
        const std::string why = conv_unsupported(*conv);
        if (!why.empty()) {
          warn("[quant::prepare] '" + join(prefix, name) + "' (Conv2d) stays float32: " + why);
          continue;
        }
        std::shared_ptr<nn::Conv2dImpl> folded = conv;
        if (auto bn = std::dynamic_pointer_cast<nn::BatchNorm2dImpl>(next(i + 1))) {
          folded = fuse_conv_bn(*conv, *bn);
          last = i + 1;
        }
        const bool relu = dynamic_cast<nn::ReLUImpl*>(next(last + 1).get()) != nullptr;
        if (relu) ++last;
        replacement = std::make_shared<ObservedConv2dImpl>(folded, relu, config);
      } else {
        visit(*child, join(prefix, name));
        continue;
      }
      parent.replace_module(name, replacement);
      done.emplace(child.get(), replacement);
      old.emplace_back(child, join(prefix, name));
      observed.push_back(join(prefix, name));
      for (size_t k = i + 1; k <= last; ++k) parent.replace_module(names[k], std::make_shared<nn::IdentityImpl>());
      i = last;
    }
  }
};

// Refuses an uncalibrated layer before anything is replaced; counts what convert would replace.
int check_convertible(nn::Module& parent, const std::string& prefix) {
  int found = 0;
  for (const auto& item : parent.named_children()) {
    const std::string qualified = join(prefix, item.key());
    nn::Module* m = item.value().get();
    const Observer* in = nullptr;
    const Observer* out = nullptr;
    if (auto* ff = dynamic_cast<FloatFunctionalImpl*>(m)) {
      if (ff->mode() != FloatFunctionalImpl::Mode::Observing) continue;
      EMBER_CHECK(ff->calibrated(), "[quant::convert] '", qualified,
                  "' (FloatFunctional) has not been calibrated: it saw no call. Run the prepared model on calibration "
                  "data between quant::prepare and quant::convert (and check that the parent's forward calls it)");
      ++found;
      continue;
    }
    if (auto* o = dynamic_cast<ObservedLinearImpl*>(m)) {
      in = o->input_observer.get(), out = o->output_observer.get();
    } else if (auto* o = dynamic_cast<ObservedConv2dImpl*>(m)) {
      in = o->input_observer.get(), out = o->output_observer.get();
    } else if (auto* o = dynamic_cast<QATLinearImpl*>(m)) {
      in = &o->input_fake_quant->observer(), out = &o->output_fake_quant->observer();
    } else if (auto* o = dynamic_cast<QATConv2dImpl*>(m)) {
      in = &o->input_fake_quant->observer(), out = &o->output_fake_quant->observer();
    } else {
      found += check_convertible(*m, qualified);
      continue;
    }
    EMBER_CHECK(in->calibrated() && out->calibrated(), "[quant::convert] '", qualified, "' (", m->name(),
                ") has not been calibrated: its observers have seen no data. Run the prepared model on calibration "
                "data (model->forward(batch) for a few batches; a QAT model in training mode) between "
                "quant::prepare and quant::convert");
    ++found;
  }
  return found;
}

struct ConvertWalk {
  std::vector<std::string> converted;
  std::map<const nn::Module*, std::shared_ptr<nn::Module>> done;

  void visit(nn::Module& parent, const std::string& prefix) {
    for (const std::string& name : parent.named_children().keys()) {
      std::shared_ptr<nn::Module> child = child_at(parent, name);
      if (auto it = done.find(child.get()); it != done.end()) {
        parent.replace_module(name, it->second);
        continue;
      }
      std::shared_ptr<nn::Module> q;
      if (auto* ff = dynamic_cast<FloatFunctionalImpl*>(child.get())) {
        if (ff->mode() == FloatFunctionalImpl::Mode::Observing) {
          ff->convert_to_quantized();  // in place (Note [FloatFunctional])
          converted.push_back(join(prefix, name));
        }
        continue;
      }
      if (auto* o = dynamic_cast<ObservedLinearImpl*>(child.get())) {
        q = std::make_shared<StaticQuantizedLinearImpl>(*o->linear, o->input_observer->calculate_qparams(),
                                                        o->output_observer->calculate_qparams(), o->relu);
      } else if (auto* o = dynamic_cast<ObservedConv2dImpl*>(child.get())) {
        q = std::make_shared<QuantizedConv2dImpl>(*o->conv, o->input_observer->calculate_qparams(),
                                                  o->output_observer->calculate_qparams(), o->relu);
      } else if (auto* o = dynamic_cast<QATLinearImpl*>(child.get())) {
        q = o->to_quantized();
      } else if (auto* o = dynamic_cast<QATConv2dImpl*>(child.get())) {
        q = o->to_quantized();
      } else {
        visit(*child, join(prefix, name));
        continue;
      }
      q->train(false);
      parent.replace_module(name, q);
      done.emplace(child.get(), q);
      converted.push_back(join(prefix, name));
    }
  }
};

// Whether a module keeps values on its input's grid, so that codes may pass through it: max and
// average pooling (as their quantized versions) and reshaping.
bool passes_codes(const nn::Module* m) {
  if (const auto* a = dynamic_cast<const nn::AdaptiveAvgPool2dImpl*>(m)) {
    for (int64_t v : a->options.output_size()) {
      if (v < 0) return false;  // "keep this dim" entries: left float
    }
    return true;
  }
  return dynamic_cast<const nn::IdentityImpl*>(m) || dynamic_cast<const nn::MaxPool2dImpl*>(m) ||
         dynamic_cast<const QuantizedMaxPool2dImpl*>(m) || dynamic_cast<const nn::FlattenImpl*>(m) ||
         dynamic_cast<const nn::AvgPool2dImpl*>(m) || dynamic_cast<const QuantizedAvgPool2dImpl*>(m) ||
         dynamic_cast<const QuantizedAdaptiveAvgPool2dImpl*>(m);
}

// Note [Activation codes]: in each Sequential, a quantized layer followed by another one with
// only Identity, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d and Flatten between them hands it codes.
void link(nn::Module& parent) {
  if (dynamic_cast<nn::SequentialImpl*>(&parent) == nullptr) {
    for (const auto& c : parent.children()) link(*c);
    return;
  }
  const std::vector<std::string> names = parent.named_children().keys();
  QuantizedLayer* producer = nullptr;
  std::vector<std::string> between;
  for (const std::string& name : names) {
    std::shared_ptr<nn::Module> child = child_at(parent, name);
    if (auto* layer = dynamic_cast<QuantizedLayer*>(child.get())) {
      if (producer != nullptr) {
        const int64_t zp = producer->output_qparams().zero_point;
        for (const std::string& b : between) {
          std::shared_ptr<nn::Module> m = child_at(parent, b);
          if (auto pool = std::dynamic_pointer_cast<nn::MaxPool2dImpl>(m)) {
            parent.replace_module(b, std::make_shared<QuantizedMaxPool2dImpl>(pool->options));
          } else if (auto avg = std::dynamic_pointer_cast<nn::AvgPool2dImpl>(m)) {
            parent.replace_module(b, std::make_shared<QuantizedAvgPool2dImpl>(avg->options, zp));
          } else if (auto ada = std::dynamic_pointer_cast<nn::AdaptiveAvgPool2dImpl>(m)) {
            parent.replace_module(b, std::make_shared<QuantizedAdaptiveAvgPool2dImpl>(ada->options, zp));
          }
        }
        producer->output_codes = true;
        layer->set_input_qparams(producer->output_qparams());
      }
      producer = layer;
      between.clear();
    } else if (passes_codes(child.get())) {
      between.push_back(name);
    } else {
      producer = nullptr;
      between.clear();
      link(*child);
    }
  }
}

struct FuseWalk {
  std::vector<std::string> fused;
  void visit(nn::Module& parent, const std::string& prefix) {
    const bool sequential = dynamic_cast<nn::SequentialImpl*>(&parent) != nullptr;
    const std::vector<std::string> names = parent.named_children().keys();
    for (size_t i = 0; i < names.size(); ++i) {
      std::shared_ptr<nn::Module> child = child_at(parent, names[i]);
      auto conv = std::dynamic_pointer_cast<nn::Conv2dImpl>(child);
      if (conv && sequential && i + 1 < names.size()) {
        if (auto bn = std::dynamic_pointer_cast<nn::BatchNorm2dImpl>(child_at(parent, names[i + 1]))) {
          parent.replace_module(names[i], fuse_conv_bn(*conv, *bn));
          parent.replace_module(names[i + 1], std::make_shared<nn::IdentityImpl>());
          fused.push_back(join(prefix, names[i]));
          ++i;
          continue;
        }
      }
      if (!conv) visit(*child, join(prefix, names[i]));
    }
  }
};

}  // namespace

std::vector<std::string> fuse_modules(nn::Module& model) {
  EMBER_CHECK(!model.is_training(), "[quant::fuse_modules] the model is in training mode; call model->eval() first ",
              "(the BatchNorm running statistics are folded into the convolutions; for training with fused ",
              "modules use quant::prepare_qat)");
  FuseWalk walk;
  walk.visit(model, "");
  return walk.fused;
}

std::vector<std::string> prepare(nn::Module& model, const QConfig& config) {
  EMBER_CHECK(dynamic_cast<nn::LinearImpl*>(&model) == nullptr && dynamic_cast<nn::Conv2dImpl*>(&model) == nullptr,
              "[quant::prepare] the model itself is a ", model.name(),
              " and cannot be replaced in place; wrap it in an nn::Sequential");
  EMBER_CHECK(!model.is_training(), "[quant::prepare] the model is in training mode; call model->eval() first, so ",
              "that calibration sees inference behaviour (Dropout off, BatchNorm running statistics)");
  (void)config.make_activation_observer();  // an invalid config fails here, before anything changes
  PrepareWalk walk{config, {}, {}, {}};
  walk.visit(model, "");
  for (const auto& [module, name] : walk.old) {
    // Held here, and twice by the observed layer when it wraps the same object (no folding):
    // its member and its registered child.
    long owners = 1;
    const nn::Module* replacement = walk.done.at(module.get()).get();
    if (const auto* o = dynamic_cast<const ObservedLinearImpl*>(replacement); o != nullptr && o->linear == module) {
      owners += 2;
    }
    if (const auto* o = dynamic_cast<const ObservedConv2dImpl*>(replacement); o != nullptr && o->conv == module) {
      owners += 2;
    }
    if (module.use_count() > owners) {
      warn("[quant::prepare] '" + name + "' (" + module->name() +
           ") was replaced in the module tree, but the float layer is still held elsewhere (e.g. a holder member that "
           "the parent's forward calls directly), so calls through that handle stay float and its observers see "
           "nothing. Hold quantizable layers in an nn::Sequential member (one layer is fine) and additions or "
           "concatenations in a quant::FloatFunctional");
    }
  }
  if (walk.observed.empty()) warn("[quant::prepare] the model holds no nn::Linear or nn::Conv2d; nothing will be quantized");
  return walk.observed;
}

std::vector<std::string> convert(nn::Module& model) {
  EMBER_CHECK(check_convertible(model, "") > 0, "[quant::convert] the model holds no prepared layer; call ",
              "quant::prepare(model) (or quant::prepare_qat) and run calibration data through it before quant::convert");
  ConvertWalk walk;
  walk.visit(model, "");
  link(model);
  return walk.converted;
}

}  // namespace ember::quant
