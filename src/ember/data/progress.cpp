#include "ember/data/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace ember::data {

namespace {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  }
  return buf;
}

std::string format_value(double v) {
  char buf[32];
  if (v != 0 && (std::abs(v) >= 1e5 || std::abs(v) < 1e-3)) {
    std::snprintf(buf, sizeof buf, "%.3e", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.4f", v);
  }
  return buf;
}

}  // namespace

ProgressBar::ProgressBar(int64_t total, std::string label, int64_t samples_per_step)
    : ProgressBar(total, std::move(label), samples_per_step, std::cout, isatty(STDOUT_FILENO) != 0) {}

ProgressBar::ProgressBar(int64_t total, std::string label, int64_t samples_per_step, std::ostream& out, bool terminal,
                         std::function<double()> clock)
    : total_(std::max<int64_t>(total, 0)),
      label_(std::move(label)),
      samples_per_step_(samples_per_step),
      out_(&out),
      terminal_(terminal),
      clock_(std::move(clock)) {
  start_ = last_print_ = now();
}

ProgressBar::~ProgressBar() {
  try {
    close();
  } catch (...) {  // a destructor must not throw; losing the last line is the lesser harm
  }
}

double ProgressBar::now() const {
  if (clock_) return clock_();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string ProgressBar::format_line(bool final) const {
  std::string line = label_;
  if (!line.empty()) line += " ";
  const double frac = total_ > 0 ? static_cast<double>(step_) / static_cast<double>(total_) : 0.0;
  if (terminal_) {
    constexpr int kWidth = 20;
    const int filled = std::clamp(static_cast<int>(frac * kWidth), 0, kWidth);
    // Built with append: GCC 12 warns falsely (-Wrestrict) on chained string operator+.
    line.push_back('[');
    line.append(static_cast<size_t>(filled), '=');
    if (filled < kWidth) {
      line.push_back('>');
      line.append(static_cast<size_t>(kWidth - filled - 1), ' ');
    }
    line.append("] ");
  }
  line.append(std::to_string(step_)).append("/").append(std::to_string(total_));
  if (!terminal_) line.append(" (").append(std::to_string(static_cast<int>(frac * 100.0))).append("%)");
  for (const auto& [name, v] : values_) line.append(" ").append(name).append(" ").append(format_value(v));
  const double elapsed = now() - start_;
  if (samples_per_step_ > 0 && step_ > 0 && elapsed > 0) {
    char buf[48];
    std::snprintf(buf, sizeof buf, " | %.0f samples/s",
                  static_cast<double>(step_) * static_cast<double>(samples_per_step_) / elapsed);
    line += buf;
  }
  if (final) {
    line.append(" | ").append(format_duration(elapsed));
  } else if (step_ > 0) {
    const double eta = elapsed / static_cast<double>(step_) * static_cast<double>(total_ - step_);
    line.append(" | ETA ").append(format_duration(eta));
  }
  return line;
}

void ProgressBar::emit(bool final) {
  const std::string line = format_line(final);
  if (terminal_) {
    // Pad with spaces to wipe what is left of a longer previous line.
    std::string padded = line;
    if (padded.size() < last_width_) padded += std::string(last_width_ - padded.size(), ' ');
    *out_ << '\r' << padded;
    if (final) *out_ << '\n';
    last_width_ = line.size();
  } else {
    *out_ << line << '\n';
  }
  out_->flush();
  last_print_ = now();
  printed_ = true;
}

void ProgressBar::update(int64_t step, const Values& values) {
  if (closed_) return;
  step_ = std::clamp<int64_t>(step, 0, total_ > 0 ? total_ : step);
  if (!values.empty()) values_ = values;
  const double t = now();
  if (terminal_) {
    if (t - last_print_ >= 0.1 || !printed_) emit(false);
    return;
  }
  bool crossed = false;
  while (total_ > 0 && next_decile_ <= 10 && step_ * 10 >= next_decile_ * total_) {
    crossed = true;
    ++next_decile_;
  }
  // The 100% line is close()'s job.
  if (step_ >= total_ && total_ > 0) return;
  if (crossed || t - last_print_ >= interval_) emit(false);
}

void ProgressBar::close(const Values& values) {
  if (closed_) return;
  if (!values.empty()) values_ = values;
  emit(true);
  closed_ = true;
}

}  // namespace ember::data
