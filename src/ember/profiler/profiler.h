#pragma once
// ember::profiler: where a program's time and memory go (docs/profiler.md), in the spirit
// of torch.profiler: every op call, autograd backward node, DataLoader wait, optimizer
// step and user range (EMBER_RECORD) with its thread, start and end; tables of totals by
// op (key_averages), a Chrome trace that Perfetto and chrome://tracing open, and a memory
// timeline.
//
//   profiler::Profile prof({.record_shapes = true});
//   train_step();
//   prof.stop();
//   std::cout << prof.table("self_cpu_time_total", 10);
//   prof.export_chrome_trace("trace.json");

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/profiler/record.h"

namespace ember::profiler {

// torch.profiler.schedule: after `skip_first` steps, cycles of `wait` steps not recorded,
// `warmup` steps recorded and dropped, `active` steps kept; `repeat` cycles (0: forever).
// The default records everything from start to stop.
struct Schedule {
  int skip_first = 0;
  int wait = 0;
  int warmup = 0;
  int active = 0;  // 0: no schedule, record from start to stop
  int repeat = 0;
};

struct ProfileOptions {
  bool record_shapes = false;  // every op's input shapes and dtypes (grouping by shape)
  bool with_flops = true;      // FLOPs of matmul/linear/conv/bmm
  bool profile_memory = false; // allocated bytes after every op: the memory timeline
  Schedule schedule;
};

// Note [Memory by category]: allocated bytes split into what holds them. parameters are
// the registered parameters of every live nn::Module and the parameters of every live
// optimizer (so a model run without an optimizer has its parameters counted too);
// gradients are those parameters' .grad; optimizer_state the optimizers' state tensors
// (each storage counted once across the three). activations are the tensors saved for
// backward, as the GraphRetention guard counts them (parameters excluded, a tensor saved
// by two ops counted twice, so capped at what the first three leave; 0 when that guard is
// off); other is the rest (inputs, outputs and temporaries of the ops, and parameters made
// outside any module or optimizer). The five add up to the allocated bytes. Categories are
// read only at the end of events on the thread that created the Profile, the thread that
// runs the training loop, so they never race with an optimizer step or a module being
// built; elsewhere known = false.
struct MemoryByCategory {
  bool known = false;
  int64_t parameters = 0, gradients = 0, optimizer_state = 0, activations = 0, other = 0;
};

struct Event {
  std::string name;
  EventKind kind = EventKind::Op;
  int64_t start_ns = 0, end_ns = 0;  // since the profile started
  int64_t self_ns = 0;               // minus the time of events nested in it
  uint32_t thread = 0;               // 0, 1, ... in order of first appearance
  int depth = 0;                     // nesting level on its thread
  int step = -1;                     // the schedule step it belongs to (-1: no schedule)
  // With record_shapes, the op's tensor inputs as JSON arrays (Note [Input shapes and
  // dtypes] in profiler.cpp): "[[2, 3], []]" and "[\"float32\", \"int64\"]"; empty for
  // events without inputs (user ranges, backward nodes, optimizer steps).
  std::string shapes, dtypes;
  int64_t flops = 0;
  int64_t memory_bytes = -1;         // allocated bytes at its end (profile_memory)
  MemoryByCategory categories;       // their categories (profile_memory, ops on the profiling thread)
};

struct KeyAverage {
  std::string name;
  std::string shapes;  // when grouped by shape
  EventKind kind = EventKind::Op;
  int64_t count = 0;
  int64_t self_ns = 0, total_ns = 0;
  int64_t flops = 0;
};

struct MemorySample {
  int64_t time_ns = 0;
  int64_t allocated_bytes = 0;
  std::string after;  // the event that ended there
  MemoryByCategory categories;
};

// Memory allocated during one schedule step and still held when it ended (profile_memory):
// what a training loop keeps by mistake (a loss kept with its graph, a growing cache).
struct LeakReport {
  int step = 0;
  int64_t bytes = 0;
  int64_t blocks = 0;
  std::vector<std::pair<std::string, int64_t>> by_op;  // bytes by the op that allocated them, largest first
};

class Profile {
 public:
  // Starts recording (in the first active step, with a schedule). One profile at a time.
  explicit Profile(ProfileOptions options = {});
  ~Profile();
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;

  // Ends recording; idempotent. The results below are complete after stop().
  void stop();
  // Marks the end of a training step (advances the schedule).
  void step();
  int current_step() const;

  // Every kept event, ordered by thread then start.
  std::vector<Event> events() const;
  std::vector<KeyAverage> key_averages(bool group_by_input_shape = false) const;
  // torch's table: sort_by "self_cpu_time_total" (default), "cpu_time_total", "count" or
  // "flops"; row_limit rows (0: all).
  std::string table(const std::string& sort_by = "self_cpu_time_total", int row_limit = 20,
                    bool group_by_input_shape = false) const;
  // Trace Event Format JSON ("X" events with µs times, thread names, memory counters).
  void export_chrome_trace(const std::string& path) const;
  std::string chrome_trace() const;
  std::vector<MemorySample> memory_timeline() const;
  // One report per step() call made while profiling memory.
  std::vector<LeakReport> leaks() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace ember::profiler
