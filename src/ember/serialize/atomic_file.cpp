#include "ember/serialize/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <system_error>

#include "ember/core/check.h"

// Note [Atomic saves]: rename(2) within one directory replaces the target atomically,
// so a reader (or a restarted job) sees the old file or the new one, never a torn one.
// The new data must be on disk before the rename is (fsync the file first), and the
// rename must be on disk before we report success (fsync the directory after). A
// process killed mid-save leaves its temporary behind; its name carries the host and
// pid, so the next save attempt of the same target on this host (and again its commit)
// removes temporaries whose process is gone (a live writer's temporary is never touched).

namespace ember::detail {

namespace {

std::string errno_text(int err) { return std::system_category().message(err); }

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  std::string h(buf);
  for (char& c : h) {
    if (c == '/') c = '_';
  }
  return h;
}

std::atomic<uint64_t> g_temp_counter{0};

// Removes this host's temporaries for `name` in `dir` whose writer process has exited.
void remove_stale_temporaries(const std::string& dir, const std::string& name) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  const std::string prefix = temp_file_prefix(name) + host_name() + ".";
  const pid_t self = getpid();
  while (dirent* e = readdir(d)) {
    const std::string entry = e->d_name;
    if (entry.compare(0, prefix.size(), prefix) != 0) continue;
    // The rest must be exactly "<pid>.<counter>" (a longer host name sharing our prefix does not match).
    const std::string rest = entry.substr(prefix.size());
    const size_t dot = rest.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == rest.size() ||
        rest.find_first_not_of("0123456789", dot + 1) != std::string::npos) {
      continue;
    }
    char* end = nullptr;
    const long pid = std::strtol(rest.c_str(), &end, 10);
    if (end != rest.c_str() + dot || pid <= 0 || pid == self) continue;
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // still alive (or unknown)
    (void)unlink((dir + "/" + entry).c_str());
  }
  closedir(d);
}

}  // namespace

std::string temp_file_prefix(const std::string& file_name) { return "." + file_name + ".ember-tmp."; }

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  const size_t slash = path_.rfind('/');
  dir_ = slash == std::string::npos ? "." : (slash == 0 ? "/" : path_.substr(0, slash));
  name_ = slash == std::string::npos ? path_ : path_.substr(slash + 1);
  EMBER_CHECK(!name_.empty() && name_ != "." && name_ != "..", "[save] '", path_,
              "' names a directory; give a file path such as 'run/ckpt.safetensors'");
  const std::string base =
      (dir_ == "/" ? "" : dir_) + "/" + temp_file_prefix(name_) + host_name() + "." + std::to_string(getpid()) + ".";
  // Temporaries of killed saves go at every attempt, not only after a successful one, so
  // a job killed again and again mid-save does not pile up full-size files.
  remove_stale_temporaries(dir_, name_);
  // O_EXCL: a temporary left by an earlier process with the same pid is never reused.
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp_path_ = base + std::to_string(g_temp_counter.fetch_add(1));
    fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0) return;
    if (errno != EEXIST) break;
  }
  const int err = errno;
  EMBER_ERROR("[save] cannot create a temporary file next to '", path_, "' (", temp_path_, "): ", errno_text(err));
}

AtomicFile::~AtomicFile() {
  close_fd();
  if (!committed_) (void)::unlink(temp_path_.c_str());
}

void AtomicFile::close_fd() {
  if (fd_ >= 0) {
    (void)::close(fd_);
    fd_ = -1;
  }
}

void AtomicFile::fail(const char* what, int err) {
  close_fd();
  (void)::unlink(temp_path_.c_str());
  committed_ = true;  // nothing left for the destructor to remove
  EMBER_ERROR("[save] saving '", path_, "' failed: ", what, " '", temp_path_, "': ", errno_text(err),
              "; the previous file at '", path_, "' (if any) is unchanged");
}

void AtomicFile::write(const void* data, size_t n) {
  EMBER_CHECK(fd_ >= 0 && !synced_, "[save] internal error: write after sync on '", temp_path_, "'");
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::write(fd_, p, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      fail("writing", errno);
    }
    if (k == 0) fail("writing", EIO);
    p += k;
    n -= static_cast<size_t>(k);
    written_ += static_cast<uint64_t>(k);
  }
}

void AtomicFile::write_at(uint64_t offset, const void* data, size_t n) {
  EMBER_CHECK(fd_ >= 0 && !synced_ && offset + n <= written_, "[save] internal error: write_at outside '", temp_path_,
              "'");
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
    if (k < 0) {
      if (errno == EINTR) continue;
      fail("writing", errno);
    }
    if (k == 0) fail("writing", EIO);
    p += k;
    n -= static_cast<size_t>(k);
    offset += static_cast<uint64_t>(k);
  }
}

void AtomicFile::sync() {
  if (synced_) return;
  if (::fsync(fd_) != 0) fail("flushing (fsync)", errno);
  const int fd = fd_;
  fd_ = -1;
  // close can report a deferred write error (NFS); the data is not safe then.
  if (::close(fd) != 0) fail("closing", errno);
  synced_ = true;
}

void AtomicFile::commit() {
  sync();
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) fail("renaming the temporary over the target", errno);
  committed_ = true;
  const int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    // Some file systems cannot fsync a directory (EINVAL); the rename is then as durable as they allow.
    const int rc = ::fsync(dfd);
    const int err = errno;
    ::close(dfd);
    if (rc != 0 && err != EINVAL && err != ENOTSUP) {
      EMBER_ERROR("[save] '", path_, "' was written but syncing its directory '", dir_, "' failed: ", errno_text(err),
                  "; the new file may not survive a power loss");
    }
  }
  remove_stale_temporaries(dir_, name_);
}

}  // namespace ember::detail
