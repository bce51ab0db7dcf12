#pragma once
// Internal to the Gloo process group (process_group_gloo.cpp); includes Gloo's headers, so
// only files that link Gloo include it.
//
// Note [Sync lane]: small collectives over Gloo's newer API (gloo::allgather(options),
// gloo::allreduce(options)) are slow on a busy machine: every call makes fresh unbound
// buffers, every message waits for a "ready to receive" notice from its receiver, and every
// message passes through the device's event-loop thread, which hands it to the waiting
// thread (two thread wake-ups per message, each a scheduling delay when the cores are
// busy; the loop thread also spins on a pair another thread holds). On the 2-core machine,
// 2 ranks, load ~9: a 1 KB all-reduce took 1000-3000 us that way (torch's gloo backend,
// which uses the same API, 200-1800 us).
//
// The sync lane is a second Gloo context of the group whose pairs are in synchronous mode
// (Pair::setSync: the sockets leave the event loop; the thread that waits reads its socket
// itself, blocking in recv(), so a message costs one wake-up), running the older
// gloo::AllgatherRing, whose buffers are bound to slots once and reused: an all-gather of a
// given size is built once and cached. The same 1 KB exchange takes 30-50 us there.
//
// Rules that keep it correct:
// - Every rank must create cached algorithms in the same order (each takes the context's
//   next slots). The fingerprint record exchange has one fixed size for every collective
//   (made first, at construction); data exchanges are made only after the fingerprints
//   agreed, so every rank asks for the same sizes in the same order. The cache evicts the
//   least recently used entry beyond kMaxEntries, the same choice on every rank.
// - Synchronous sends block until the kernel took the bytes. Two ranks that send to each
//   other at once must both fit in the socket buffers, so the lane carries at most
//   kMaxBytes per rank (Gloo sizes SO_SNDBUF to the message; the default wmem_max,
//   208 KB, allows 416 KB, plus the receiver's buffer).
// - A blocking read gives up after the group's timeout (the socket's SO_RCVTIMEO): Gloo
//   throws "Read timeout", the group's diagnosis names the missing ranks.
// - An all-reduce over the lane all-gathers the inputs and reduces the copies on each
//   rank in rank order, so every rank gets the same bits (a ring that reduces in a
//   different order on each rank would let DDP replicas drift apart).

#include <gloo/allgather_ring.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/device.h>

#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <vector>

namespace gloo::rendezvous {
class Store;
}

namespace ember::distributed {

class SyncLane {
 public:
  static constexpr size_t kMaxBytes = 256 * 1024;
  static constexpr size_t kMaxEntries = 8;

  // Connects a full mesh of synchronous pairs through `store` (give it a prefix of its
  // own) and builds the fixed-size exchange of `record_bytes` per rank.
  SyncLane(gloo::rendezvous::Store& store, std::shared_ptr<gloo::transport::Device> device, int rank,
           int size, std::chrono::milliseconds timeout, size_t record_bytes);
  SyncLane(const SyncLane&) = delete;
  SyncLane& operator=(const SyncLane&) = delete;

  // All-gathers `bytes` bytes from every rank (bytes <= kMaxBytes); returns the size * bytes
  // result, rank 0's first, valid until the next call. Every rank must pass the same size.
  const uint8_t* all_gather(const void* input, size_t bytes);

 private:
  struct Entry {
    size_t bytes = 0;
    std::vector<uint8_t> input;
    std::vector<uint8_t> output;
    std::unique_ptr<gloo::AllgatherRing<uint8_t>> algorithm;
  };
  Entry make_entry(size_t bytes);

  std::shared_ptr<gloo::rendezvous::Context> context_;
  int size_;
  Entry records_;              // the fixed-size fingerprint exchange, built first
  std::list<Entry> entries_;  // data exchanges, most recently used first
};

}  // namespace ember::distributed
