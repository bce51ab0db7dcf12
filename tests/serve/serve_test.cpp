// Unit tests of ember-serve's parts: metrics exposition, strict configuration, tensor
// codecs, drift statistics and the dynamic batcher. The HTTP server itself is tested
// end to end by test_serve.py.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "ember/serve/codec.h"
#include "ember/serve/metrics.h"
#include "ember/serve/model.h"
#include "ember/serve/repository.h"
#include "ember/serve/server.h"

namespace serve_test {

using namespace ember;
using namespace ember::serve;
namespace fs = std::filesystem;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ServeMetrics, RendersPrometheusText) {
  Registry reg;
  reg.counter("t_requests_total", "Requests", {"model", "code"}).with({"m\"1", "200"}).inc(3);
  Histogram& h = reg.histogram("t_latency_seconds", "Latency", {"model"}, {0.1, 1.0}).with({"m"});
  h.observe(0.05);
  h.observe(0.5);
  h.observe(5);
  reg.gauge("t_inflight", "In flight", {}).with({}).set(2);
  const std::string text = reg.render();
  EXPECT_NE(text.find("# TYPE t_requests_total counter\nt_requests_total{model=\"m\\\"1\",code=\"200\"} 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("t_latency_seconds_bucket{model=\"m\",le=\"0.10000000000000001\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("t_latency_seconds_bucket{model=\"m\",le=\"1\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("t_latency_seconds_bucket{model=\"m\",le=\"+Inf\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("t_latency_seconds_sum{model=\"m\"} 5.5499999999999998\n"), std::string::npos) << text;
  EXPECT_NE(text.find("t_latency_seconds_count{model=\"m\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE t_inflight gauge\nt_inflight 2\n"), std::string::npos) << text;
  reg.remove_matching("model", "m");
  EXPECT_EQ(reg.render().find("t_latency_seconds_count"), std::string::npos);
}

TEST(ServeMetrics, HistogramQuantileInterpolatesInBuckets) {
  Histogram h({1, 2, 4});
  for (int i = 0; i < 50; ++i) h.observe(0.5);
  for (int i = 0; i < 50; ++i) h.observe(3);
  EXPECT_DOUBLE_EQ(h.quantile(0.5), 1.0);   // the 50th value ends the first bucket
  EXPECT_DOUBLE_EQ(h.quantile(0.75), 3.0);  // halfway through (2, 4]
  EXPECT_EQ(h.count(), 100u);
  Histogram empty({1});
  EXPECT_EQ(empty.quantile(0.99), 0.0);
}

TEST(ServeConfig, UnknownKeysAreErrorsNamingTheKey) {
  const fs::path dir = fs::temp_directory_path() / ("ember_serve_cfg_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "serve.json").string();
  std::ofstream(path) << R"({"inference_address": "127.0.0.1:0", "max_batch_size": 8})";
  std::string msg = error_of([&] { parse_server_config(path); });
  EXPECT_NE(msg.find("unknown setting \"max_batch_size\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("model_defaults"), std::string::npos) << msg;  // lists what is accepted
  std::ofstream(path) << R"({"models": {"cnn": {"max_batch": 8}}})";
  msg = error_of([&] { parse_server_config(path); });
  EXPECT_NE(msg.find("(models.cnn): unknown setting \"max_batch\"; a model accepts: max_batch_size"),
            std::string::npos)
      << msg;
  std::ofstream(path) << R"({"models": {"cnn": {"workers": "2"}}})";
  msg = error_of([&] { parse_server_config(path); });
  EXPECT_NE(msg.find("\"workers\" must be an integer, got string"), std::string::npos) << msg;
  std::ofstream(path) << R"({"inference_address": "localhost"})";
  msg = error_of([&] { parse_server_config(path); });
  EXPECT_NE(msg.find("must be \"host:port\""), std::string::npos) << msg;
  std::ofstream(path) << R"({"io_threads": 2, "inference_address": "127.0.0.1:9000",
      "model_defaults": {"max_batch_size": 16}, "models": {"cnn": {"workers": 2, "traffic": {"1": 90, "2": 10}}}})";
  const ServerOptions o = parse_server_config(path);
  EXPECT_EQ(o.io_threads, 2);
  EXPECT_EQ(o.inference_port, 9000);
  EXPECT_EQ(o.model_configs.at("cnn").workers, 2);
  EXPECT_EQ(o.model_configs.at("cnn").max_batch_size, 16);  // from model_defaults
  ASSERT_EQ(o.model_configs.at("cnn").traffic.size(), 2u);
  EXPECT_EQ(o.model_configs.at("cnn").traffic[1].first, "2");
  EXPECT_DOUBLE_EQ(o.model_configs.at("cnn").traffic[1].second, 10);
  fs::remove_all(dir);
}

TEST(ServeCodec, DecodesNestedAndFlatJson) {
  const json::Json nested = json::parse("[[1, 2.5], [3, 4]]", 8, 100);
  Tensor t = decode_json_data(nested, kFloat32, {2, 2}, "x");
  EXPECT_EQ(t.sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2.5f, 3, 4}));
  EXPECT_EQ(nested_shape(nested, "x"), (std::vector<int64_t>{2, 2}));
  Tensor i = decode_json_data(json::parse("[1, -2, 3]", 8, 100), kInt32, {3}, "ids");
  EXPECT_EQ(i.dtype(), kInt32);
  EXPECT_EQ(i.to_vector<int32_t>(), (std::vector<int32_t>{1, -2, 3}));
  Tensor b = decode_json_data(json::parse("[true, false]", 8, 100), kBool, {2}, "mask");
  EXPECT_EQ(b.dtype(), kBool);
  std::string out;
  append_flat(out, decode_json_data(json::parse("[0.1, 1e30, -2]", 8, 100), kFloat32, {3}, "x"));
  EXPECT_EQ(out, "[0.1,1e+30,-2]");  // shortest float forms
  out.clear();
  append_nested(out, t);
  EXPECT_EQ(out, "[[1,2.5],[3,4]]");
}

TEST(ServeCodec, CompactNumberArrays) {
  auto c = [](const char* s) { return json::parse(s, 8, 1000, nullptr, /*compact_numbers=*/true); };
  const json::Json rows = c("[[1, 2.5], [3, -4e0]]");
  ASSERT_EQ(rows.array.size(), 2u);
  EXPECT_TRUE(rows.array[0].compact);
  EXPECT_FALSE(rows.array[0].all_integers);
  EXPECT_EQ(rows.array[1].numbers, (std::vector<double>{3, -4}));
  EXPECT_EQ(nested_shape(rows, "x"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(decode_json_data(rows, kFloat32, {4}, "x").to_vector<float>(), (std::vector<float>{1, 2.5f, 3, -4}));
  // Integers stay exact past 2^53.
  const json::Json big = c("[9007199254740993, -2]");
  EXPECT_TRUE(big.all_integers);
  EXPECT_EQ(decode_json_data(big, kInt64, {2}, "x").to_vector<int64_t>(), (std::vector<int64_t>{9007199254740993, -2}));
  EXPECT_NE(error_of([&] { decode_json_data(c("[1, 2.5]"), kInt64, {2}, "x"); }).find("expected an integer for INT64"),
            std::string::npos);
  EXPECT_NE(error_of([&] { decode_json_data(c("[1, 2]"), kBool, {2}, "x"); }).find("element 1 is a number, expected a boolean"),
            std::string::npos);
  // A non-number in the array: read the general way, types kept per element.
  const json::Json mixed = c("[1, 2.5, \"a\"]");
  EXPECT_FALSE(mixed.compact);
  ASSERT_EQ(mixed.array.size(), 3u);
  EXPECT_EQ(mixed.array[0].type, json::Json::Type::Int);
  EXPECT_EQ(mixed.array[1].type, json::Json::Type::Double);
  EXPECT_EQ(mixed.array[2].s, "a");
  EXPECT_NE(error_of([&] { decode_json_data(mixed, kFloat32, {3}, "x"); }).find("element 2 is string"),
            std::string::npos);
  // The value limit still counts every number.
  EXPECT_NE(error_of([&] { json::parse("[1, 2, 3, 4]", 8, 3, nullptr, true); }).find("more than 3 values"),
            std::string::npos);
  EXPECT_NE(error_of([&] { c("[1, 2,]"); }).find("invalid value"), std::string::npos);
}

TEST(ServeCodec, BadTensorsNameTheProblem) {
  auto j = [](const char* s) { return json::parse(s, 8, 100); };
  EXPECT_NE(error_of([&] { decode_json_data(j("[1, 2, 3]"), kFloat32, {2, 2}, "input \"x\""); })
                .find("input \"x\": shape [2, 2] holds 4 elements, data has 3"),
            std::string::npos);
  EXPECT_NE(error_of([&] { decode_json_data(j("[1, \"a\"]"), kFloat32, {2}, "x"); })
                .find("element 1 is string, expected a number"),
            std::string::npos);
  EXPECT_NE(error_of([&] { decode_json_data(j("[1, 300]"), kUInt8, {2}, "x"); }).find("300 is out of range for UINT8"),
            std::string::npos);
  EXPECT_NE(error_of([&] { decode_json_data(j("[1.5]"), kInt64, {1}, "x"); }).find("expected an integer for INT64"),
            std::string::npos);
  EXPECT_NE(error_of([&] { nested_shape(j("[[1, 2], [3]]"), "x"); }).find("ragged"), std::string::npos);
  EXPECT_NE(error_of([&] { decode_binary(std::string(7, '\0'), kFloat32, {2}, "x"); })
                .find("binary data has 7 bytes, shape [2] of FP32 needs 8"),
            std::string::npos);
  EXPECT_NE(error_of([&] { decode_json_data(j("[1]"), kFloat32, {-1}, "x"); }).find("shape dims must be >= 0"),
            std::string::npos);
  const std::string raw("\x01\x00\x00\x00\x02\x00\x00\x00", 8);
  EXPECT_EQ(decode_binary(raw, kInt32, {2}, "x").to_vector<int32_t>(), (std::vector<int32_t>{1, 2}));
}

TEST(ServeDrift, PsiGrowsWithShift) {
  manual_seed(3);
  const Tensor ref = randn({256, 4});
  Value profile = jit::input_profile(ref);
  ASSERT_TRUE(profile.contains("bin_edges"));
  EXPECT_EQ(profile.at("bin_fractions").to_double_list().size(), profile.at("bin_edges").to_double_list().size() + 1);
  DriftMonitor same(profile), shifted(profile);
  same.observe(randn({256, 4}));
  shifted.observe(randn({256, 4}) + 2.0);
  EXPECT_LT(same.psi(), 0.1);
  EXPECT_GT(shifted.psi(), 1.0);
  const Value r = shifted.report();
  EXPECT_NEAR(r.at("mean_shift").to_double(), 2.0, 0.3);
  EXPECT_NEAR(r.at("std_ratio").to_double(), 1.0, 0.2);
  ASSERT_EQ(r.at("channels").to_list().size(), 4u);
  DriftMonitor none{Value()};
  EXPECT_FALSE(none.has_reference());
}

// A saved artifact of a small MLP with a dynamic batch, and the module itself.
struct SavedMlp {
  nn::Sequential net{nn::Linear(6, 8), nn::ReLU(), nn::Linear(8, 2)};
  std::string path;
  SavedMlp() {
    manual_seed(5);
    net = nn::Sequential(nn::Linear(6, 8), nn::ReLU(), nn::Linear(8, 2));
    net->eval();
    jit::TraceOptions o;
    o.dynamic_batch = true;
    o.input_names = {"x"};
    path = (fs::temp_directory_path() / ("ember_serve_mlp_" + std::to_string(::getpid()) + ".ember")).string();
    jit::save(jit::trace(*net, randn({2, 6}), o), path);
  }
  ~SavedMlp() { fs::remove(path); }
};

TEST(ServeBatcher, BatchesConcurrentRequestsAndSplitsTheAnswers) {
  SavedMlp m;
  Registry reg;
  ModelConfig cfg;
  cfg.max_batch_size = 16;
  cfg.max_queue_delay_us = 50000;  // long enough that all 12 requests meet in one batch or two
  auto mv = std::make_shared<ModelVersion>("mlp", "1", m.path, cfg, reg);
  EXPECT_TRUE(mv->batchable());
  EXPECT_EQ(mv->inputs()[0].shape, (std::vector<int64_t>{-1, 6}));
  std::vector<Tensor> xs;
  std::vector<std::promise<InferResult>> promises(12);
  for (int i = 0; i < 12; ++i) xs.push_back(randn({1 + i % 3, 6}));
  for (int i = 0; i < 12; ++i) {
    mv->submit({xs[i]}, Clock::now() + std::chrono::seconds(10),
               [&promises, i](InferResult r) { promises[i].set_value(std::move(r)); });
  }
  int64_t max_rows = 0;
  for (int i = 0; i < 12; ++i) {
    InferResult r = promises[i].get_future().get();
    ASSERT_EQ(r.status, 200) << r.error;
    max_rows = std::max(max_rows, r.batch_rows);
    NoGradGuard ng;
    const Tensor want = m.net->forward(xs[i]);
    ASSERT_EQ(r.outputs[0].sizes(), want.sizes());
    EXPECT_TRUE(allclose(r.outputs[0], want, 1e-5, 1e-6)) << i;
  }
  EXPECT_GT(max_rows, 3);  // requests met in a batch
  EXPECT_LE(max_rows, 16);
  const std::string text = reg.render();
  EXPECT_NE(text.find("ember_batch_size_count{model=\"mlp\",version=\"1\"}"), std::string::npos);
  EXPECT_NE(mv->check_inputs({randn({2, 5})}).find("input \"x\" must be FP32[-1, 6] (-1: any batch size), got FP32[2, 5]"),
            std::string::npos);
  EXPECT_NE(mv->check_inputs({randn({2, 6}).to(kFloat64)}).find("got FP64[2, 6]"), std::string::npos);
  EXPECT_NE(mv->check_inputs({}).find("takes 1 input(s), got 0"), std::string::npos);
}

TEST(ServeBatcher, FullQueueRefusesAndExpiredRequestsTimeOut) {
  SavedMlp m;
  Registry reg;
  ModelConfig cfg;
  cfg.queue_capacity = 2;
  cfg.max_batch_size = 1;
  auto mv = std::make_shared<ModelVersion>("mlp", "1", m.path, cfg, reg);
  mv->drain();  // no workers: nothing leaves the queue
  std::atomic<int> refused{0};
  mv->submit({randn({1, 6})}, Clock::now(), [&](InferResult r) {
    EXPECT_EQ(r.status, 503);
    EXPECT_NE(r.error.find("shutting down"), std::string::npos) << r.error;
    refused++;
  });
  EXPECT_EQ(refused.load(), 1);

  auto live = std::make_shared<ModelVersion>("mlp", "2", m.path, cfg, reg);
  // An already-expired deadline: answered 504 without running.
  std::promise<InferResult> p;
  live->submit({randn({1, 6})}, Clock::now() - std::chrono::milliseconds(1),
               [&](InferResult r) { p.set_value(std::move(r)); });
  InferResult r = p.get_future().get();
  EXPECT_EQ(r.status, 504);
  EXPECT_NE(r.error.find("in the queue of model mlp version 2"), std::string::npos) << r.error;
}

TEST(ServeRepository, RoutesByWeightAndStickyKey) {
  SavedMlp m;
  Registry reg;
  Repository repo("", {}, {}, reg);
  repo.register_version("mlp", "1", m.path);
  repo.register_version("mlp", "10", m.path);
  repo.register_version("mlp", "2", m.path);
  std::string why;
  EXPECT_EQ(repo.resolve("mlp", "", "", why)->version(), "10");  // versions compare as numbers
  repo.set_default("mlp", "2");
  EXPECT_EQ(repo.resolve("mlp", "", "", why)->version(), "2");
  repo.set_traffic("mlp", {{"1", 75}, {"2", 25}});
  int ones = 0;
  for (int i = 0; i < 4000; ++i) ones += repo.resolve("mlp", "", "", why)->version() == "1";
  EXPECT_NEAR(ones / 4000.0, 0.75, 0.03);
  const std::string pinned = repo.resolve("mlp", "", "user-42", why)->version();
  for (int i = 0; i < 50; ++i) EXPECT_EQ(repo.resolve("mlp", "", "user-42", why)->version(), pinned);
  EXPECT_EQ(repo.resolve("nope", "", "", why), nullptr);
  EXPECT_NE(why.find("no model named \"nope\" (loaded: mlp)"), std::string::npos) << why;
  EXPECT_EQ(repo.resolve("mlp", "7", "", why), nullptr);
  EXPECT_NE(why.find("has no version \"7\" (loaded: 1, 2, 10)"), std::string::npos) << why;
  EXPECT_NE(error_of([&] { repo.set_traffic("mlp", {{"9", 1}}); }).find("version \"9\""), std::string::npos);
  EXPECT_NE(error_of([&] { repo.register_version("../x", "1", m.path); }).find("model name \"../x\" must be"),
            std::string::npos);
  EXPECT_TRUE(repo.unregister("mlp", "1"));
  EXPECT_FALSE(repo.unregister("mlp", "1"));
}

}  // namespace serve_test
