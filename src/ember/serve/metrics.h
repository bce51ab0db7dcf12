#pragma once
// Prometheus metrics for ember-serve (docs/serve.md): counters, gauges and histograms
// with labels, rendered in the Prometheus text exposition format (version 0.0.4) at
// /metrics. Updating a metric is a few relaxed atomic operations; looking a labelled
// child up takes the family's lock, so hot paths keep the child pointer.
//
//   serve::Registry reg;
//   serve::Histogram& lat = reg.histogram("ember_request_duration_seconds", "Request latency",
//                                         {"model", "version"}, serve::latency_buckets())
//                               .with({"cnn", "1"});
//   lat.observe(0.0042);
//   std::string text = reg.render();

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ember::serve {

class Counter {
 public:
  void inc(double by = 1.0);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  void add(double by);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double v);
  const std::vector<double>& bounds() const { return bounds_; }
  // Cumulative counts per bound (the last is +Inf), the sum and the count.
  std::vector<uint64_t> cumulative() const;
  double sum() const { return sum_.load(std::memory_order_relaxed); }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  // The q-quantile (0..1) estimated from the buckets by linear interpolation, as
  // Prometheus' histogram_quantile does; 0 when empty.
  double quantile(double q) const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // one per bound, plus +Inf
  std::atomic<double> sum_{0.0};
  std::atomic<uint64_t> count_{0};
};

enum class MetricType { Counter, Gauge, Histogram };

// A metric name with its help text and label names; children by label values.
template <typename M>
class Family;

class FamilyBase {
 public:
  FamilyBase(std::string name, std::string help, std::vector<std::string> labels, MetricType type)
      : name_(std::move(name)), help_(std::move(help)), labels_(std::move(labels)), type_(type) {}
  virtual ~FamilyBase() = default;
  const std::string& name() const { return name_; }
  virtual void render(std::string& out) const = 0;
  // Forgets the children whose label `label` has value `value` (an unregistered model).
  virtual void remove_matching(const std::string& label, const std::string& value) = 0;

 protected:
  std::string name_, help_;
  std::vector<std::string> labels_;
  MetricType type_;
  mutable std::mutex mu_;
};

template <typename M>
class Family : public FamilyBase {
 public:
  using FamilyBase::FamilyBase;
  // The child with these label values (created on first use). The reference stays valid
  // until remove_matching drops it.
  M& with(const std::vector<std::string>& values);
  void render(std::string& out) const override;
  void remove_matching(const std::string& label, const std::string& value) override;
  std::vector<double> histogram_bounds;  // for Histogram families

 private:
  std::map<std::vector<std::string>, std::unique_ptr<M>> children_;
};

// Families by name: asking again for a name returns the family made first (its help,
// labels and buckets stay those of the first call).
class Registry {
 public:
  Family<Counter>& counter(const std::string& name, const std::string& help, std::vector<std::string> labels);
  Family<Gauge>& gauge(const std::string& name, const std::string& help, std::vector<std::string> labels);
  Family<Histogram>& histogram(const std::string& name, const std::string& help, std::vector<std::string> labels,
                               std::vector<double> bounds);
  std::string render() const;
  void remove_matching(const std::string& label, const std::string& value);

 private:
  FamilyBase* find_locked(const std::string& name) const;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<FamilyBase>> families_;
};

// Seconds: 100 µs .. 10 s.
std::vector<double> latency_buckets();
// 1, 2, 4, ... 1024.
std::vector<double> batch_size_buckets();
// Escapes a label value for the text format (backslash, quote, newline).
std::string escape_label(const std::string& v);

}  // namespace ember::serve
