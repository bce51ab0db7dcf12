#pragma once
// Internal: write a file so that readers see either the old contents or the complete new
// ones, never a mix, even if the process dies mid-write (Note [Atomic saves] in
// atomic_file.cpp). Used by ember::save.

#include <cstddef>
#include <cstdint>
#include <string>

namespace ember::detail {

class AtomicFile {
 public:
  // Creates a temporary ".<name>.ember-tmp.<host>.<pid>.<n>" in path's directory.
  explicit AtomicFile(std::string path);
  // Removes the temporary unless commit() succeeded.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Appends n bytes (retrying short writes and EINTR).
  void write(const void* data, size_t n);
  // Overwrites n bytes at offset (already written).
  void write_at(uint64_t offset, const void* data, size_t n);
  // fsyncs and closes the temporary (commit() does it if not done yet).
  void sync();
  // Renames the synced temporary over the target and fsyncs the directory, then removes
  // temporaries for the same target left by processes of this host that no longer exist.
  void commit();

  uint64_t bytes_written() const { return written_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  [[noreturn]] void fail(const char* what, int err);
  void close_fd();

  std::string path_;
  std::string dir_;
  std::string name_;
  std::string temp_path_;
  int fd_ = -1;
  uint64_t written_ = 0;
  bool synced_ = false;
  bool committed_ = false;
};

// The name prefix of every temporary for path's file name, e.g. ".ckpt.safetensors.ember-tmp.".
std::string temp_file_prefix(const std::string& file_name);

}  // namespace ember::detail
