#pragma once
// One served model version: its artifact, its dynamic batcher and worker threads, its
// metrics and its drift monitor (docs/serve.md).
//
// Note [Dynamic batching]: requests wait in a bounded queue. A worker takes the oldest
// request, then keeps taking requests while the batch stays within max_batch_size rows
// and the oldest has waited less than max_queue_delay_us; it concatenates the inputs
// along the dynamic batch dim (dim 0, the artifact's B), runs the graph once and splits
// the outputs back by row. Requests whose deadline passed while queued are answered 504
// without running. A full queue refuses at once (503 + Retry-After) instead of growing
// latency and memory without bound.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ember/jit/module.h"
#include "ember/serialize/value.h"
#include "ember/serve/metrics.h"

namespace ember::serve {

using Clock = std::chrono::steady_clock;

// Per-model settings: serve.json's "models" entries and <store>/<model>/config.json.
struct ModelConfig {
  int64_t max_batch_size = 32;      // rows per run; 1 disables batching
  int64_t max_queue_delay_us = 0;   // 0: natural batching (what queued while the last batch ran)
  int64_t queue_capacity = 256;     // queued requests before 503
  int workers = 1;
  int64_t timeout_ms = 5000;        // queued longer than this: 504
  std::string default_version;      // "" = the highest version
  std::vector<std::pair<std::string, double>> traffic;  // version -> weight (canary / A-B)
  std::string sticky_header;        // lower-case header name that pins a caller to a version
  std::string shadow_version;       // gets a copy of each request; its answer is only compared
};

// Parses a model's config object; unknown keys and wrong types throw ember::Error naming
// the key, where it came from (`where`) and the accepted keys.
ModelConfig parse_model_config(const Value& v, const std::string& where, ModelConfig base = {});
Value model_config_to_value(const ModelConfig& c);

// The outcome of one request.
struct InferResult {
  int status = 200;  // 200, 400 (bad input found while running), 500, 503, 504
  std::string error;
  std::vector<Tensor> outputs;
  int64_t batch_rows = 0;  // rows in the batch this request ran in
  double queue_seconds = 0, compute_seconds = 0;
};

struct TensorSpec {
  std::string name;
  DType dtype = kFloat32;
  std::vector<int64_t> shape;  // -1 = dynamic (the batch dim)
};

// Running statistics of the inputs a version has served, against the reference profile
// its artifact carries (jit::input_profile): population stability index over the
// reference's decile bins, and the shift of the mean and std in reference std units.
class DriftMonitor {
 public:
  explicit DriftMonitor(const Value& profile);  // profile may be None: no reference
  bool has_reference() const { return has_ref_; }
  void observe(const Tensor& input);
  Value report() const;  // {"count", "psi", "mean", "std", "mean_shift", "std_ratio", "channels": [...]}
  double psi() const;

 private:
  bool has_ref_ = false;
  double ref_mean_ = 0, ref_std_ = 1;
  std::vector<double> edges_, ref_fractions_, ch_ref_mean_, ch_ref_std_;
  mutable std::mutex mu_;
  uint64_t count_ = 0;  // values seen
  double sum_ = 0, sumsq_ = 0;
  std::vector<uint64_t> bins_;
  std::vector<double> ch_sum_, ch_sumsq_;
  uint64_t ch_count_ = 0;  // values per channel
};

class ModelVersion : public std::enable_shared_from_this<ModelVersion> {
 public:
  // Loads the artifact (throws ember::Error naming the file) and starts the workers.
  ModelVersion(std::string name, std::string version, std::string path, ModelConfig config, Registry& metrics);
  ~ModelVersion();
  ModelVersion(const ModelVersion&) = delete;
  ModelVersion& operator=(const ModelVersion&) = delete;

  const std::string& name() const { return name_; }
  const std::string& version() const { return version_; }
  const std::string& path() const { return path_; }
  const ModelConfig& config() const { return config_; }
  const jit::GraphModule& module() const { return module_; }
  const std::vector<TensorSpec>& inputs() const { return inputs_; }
  const std::vector<TensorSpec>& outputs() const { return outputs_; }
  bool batchable() const { return batchable_; }
  DriftMonitor& drift() { return drift_; }

  // Checks inputs against the specs: "" when fine, else a message naming the input and
  // the expected spec (the 400 body).
  std::string check_inputs(const std::vector<Tensor>& inputs) const;
  // Queues a request; `done` runs exactly once on a worker thread (or at once on this
  // thread for 503). `deadline` bounds the time spent queued.
  void submit(std::vector<Tensor> inputs, Clock::time_point deadline, std::function<void(InferResult)> done);
  // As submit, but a version that is shutting down (drained by a hot swap or an unload)
  // returns false without calling `done`, so the caller can route to its replacement.
  bool try_submit(std::vector<Tensor>& inputs, Clock::time_point deadline, std::function<void(InferResult)>& done);
  // Runs directly on the calling thread (shadow copies, tests).
  InferResult run_now(const std::vector<Tensor>& inputs);

  int64_t queue_length() const;
  int workers() const;
  // Changes the number of worker threads (management API).
  void scale(int workers);
  // Stops taking requests, answers everything queued, joins the workers.
  void drain();
  uint64_t worker_restarts() const { return restarts_.load(); }

 private:
  struct Job {
    std::vector<Tensor> inputs;
    int64_t rows = 1;
    Clock::time_point enqueued, deadline;
    std::function<void(InferResult)> done;
  };
  bool enqueue(std::vector<Tensor>& inputs, Clock::time_point deadline, std::function<void(InferResult)>& done,
               bool refuse_when_stopping);
  void worker_loop(int index);
  void run_batch(std::vector<Job>& batch);

  std::string name_, version_, path_;
  ModelConfig config_;
  jit::GraphModule module_;
  std::vector<TensorSpec> inputs_, outputs_;
  bool batchable_ = false;
  DriftMonitor drift_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  int target_workers_ = 0;
  std::vector<std::thread> threads_;
  std::atomic<uint64_t> restarts_{0};

  Gauge* queue_gauge_ = nullptr;
  Histogram* batch_hist_ = nullptr;
  Histogram* queue_hist_ = nullptr;
  Histogram* infer_hist_ = nullptr;
  Counter* restarts_counter_ = nullptr;
};

// The dtype names of KServe v2 ("FP32", "INT64", "BOOL", ...).
const char* kserve_dtype(DType t);
// Inverse; false for an unknown name.
bool parse_kserve_dtype(const std::string& s, DType& out);

}  // namespace ember::serve
