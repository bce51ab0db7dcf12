#pragma once
// A training progress bar: label, step/total, named values (loss, ...), samples/s, ETA.
//
//   ed::ProgressBar bar(loader.size(), "epoch 1/2", /*samples_per_step=*/64);
//   for (...) bar.update(step + 1, {{"loss", loss}});
//   bar.close();
//
// On a terminal it redraws one line with \r (at most 10 times a second); otherwise (a log
// file, CI) it prints a plain line every 10% of the steps or every print_interval seconds,
// whichever comes first. close() prints the final line.

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace ember::data {

class ProgressBar {
 public:
  using Values = std::vector<std::pair<std::string, double>>;
  // Writes to stdout; terminal mode when stdout is a terminal (isatty).
  explicit ProgressBar(int64_t total, std::string label = "", int64_t samples_per_step = 0);
  // Writes to `out` in the given mode; `clock` returns seconds (default: steady clock).
  ProgressBar(int64_t total, std::string label, int64_t samples_per_step, std::ostream& out, bool terminal,
              std::function<double()> clock = {});
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // `step` steps are done (1..total); values are shown as "name value".
  void update(int64_t step, const Values& values = {});
  // Prints the final line (idempotent; the destructor calls it).
  void close(const Values& values = {});
  // Non-terminal mode: the longest time between two lines (default 10 s).
  void set_print_interval(double seconds) { interval_ = seconds; }
  void set_samples_per_step(int64_t n) { samples_per_step_ = n; }

  // The line update() would print now, without the \r decoration.
  std::string format_line(bool final) const;

 private:
  void emit(bool final);
  double now() const;

  int64_t total_;
  std::string label_;
  int64_t samples_per_step_;
  std::ostream* out_;
  bool terminal_;
  std::function<double()> clock_;
  double start_ = 0, last_print_ = 0;
  double interval_ = 10.0;
  int64_t step_ = 0;
  int64_t next_decile_ = 1;  // non-terminal: next 10% boundary to report
  Values values_;
  size_t last_width_ = 0;
  bool closed_ = false;
  bool printed_ = false;
};

}  // namespace ember::data
