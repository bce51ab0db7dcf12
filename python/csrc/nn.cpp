// ember's C++ layers that Python does not re-implement (the recurrent layers, multi-head
// attention, the transformer encoder layer): the C++ module runs forward and owns the
// parameters; ember/nn/cpp_modules.py registers those same tensors (shared TensorImpls)
// as Python Parameters under torch's names, so state_dict, optimizers and .grad see them.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bind.h"

namespace ember::python {

namespace {

using nn::Module;
Tensor opt_tensor(py::handle h) { return h.is_none() ? Tensor() : h.cast<Tensor>(); }

template <typename Impl>
std::shared_ptr<Impl> as(const std::shared_ptr<Module>& m, const char* what) {
  auto p = std::dynamic_pointer_cast<Impl>(m);
  if (!p) throw py::type_error(std::string("expected a C++ ") + what + " module");
  return p;
}

template <typename Options>
Options rnn_options(int64_t input_size, int64_t hidden_size, int64_t num_layers, bool bias, bool batch_first,
                    double dropout, bool bidirectional) {
  Options o(input_size, hidden_size);
  o.num_layers(num_layers).bias(bias).batch_first(batch_first).dropout(dropout).bidirectional(bidirectional);
  return o;
}

py::list named(const OrderedDict<std::string, Tensor>& d) {
  py::list out;
  for (const auto& item : d) out.append(py::make_tuple(item.key(), item.value()));
  return out;
}

}  // namespace

void init_nn_modules(py::module_& m) {
  py::module_ c = m.def_submodule("_cpp_nn", "ember's C++ layers, run from Python");
  py::class_<Module, std::shared_ptr<Module>>(c, "Module")
      .def("named_parameters", [](const Module& mod) { return named(mod.named_parameters()); })
      .def("named_buffers", [](const Module& mod) { return named(mod.named_buffers()); })
      .def("train", [](Module& mod, bool on) { mod.train(on); }, py::arg("mode") = true)
      .def_property_readonly("training", &Module::is_training);

  c.def("RNN", [](int64_t in, int64_t hidden, int64_t layers, const std::string& nonlinearity, bool bias,
                  bool batch_first, double dropout, bool bidirectional) -> std::shared_ptr<Module> {
        auto o = rnn_options<nn::RNNOptions>(in, hidden, layers, bias, batch_first, dropout, bidirectional);
        o.nonlinearity(nonlinearity);
        return std::make_shared<nn::RNNImpl>(o);
      });
  c.def("LSTM", [](int64_t in, int64_t hidden, int64_t layers, bool bias, bool batch_first, double dropout,
                   bool bidirectional) -> std::shared_ptr<Module> {
        return std::make_shared<nn::LSTMImpl>(
            rnn_options<nn::LSTMOptions>(in, hidden, layers, bias, batch_first, dropout, bidirectional));
      });
  c.def("GRU", [](int64_t in, int64_t hidden, int64_t layers, bool bias, bool batch_first, double dropout,
                  bool bidirectional) -> std::shared_ptr<Module> {
        return std::make_shared<nn::GRUImpl>(
            rnn_options<nn::GRUOptions>(in, hidden, layers, bias, batch_first, dropout, bidirectional));
      });
  c.def("rnn_forward", [](const std::shared_ptr<Module>& mod, const Tensor& input, py::handle hx) -> py::object {
        if (auto lstm = std::dynamic_pointer_cast<nn::LSTMImpl>(mod)) {
          std::optional<nn::LSTMImpl::State> state;
          if (!hx.is_none()) {
            py::tuple t = py::reinterpret_borrow<py::tuple>(hx);
            if (t.size() != 2) throw py::value_error("LSTM: hx must be a tuple (h_0, c_0)");
            state = nn::LSTMImpl::State(t[0].cast<Tensor>(), t[1].cast<Tensor>());
          }
          auto [out, st] = lstm->forward(input, state);
          return py::make_tuple(out, py::make_tuple(std::get<0>(st), std::get<1>(st)));
        }
        if (auto gru = std::dynamic_pointer_cast<nn::GRUImpl>(mod)) {
          auto [out, h] = gru->forward(input, opt_tensor(hx));
          return py::make_tuple(out, h);
        }
        auto rnn = as<nn::RNNImpl>(mod, "RNN/LSTM/GRU");
        auto [out, h] = rnn->forward(input, opt_tensor(hx));
        return py::make_tuple(out, h);
      });
  c.def("MultiheadAttention", [](int64_t embed_dim, int64_t num_heads, double dropout, bool bias, py::handle kdim,
                                 py::handle vdim, bool batch_first) -> std::shared_ptr<Module> {
        nn::MultiheadAttentionOptions o(embed_dim, num_heads);
        o.dropout(dropout).bias(bias).batch_first(batch_first);
        if (!kdim.is_none()) o.kdim(kdim.cast<int64_t>());
        if (!vdim.is_none()) o.vdim(vdim.cast<int64_t>());
        return std::make_shared<nn::MultiheadAttentionImpl>(o);
      });
  c.def("mha_forward", [](const std::shared_ptr<Module>& mod, const Tensor& q, const Tensor& k, const Tensor& v,
                          py::handle key_padding_mask, bool need_weights, py::handle attn_mask,
                          bool average_attn_weights, bool is_causal) {
        auto mha = as<nn::MultiheadAttentionImpl>(mod, "MultiheadAttention");
        auto [out, w] = mha->forward(q, k, v, opt_tensor(key_padding_mask), need_weights, opt_tensor(attn_mask),
                                     average_attn_weights, is_causal);
        return py::make_tuple(out, w.defined() ? py::cast(w) : py::none());
      });
  c.def("TransformerEncoderLayer", [](int64_t d_model, int64_t nhead, int64_t dim_feedforward, double dropout,
                                      const std::string& activation, double layer_norm_eps, bool batch_first,
                                      bool norm_first) -> std::shared_ptr<Module> {
        nn::TransformerEncoderLayerOptions o(d_model, nhead);
        o.dim_feedforward(dim_feedforward).dropout(dropout).activation(activation).layer_norm_eps(layer_norm_eps)
            .batch_first(batch_first).norm_first(norm_first);
        return std::make_shared<nn::TransformerEncoderLayerImpl>(o);
      });
  c.def("encoder_layer_forward", [](const std::shared_ptr<Module>& mod, const Tensor& src, py::handle mask,
                                    py::handle key_padding_mask, bool is_causal) {
        return as<nn::TransformerEncoderLayerImpl>(mod, "TransformerEncoderLayer")
            ->forward(src, opt_tensor(mask), opt_tensor(key_padding_mask), is_causal);
      });
}

}  // namespace ember::python
