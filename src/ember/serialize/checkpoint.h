#pragma once
// Checkpoints: ember::save / ember::load write and read a Value (nested dicts, lists,
// numbers, strings and tensors) as one safetensors file. Saves are atomic (a crash
// mid-save leaves the previous file intact) and loads verify a checksum, so a damaged
// file is refused with an error that says what is wrong. See docs/serialize.md.
//
//   ember::save(model->state_dict(), "model.safetensors");
//   model->load_state_dict(ember::load("model.safetensors").to_tensor_dict());

#include <cstdint>
#include <functional>
#include <string>

#include "ember/core/ordered_dict.h"
#include "ember/core/tensor.h"
#include "ember/serialize/value.h"

namespace ember {

// Writes value to path as a safetensors file: tensors under their flattened paths
// ("model/fc1.weight"), everything else as JSON in the header's __metadata__.
// Atomic: writes a temporary next to path, fsyncs it, renames it over path and fsyncs
// the directory. Throws ember::Error (with the path and the system's reason) on failure,
// leaving any previous file at path untouched.
void save(const Value& value, const std::string& path);
// A dict of tensors (a state_dict): the tensor names in the file are exactly its keys.
void save(const OrderedDict<std::string, Tensor>& tensors, const std::string& path);

// Reads a file written by save(), or any safetensors file (which loads as a dict of
// tensors in header order). Throws ember::Error naming the problem for a missing,
// truncated, corrupted (checksum mismatch) or malformed file; never a partial result.
Value load(const std::string& path);

// The checkpoint format this build writes and the newest it reads.
inline constexpr int kCheckpointFormatVersion = 1;

namespace detail {
// For crash tests only: called as the save progresses with the stage ("data" after each
// chunk written, "synced" after fsync, before the rename) and the bytes written so far.
using SaveProgressHook = std::function<void(const char* stage, uint64_t bytes_written)>;
void set_save_progress_hook(SaveProgressHook hook);
}  // namespace detail

}  // namespace ember
