// SyncLane: cached all-gathers on synchronous Gloo pairs, Note [Sync lane] in gloo_sync_lane.h.

#include "ember/distributed/gloo_sync_lane.h"

#include <gloo/rendezvous/store.h>
#include <gloo/transport/pair.h>

#include <cstring>

#include "ember/core/check.h"

namespace ember::distributed {

SyncLane::SyncLane(gloo::rendezvous::Store& store, std::shared_ptr<gloo::transport::Device> device, int rank,
                   int size, std::chrono::milliseconds timeout, size_t record_bytes)
    : size_(size) {
  context_ = std::make_shared<gloo::rendezvous::Context>(rank, size);
  context_->setTimeout(timeout);
  context_->connectFullMesh(store, device);
  for (int r = 0; r < size; ++r) {
    if (r != rank) context_->getPair(r)->setSync(/*enable=*/true, /*busyPoll=*/false);
  }
  records_ = make_entry(record_bytes);
}

SyncLane::Entry SyncLane::make_entry(size_t bytes) {
  EMBER_CHECK(bytes > 0 && bytes <= kMaxBytes, "[SyncLane] ", bytes, " bytes is outside 1 .. ", kMaxBytes);
  Entry e;
  e.bytes = bytes;
  e.input.resize(bytes);
  e.output.resize(bytes * static_cast<size_t>(size_));
  const std::vector<const uint8_t*> inputs = {e.input.data()};
  e.algorithm =
      std::make_unique<gloo::AllgatherRing<uint8_t>>(context_, inputs, e.output.data(), static_cast<int>(bytes));
  return e;
}

const uint8_t* SyncLane::all_gather(const void* input, size_t bytes) {
  Entry* e = nullptr;
  if (bytes == records_.bytes) {
    e = &records_;
  } else {
    auto it = entries_.begin();
    while (it != entries_.end() && it->bytes != bytes) ++it;
    if (it == entries_.end()) {
      entries_.push_front(make_entry(bytes));
      if (entries_.size() > kMaxEntries) entries_.pop_back();
    } else if (it != entries_.begin()) {
      entries_.splice(entries_.begin(), entries_, it);
    }
    e = &entries_.front();
  }
  std::memcpy(e->input.data(), input, bytes);
  e->algorithm->run();
  return e->output.data();
}

}  // namespace ember::distributed
