#include "ember/distributed/progress_records.h"

#include <cstdlib>
#include <sstream>
#include <vector>

namespace ember::distributed::detail {

ProgressRecords::ProgressRecords(const ProcessGroup& group, std::shared_ptr<Store> store, std::string unavailable)
    : group_(group), store_(std::move(store)), unavailable_(std::move(unavailable)) {
  if (store_ && group_.size() > 1) publisher_ = std::thread([this] { publish_loop(); });
}

ProgressRecords::~ProgressRecords() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (publisher_.joinable()) publisher_.join();
}

void ProgressRecords::started(const Fingerprint& fp) {
  std::lock_guard<std::mutex> l(mu_);
  started_ = fp;
}

void ProgressRecords::publish_loop() {
  uint64_t published = 0;
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    cv_.wait_for(l, kPublishPeriod);
    if (started_.seq == published) continue;
    const Fingerprint fp = started_;
    l.unlock();
    const std::string rec = std::to_string(fp.seq) + "|" + describe(fp, group_);
    try {
      store_->set_nowait("progress/" + std::to_string(group_.rank()), Bytes(rec.begin(), rec.end()));
    } catch (...) {
      // The store is gone (its host exited): arrivals() will say so.
    }
    published = fp.seq;
    l.lock();
  }
}

std::string ProgressRecords::arrivals(uint64_t seq, const std::string& if_all_arrived) {
  if (!store_) {
    return ": some rank of the group did not reach it, or is stuck before it (the progress records that would name "
           "it are unavailable: " +
           unavailable_ + ")";
  }
  std::vector<int> missing, arrived;
  std::vector<std::string> last;
  std::this_thread::sleep_for(2 * kPublishPeriod);  // Note [Progress records]
  try {
    for (int r = 0; r < group_.size(); ++r) {
      const std::string key = "progress/" + std::to_string(r);
      std::string rec;
      if (store_->check({key})) rec = store_->get_string(key);
      const uint64_t s = rec.empty() ? 0 : std::strtoull(rec.c_str(), nullptr, 10);
      if (s >= seq) {
        arrived.push_back(group_.global_rank(r));
      } else {
        missing.push_back(group_.global_rank(r));
        const auto bar = rec.find('|');
        last.push_back(rec.empty() ? "no collective of it was recorded"
                                   : "its last recorded collective was #" + rec.substr(0, bar) + " " +
                                         (bar == std::string::npos ? "" : rec.substr(bar + 1)));
      }
    }
  } catch (const std::exception&) {
    return ": the store is unreachable too (the process hosting it, usually rank 0, may have exited)";
  }
  if (missing.empty()) return if_all_arrived;
  std::ostringstream os;
  os << ": " << rank_list(missing) << " never arrived (";
  for (size_t i = 0; i < missing.size(); ++i)
    os << (i ? "; " : "") << (missing.size() > 1 ? "rank " + std::to_string(missing[i]) + ": " : "") << last[i];
  os << "); " << rank_list(arrived) << " reached it";
  return os.str();
}

}  // namespace ember::distributed::detail
