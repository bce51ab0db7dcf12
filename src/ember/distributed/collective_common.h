#pragma once
// Internal to the process groups (process_group_gloo.cpp, process_group_mpi.cpp): what
// every backend shares of Note [Hang-proof collectives] in process_group.h -- the
// fingerprint a rank sends before a collective, the comparison of every rank's
// fingerprints and its error message -- and the argument checks, work handles and
// contiguous buffers the collectives use. No transport here.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/distributed/process_group.h"
#include "ember/ops/creation.h"

namespace ember::distributed::detail {

using std::chrono::milliseconds;

// ---------------------------------------------------------------- fingerprints

enum class Coll : uint8_t {
  AllReduce = 1,
  Broadcast,
  Reduce,
  AllGather,
  ReduceScatter,
  Gather,
  Scatter,
  AllToAll,
  Barrier,
};

inline const char* coll_name(Coll c) {
  switch (c) {
    case Coll::AllReduce:
      return "all_reduce";
    case Coll::Broadcast:
      return "broadcast";
    case Coll::Reduce:
      return "reduce";
    case Coll::AllGather:
      return "all_gather";
    case Coll::ReduceScatter:
      return "reduce_scatter";
    case Coll::Gather:
      return "gather";
    case Coll::Scatter:
      return "scatter";
    case Coll::AllToAll:
      return "all_to_all";
    case Coll::Barrier:
      return "barrier";
  }
  return "?";
}

constexpr int kMaxFpDims = 8;

// What every rank sends before a collective; plain bytes, the same layout on every rank
// (all ranks run the same build on the same kind of machine).
struct Fingerprint {
  uint64_t seq = 0;
  int64_t numel = 0;
  int64_t shape[kMaxFpDims] = {};
  int32_t root = -1;
  uint8_t coll = 0;
  uint8_t reduce = 0xff;  // 0xff: none
  int8_t dtype = -1;      // -1: no tensor
  uint8_t ndim = 0;
  bool operator==(const Fingerprint& o) const { return std::memcmp(this, &o, sizeof(*this)) == 0; }
};
static_assert(sizeof(Fingerprint) == 88);

inline std::string_view short_dtype(DType t) {
  switch (t) {
    case DType::UInt8:
      return "u8";
    case DType::Int8:
      return "i8";
    case DType::Int16:
      return "i16";
    case DType::Int32:
      return "i32";
    case DType::Int64:
      return "i64";
    case DType::Float16:
      return "f16";
    case DType::Float32:
      return "f32";
    case DType::Float64:
      return "f64";
    case DType::Bool:
      return "bool";
    case DType::BFloat16:
      return "bf16";
    default:
      return "?";
  }
}

// "all_reduce(f32[1024], SUM)", "broadcast(f32[2, 3], root=0)", "barrier()".
inline std::string describe(const Fingerprint& f, const ProcessGroup& pg) {
  std::ostringstream os;
  os << coll_name(static_cast<Coll>(f.coll)) << "(";
  bool first = true;
  if (f.dtype >= 0) {
    os << short_dtype(static_cast<DType>(f.dtype)) << "[";
    if (f.ndim <= kMaxFpDims) {
      for (int i = 0; i < f.ndim; ++i) os << (i ? ", " : "") << f.shape[i];
    } else {
      os << f.numel << " elements in " << int(f.ndim) << " dims";
    }
    os << "]";
    first = false;
  }
  if (f.reduce != 0xff) {
    os << (first ? "" : ", ") << reduce_op_name(static_cast<ReduceOp>(f.reduce));
    first = false;
  }
  if (f.root >= 0) os << (first ? "" : ", ") << "root=" << pg.global_rank(f.root);
  os << ")";
  return os.str();
}

inline std::string rank_list(const std::vector<int>& ranks) {
  std::ostringstream os;
  os << (ranks.size() == 1 ? "rank " : "ranks ");
  for (size_t i = 0; i < ranks.size(); ++i) os << (i ? ", " : "") << ranks[i];
  return os.str();
}

// ---------------------------------------------------------------- work handles

class WorkImpl : public Work {
 public:
  // run_inline: offered the chance to run the operation on the waiting thread
  // (Note [One worker per group]); returns whether it did.
  WorkImpl(std::string what, std::function<bool(WorkImpl*)> run_inline)
      : what_(std::move(what)), run_inline_(std::move(run_inline)) {}
  bool is_completed() const override {
    std::lock_guard<std::mutex> l(mu_);
    return done_;
  }
  bool is_success() const override {
    std::lock_guard<std::mutex> l(mu_);
    return done_ && !error_;
  }
  std::exception_ptr exception() const override {
    std::lock_guard<std::mutex> l(mu_);
    return error_;
  }
  void wait(milliseconds timeout) override {
    // Only an unbounded wait may run the operation itself (which ignores the limit).
    if (timeout == milliseconds::max() && run_inline_ && !is_completed()) run_inline_(this);
    std::unique_lock<std::mutex> l(mu_);
    if (timeout == milliseconds::max()) {
      cv_.wait(l, [&] { return done_; });
    } else if (!cv_.wait_for(l, timeout, [&] { return done_; })) {
      EMBER_ERROR("[wait] ", what_, " did not complete within ", timeout.count(), " ms");
    }
    if (error_) std::rethrow_exception(error_);
  }
  void finish(std::exception_ptr e) {
    {
      std::lock_guard<std::mutex> l(mu_);
      done_ = true;
      error_ = e;
    }
    cv_.notify_all();
  }

 private:
  std::string what_;
  std::function<bool(WorkImpl*)> run_inline_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

// ---------------------------------------------------------------- buffers

// The contiguous buffer a collective works on for tensor t, and how to put the result
// back: t itself when it is contiguous (and, for reductions, of a type Gloo reduces),
// otherwise a contiguous copy (float32 for 16-bit floats when reducing) written back
// after the collective.
struct Buffer {
  Tensor user;
  Tensor work;
  bool write_back = false;
  uint8_t* bytes() const { return static_cast<uint8_t*>(work.data_ptr()); }
  size_t nbytes() const { return work.nbytes(); }
  void finish() {
    if (write_back) {
      NoGradGuard ng;
      user.copy_(work);
    }
  }
};

inline Buffer make_buffer(const Tensor& t, bool reducing, bool copy_in = true) {
  Buffer b;
  b.user = t;
  NoGradGuard ng;
  const bool widen = reducing && (t.dtype() == kFloat16 || t.dtype() == kBFloat16);
  if (widen) {
    b.work = t.detach().to(kFloat32, /*copy=*/true).contiguous();
    b.write_back = true;
  } else if (t.is_contiguous()) {
    b.work = t.detach();
  } else {
    b.work = copy_in ? t.detach().contiguous() : empty(t.sizes(), t.options());
    b.write_back = true;
  }
  return b;
}

inline bool env_flag(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  const std::string s(v);
  return !(s == "0" || s == "false" || s == "FALSE" || s == "off" || s == "OFF" || s == "no");
}


// ---------------------------------------------------------------- shared checks

// The fingerprint of collective c on tensor t (sequence number left 0 for the caller).
inline Fingerprint make_fingerprint(Coll c, const Tensor& t, std::optional<ReduceOp> op, int root) {
  Fingerprint f;
  f.coll = static_cast<uint8_t>(c);
  f.dtype = static_cast<int8_t>(t.dtype());
  f.ndim = static_cast<uint8_t>(std::min<int64_t>(t.dim(), 255));
  f.numel = t.numel();
  for (int64_t i = 0; i < std::min<int64_t>(t.dim(), kMaxFpDims); ++i) f.shape[i] = t.size(i);
  if (op) f.reduce = static_cast<uint8_t>(*op);
  f.root = root;
  return f;
}

// all: every rank's fingerprint, in group rank order, as exchanged before collective
// `seq`. Returns when they agree; otherwise throws, on every rank alike, an ember::Error
// grouping the ranks by what they called.
inline void check_fingerprints(const std::string& op, uint64_t seq, const std::vector<Fingerprint>& all,
                               const ProcessGroup& pg) {
  const bool same = std::all_of(all.begin(), all.end(), [&](const Fingerprint& f) { return f == all[0]; });
  if (same) return;
  // Group the ranks by what they called, in rank order of first appearance.
  std::vector<std::pair<Fingerprint, std::vector<int>>> groups;
  for (size_t r = 0; r < all.size(); ++r) {
    const Fingerprint& f = all[r];
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == f; });
    if (it == groups.end()) {
      groups.push_back({f, {pg.global_rank(static_cast<int>(r))}});
    } else {
      it->second.push_back(pg.global_rank(static_cast<int>(r)));
    }
  }
  std::ostringstream os;
  os << "[" << op << "] collective #" << seq << " mismatch: ";
  for (size_t i = 0; i < groups.size(); ++i) {
    os << (i ? ", " : "") << rank_list(groups[i].second) << " called " << describe(groups[i].first, pg);
    if (groups[i].first.seq != seq) os << " as collective #" << groups[i].first.seq;
  }
  os << "; every rank of a group must issue the same collectives in the same order";
  throw Error(os.str());
}

// all: every rank's [input splits..., output splits...] (2 * size entries each, rank
// order) of an uneven all_to_all_single; throws unless what r sends to j is what j expects.
inline void check_split_agreement(const std::vector<int64_t>& all, const ProcessGroup& pg) {
  const size_t w = static_cast<size_t>(pg.size());
  for (size_t r = 0; r < w; ++r) {
    for (size_t j = 0; j < w; ++j) {
      const int64_t sent = all[r * 2 * w + j], expected = all[j * 2 * w + w + r];
      EMBER_CHECK(sent == expected, "[all_to_all_single] split sizes disagree: rank ",
                  pg.global_rank(static_cast<int>(r)), " sends ", sent, " rows to rank ",
                  pg.global_rank(static_cast<int>(j)), ", which expects ", expected,
                  " from it; input_split_sizes[j] on rank r must equal output_split_sizes[r] on rank j");
    }
  }
}

// Argument checks, on the caller's thread so that errors name the call.
inline void check_tensor_arg(const char* op, const Tensor& t, bool reducing, std::optional<ReduceOp> rop,
                             const std::string& backend) {
  EMBER_CHECK(t.defined(), "[", op, "] the tensor is undefined");
  EMBER_CHECK(t.is_cpu(), "[", op, "] the ", backend, " backend works on CPU tensors; got one on ", t.device());
  if (reducing) {
    EMBER_CHECK(t.dtype() != kBool, "[", op, "] reductions of bool tensors are not supported; convert to uint8");
    if (rop == ReduceOp::AVG) {
      EMBER_CHECK(t.is_floating_point(), "[", op, "] ReduceOp::AVG needs a floating-point tensor; got ", t.dtype(),
                  " (use SUM and divide, or convert)");
    }
  }
}

inline void check_root_arg(const char* op, int root, const char* what, int size) {
  EMBER_CHECK(root >= 0 && root < size, "[", op, "] ", what, " rank ", root, " is not in the group of size ", size);
}

inline void check_list_arg(const char* op, const char* name, const std::vector<Tensor>& list, const Tensor& like,
                           int size) {
  EMBER_CHECK(static_cast<int>(list.size()) == size, "[", op, "] ", name, " has ", list.size(),
              " tensors; it needs one per rank (", size, ")");
  for (size_t i = 0; i < list.size(); ++i) {
    const Tensor& t = list[i];
    EMBER_CHECK(t.defined() && t.dtype() == like.dtype() && t.sizes() == like.sizes(), "[", op, "] ", name, "[", i,
                "] is ", t.defined() ? std::string(short_dtype(t.dtype())) : std::string("undefined"),
                t.defined() ? t.sizes() : IntArrayRef{}, "; every entry must be ", short_dtype(like.dtype()),
                like.sizes(), " like the tensor it pairs with");
  }
}

// all_to_all_single's argument checks (after each tensor's own): the output's dtype and
// trailing sizes, and the split sizes, resolved (equal splits when none are given). Also
// whether the splits are uneven, in which case the ranks' first dims may differ.
struct AllToAllSplits {
  std::vector<int64_t> input, output;
  bool uneven = false;
};
inline AllToAllSplits check_all_to_all_single_args(const char* op, const Tensor& output, const Tensor& input,
                                                   const std::vector<int64_t>& output_splits,
                                                   const std::vector<int64_t>& input_splits, int size) {
  EMBER_CHECK(input.dim() >= 1 && output.dim() >= 1, "[", op, "] input and output need at least one dimension");
  EMBER_CHECK(output.dtype() == input.dtype() && IntArrayRef(output.sizes().data() + 1, output.sizes().size() - 1) ==
                                                     IntArrayRef(input.sizes().data() + 1, input.sizes().size() - 1),
              "[", op, "] the output (", short_dtype(output.dtype()), " ", output.sizes(),
              ") must have the input's dtype and sizes after dim 0 (", short_dtype(input.dtype()), " ", input.sizes(),
              ")");
  AllToAllSplits r;
  r.uneven = !output_splits.empty() || !input_splits.empty();
  auto resolve = [&](const std::vector<int64_t>& given, const Tensor& t, const char* name) {
    if (given.empty()) {
      EMBER_CHECK(t.size(0) % size == 0, "[", op, "] the ", name, "'s first dim (", t.size(0),
                  ") must divide evenly by world_size (", size, ") when no ", name, "_split_sizes are given");
      return std::vector<int64_t>(static_cast<size_t>(size), t.size(0) / size);
    }
    EMBER_CHECK(static_cast<int>(given.size()) == size, "[", op, "] ", name, "_split_sizes has ", given.size(),
                " entries; it needs one per rank (", size, ")");
    int64_t sum = 0;
    for (int64_t v : given) {
      EMBER_CHECK(v >= 0, "[", op, "] ", name, "_split_sizes has a negative entry (", v, ")");
      sum += v;
    }
    EMBER_CHECK(sum == t.size(0), "[", op, "] ", name, "_split_sizes sum to ", sum, " but the ", name,
                "'s first dim is ", t.size(0));
    return given;
  };
  r.input = resolve(input_splits, input, "input");
  r.output = resolve(output_splits, output, "output");
  if (!r.uneven) {
    EMBER_CHECK(output.sizes() == input.sizes(), "[", op, "] the output (", short_dtype(output.dtype()), " ",
                output.sizes(), ") must match the input (", short_dtype(input.dtype()), " ", input.sizes(), ")");
  }
  return r;
}

}  // namespace ember::distributed::detail
