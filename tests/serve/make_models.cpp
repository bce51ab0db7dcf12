// Writes the model store the ember-serve tests and bench/serve serve:
//   <store>/mlp/{1,2,3}/model.ember   20 features -> 3 classes; 3 has 1's weights
//   <store>/img/1/model.ember         uint8 8x8 images (normalization in the metadata) -> 4 labels
//   <store>/slow/1/model.ember        [B, 128, 128] through a chain of bmm+tanh (for queues/timeouts)
//   <store>/fixed/1/model.ember       a static shape [2, 4] (no batch dim)
// and <store>/reference.json: inputs and eager outputs to check the server's answers against.
//
//   make_models STORE [--slow-depth N]
#include <ember/ember.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using namespace ember;

namespace {

std::string json_list(const Tensor& t) {
  std::vector<double> v = t.to(kFloat64).contiguous().to_vector<double>();
  std::string s = "[";
  char buf[40];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%.9g", v[i]);
    if (i) s += ',';
    s += buf;
  }
  return s + "]";
}

void save_to(const jit::GraphModule& m, const fs::path& store, const std::string& model, const std::string& version,
             const Value& meta) {
  fs::create_directories(store / model / version);
  jit::save(m, (store / model / version / "model.ember").string(), meta);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: make_models STORE [--slow-depth N]\n");
    return 2;
  }
  const fs::path store = argv[1];
  int slow_depth = 1200;  // ~130 ms a sample on one core of the dev machine
  for (int i = 2; i + 1 < argc; i += 2)
    if (std::string(argv[i]) == "--slow-depth") slow_depth = std::stoi(argv[i + 1]);
  fs::create_directories(store);
  std::string ref = "{";

  // mlp: versions 1 and 2 differ; 3 is 1 again (a shadow that always agrees).
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  opt.input_names = {"features"};
  opt.output_names = {"logits"};
  manual_seed(7);
  const Tensor profile_batch = randn({512, 20});
  const Tensor probe = randn({4, 20});
  for (int v = 1; v <= 2; ++v) {
    manual_seed(100 + v);
    nn::Sequential mlp(nn::Linear(20, 32), nn::ReLU(), nn::Linear(32, 3));
    mlp->eval();
    jit::GraphModule g = jit::freeze(jit::trace(*mlp, randn({2, 20}), opt));
    Value meta = Value::dict();
    meta["labels"] = Value(Value::List{Value("a"), Value("b"), Value("c")});
    meta["input_profile"] = jit::input_profile(profile_batch);
    save_to(g, store, "mlp", std::to_string(v), meta);
    if (v == 1) save_to(g, store, "mlp", "3", meta);
    NoGradGuard ng;
    ref += "\"mlp" + std::to_string(v) + "\":{\"input\":" + json_list(probe) + ",\"output\":" +
           json_list(mlp->forward(probe)) + "},";
  }

  // img: uint8 pixels -> (x / 255 - 0.5) / 0.25 -> 4 classes.
  {
    manual_seed(11);
    nn::Sequential net(nn::Flatten(), nn::Linear(64, 4));
    net->eval();
    jit::TraceOptions o;
    o.dynamic_batch = true;
    o.input_names = {"image"};
    o.output_names = {"logits"};
    jit::GraphModule g = jit::freeze(jit::trace(*net, randn({2, 1, 8, 8}), o));
    Value meta = Value::dict();
    Value norm = Value::dict();
    norm["scale"] = 1.0 / 255.0;
    norm["mean"] = std::vector<double>{0.5};
    norm["std"] = std::vector<double>{0.25};
    meta["normalization"] = norm;
    meta["labels"] = Value(Value::List{Value("zero"), Value("one"), Value("two"), Value("three")});
    meta["input_profile"] = jit::input_profile((randint(0, 256, {64, 1, 8, 8}).to(kFloat32) / 255.0 - 0.5) / 0.25);
    save_to(g, store, "img", "1", meta);
    const Tensor pixels = randint(0, 256, {2, 1, 8, 8}).to(kUInt8);
    NoGradGuard ng;
    const Tensor x = (pixels.to(kFloat32) * (1.0 / 255.0) - 0.5) / 0.25;
    ref += "\"img\":{\"pixels\":" + json_list(pixels) + ",\"output\":" + json_list(softmax(net->forward(x), 1)) + "},";
  }

  // slow: parameter-free, cost set by the chain depth.
  {
    jit::TraceOptions o;
    o.dynamic_batch = true;
    o.input_names = {"x"};
    o.output_names = {"y"};
    jit::GraphModule g = jit::trace(
        [slow_depth](const std::vector<Tensor>& in) {
          Tensor x = in[0];
          for (int i = 0; i < slow_depth; ++i) x = tanh(bmm(x, x) * (1.0 / 128));
          return std::vector<Tensor>{x.sum({1, 2})};
        },
        {randn({2, 128, 128})}, o);
    save_to(g, store, "slow", "1", Value::dict());
  }

  // fixed: no batch dim.
  {
    jit::TraceOptions o;
    o.input_names = {"x"};
    o.output_names = {"y"};
    jit::GraphModule g = jit::trace([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 2.0 + 1.0}; },
                                    {randn({2, 4})}, o);
    save_to(g, store, "fixed", "1", Value::dict());
  }
  ref.back() = '}';
  std::ofstream(store / "reference.json") << ref << "\n";
  std::printf("model store written to %s\n", store.string().c_str());
  return 0;
}
