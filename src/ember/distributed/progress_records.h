#pragma once
// Internal to the process groups (process_group_gloo.cpp, process_group_mpi.cpp): which
// collective each rank of a group has reached, kept in a store, so that a collective that
// times out can name the ranks that never arrived (Note [Progress records]).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "ember/distributed/collective_common.h"
#include "ember/distributed/store.h"

namespace ember::distributed::detail {

// Note [Progress records]: which collective this rank has reached goes to the group's
// store as "progress/<group rank>" = "<seq>|<description>". A write per collective would
// wake the store's thread on its host (rank 0) every time, so a publisher thread writes
// the latest one at most every kPublishPeriod instead, without waiting for an answer;
// arrivals() waits twice that long before reading, so every rank that reached the failed
// collective has published it by then.
class ProgressRecords {
 public:
  static constexpr std::chrono::milliseconds kPublishPeriod{50};

  // group: the group whose ranks these are (it must outlive this object); store: its own
  // store (keys "progress/<rank>"), or null when it has none, `unavailable` then saying
  // why. Publishes nothing for a group of one.
  ProgressRecords(const ProcessGroup& group, std::shared_ptr<Store> store, std::string unavailable = "");
  ~ProgressRecords();
  ProgressRecords(const ProgressRecords&) = delete;
  ProgressRecords& operator=(const ProgressRecords&) = delete;

  // This rank started collective fp (the publisher records it later).
  void started(const Fingerprint& fp);

  // After collective `seq` failed on this rank, who reached it according to every rank's
  // record: ": rank 2 never arrived (its last recorded collective was #1 all_reduce(f32[16],
  // SUM)); ranks 0, 1 reached it", or `if_all_arrived` when every rank did, or why the
  // records cannot be read.
  std::string arrivals(uint64_t seq, const std::string& if_all_arrived);

 private:
  void publish_loop();

  const ProcessGroup& group_;
  std::shared_ptr<Store> store_;
  std::string unavailable_;
  std::thread publisher_;
  std::mutex mu_;
  std::condition_variable cv_;
  Fingerprint started_;  // seq 0: none yet
  bool stop_ = false;
};

}  // namespace ember::distributed::detail
