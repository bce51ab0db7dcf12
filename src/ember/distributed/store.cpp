// The stores of store.h. The TCP store speaks a small framed protocol over one
// connection per client:
//   request: u8 command, u32 argument count, then per argument u32 length + bytes
//   reply:   u8 status (0 ok, 1 timed out, 2 error), then arguments the same way
// Blocking commands carry their timeout; the server answers "timed out" (with the keys
// still missing) when it passes, so a client never waits on a reply that will not come.

#include "ember/distributed/store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <thread>
#include <unordered_map>

#include "ember/core/check.h"

namespace ember::distributed {

namespace {

using Clock = std::chrono::steady_clock;

enum Cmd : uint8_t { kSet = 1, kGet, kAdd, kCompareSet, kWait, kCheck, kDelete, kNumKeys, kSetNoReply };
enum Status : uint8_t { kOk = 0, kTimedOut = 1, kFailed = 2 };

Bytes to_bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }
std::string to_string(const Bytes& b) { return std::string(b.begin(), b.end()); }

std::string join_keys(const std::vector<std::string>& keys) {
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i) out += ", ";
    out += "'" + keys[i] + "'";
  }
  return out;
}

std::string errno_text(int e) { return std::strerror(e); }

void put_u32(Bytes& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

Bytes frame(uint8_t head, const std::vector<Bytes>& args) {
  Bytes out;
  out.push_back(head);
  put_u32(out, static_cast<uint32_t>(args.size()));
  for (const auto& a : args) {
    put_u32(out, static_cast<uint32_t>(a.size()));
    out.insert(out.end(), a.begin(), a.end());
  }
  return out;
}

// Parses one frame from buf; returns the bytes it used (0 when incomplete).
size_t parse_frame(const Bytes& buf, uint8_t& head, std::vector<Bytes>& args) {
  if (buf.size() < 5) return 0;
  head = buf[0];
  const uint32_t n = get_u32(buf.data() + 1);
  size_t pos = 5;
  args.clear();
  for (uint32_t i = 0; i < n; ++i) {
    if (buf.size() < pos + 4) return 0;
    const uint32_t len = get_u32(buf.data() + pos);
    pos += 4;
    if (buf.size() < pos + len) return 0;
    args.emplace_back(buf.begin() + static_cast<std::ptrdiff_t>(pos),
                      buf.begin() + static_cast<std::ptrdiff_t>(pos + len));
    pos += len;
  }
  return pos;
}

bool send_all(int fd, const Bytes& data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, 100);
        continue;
      }
      return false;
    }
    off += static_cast<size_t>(n);
  }
  return true;
}

int64_t parse_int(const Bytes& b, int64_t fallback) {
  if (b.empty()) return fallback;
  try {
    return std::stoll(to_string(b));
  } catch (...) {
    return fallback;
  }
}

}  // namespace

// ---------------------------------------------------------------- TCP server

class TCPStore::Server {
 public:
  Server(const std::string& host, int port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EMBER_CHECK(listen_fd_ >= 0, "[TCPStore] cannot create a socket: ", errno_text(errno));
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    // Listen on every interface unless the host is a loopback address.
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    if (host == "127.0.0.1" || host == "localhost") addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      const int e = errno;
      ::close(listen_fd_);
      EMBER_ERROR("[TCPStore] cannot listen on port ", port, ": ", errno_text(e),
                  e == EADDRINUSE ? " (another process uses it: pick another MASTER_PORT, or port 0 for a free one)"
                                  : "");
    }
    ::listen(listen_fd_, 512);
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    int p[2];
    EMBER_CHECK(::pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0, "[TCPStore] pipe: ", errno_text(errno));
    wake_r_ = p[0];
    wake_w_ = p[1];
    thread_ = std::thread([this] { loop(); });
  }
  ~Server() {
    const char c = 'x';
    [[maybe_unused]] ssize_t n = ::write(wake_w_, &c, 1);
    if (thread_.joinable()) thread_.join();
    for (auto& [fd, conn] : conns_) ::close(fd);
    ::close(listen_fd_);
    ::close(wake_r_);
    ::close(wake_w_);
  }
  int port() const { return port_; }

 private:
  struct Pending {
    int fd;
    uint8_t cmd;  // kGet or kWait
    std::vector<std::string> keys;
    Clock::time_point deadline;
  };

  void loop() {
    std::vector<pollfd> fds;
    while (true) {
      fds.clear();
      fds.push_back({wake_r_, POLLIN, 0});
      fds.push_back({listen_fd_, POLLIN, 0});
      for (auto& [fd, buf] : conns_) fds.push_back({fd, POLLIN, 0});
      int wait_ms = -1;
      if (!pending_.empty()) {
        auto next = std::min_element(pending_.begin(), pending_.end(), [](const Pending& a, const Pending& b) {
                      return a.deadline < b.deadline;
                    })->deadline;
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
        wait_ms = static_cast<int>(std::clamp<int64_t>(ms + 1, 0, 60000));
      }
      const int r = ::poll(fds.data(), fds.size(), wait_ms);
      if (r < 0 && errno != EINTR) return;
      if (fds[0].revents) return;  // shutting down
      if (fds[1].revents & POLLIN) {
        const int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c >= 0) {
          int one = 1;
          ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          conns_.emplace(c, Bytes{});
        }
      }
      for (size_t i = 2; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        const int fd = fds[i].fd;
        uint8_t chunk[65536];
        const ssize_t n = ::recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
          drop(fd);
          continue;
        }
        if (n < 0) continue;
        Bytes& buf = conns_[fd];
        buf.insert(buf.end(), chunk, chunk + n);
        uint8_t cmd = 0;
        std::vector<Bytes> args;
        while (size_t used = parse_frame(buf, cmd, args)) {
          buf.erase(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(used));
          handle(fd, cmd, args);
        }
      }
      expire();
    }
  }

  void drop(int fd) {
    ::close(fd);
    conns_.erase(fd);
    std::erase_if(pending_, [fd](const Pending& p) { return p.fd == fd; });
  }

  void reply(int fd, uint8_t status, const std::vector<Bytes>& args) { send_all(fd, frame(status, args)); }

  bool all_present(const std::vector<std::string>& keys) const {
    return std::all_of(keys.begin(), keys.end(), [&](const std::string& k) { return data_.count(k) != 0; });
  }

  void answer(const Pending& p) {
    if (p.cmd == kGet) {
      reply(p.fd, kOk, {data_.at(p.keys[0])});
    } else {
      reply(p.fd, kOk, {});
    }
  }

  // Answers the waits a change may have satisfied.
  void changed() {
    for (size_t i = 0; i < pending_.size();) {
      if (all_present(pending_[i].keys)) {
        answer(pending_[i]);
        pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
  }

  void expire() {
    const auto now = Clock::now();
    for (size_t i = 0; i < pending_.size();) {
      if (pending_[i].deadline <= now) {
        std::vector<Bytes> missing;
        for (const auto& k : pending_[i].keys)
          if (!data_.count(k)) missing.push_back(to_bytes(k));
        reply(pending_[i].fd, kTimedOut, missing);
        pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
  }

  void handle(int fd, uint8_t cmd, const std::vector<Bytes>& a) {
    auto need = [&](size_t n) {
      if (a.size() >= n) return true;
      reply(fd, kFailed, {to_bytes("malformed request")});
      return false;
    };
    switch (cmd) {
      case kSet:
      case kSetNoReply:
        if (!need(2)) return;
        data_[to_string(a[0])] = a[1];
        if (cmd == kSet) reply(fd, kOk, {});
        changed();
        return;
      case kGet:
      case kWait: {
        if (!need(1)) return;
        const int64_t ms = parse_int(a[0], 0);
        std::vector<std::string> keys;
        for (size_t i = 1; i < a.size(); ++i) keys.push_back(to_string(a[i]));
        Pending p{fd, cmd, std::move(keys), Clock::now() + std::chrono::milliseconds(ms)};
        if (cmd == kGet && p.keys.size() != 1) {
          reply(fd, kFailed, {to_bytes("get takes one key")});
          return;
        }
        if (all_present(p.keys)) {
          answer(p);
        } else {
          pending_.push_back(std::move(p));
        }
        return;
      }
      case kAdd: {
        if (!need(2)) return;
        const std::string key = to_string(a[0]);
        auto it = data_.find(key);
        const int64_t old = it == data_.end() ? 0 : parse_int(it->second, 0);
        const int64_t now = old + parse_int(a[1], 0);
        data_[key] = to_bytes(std::to_string(now));
        reply(fd, kOk, {to_bytes(std::to_string(now))});
        changed();
        return;
      }
      case kCompareSet: {
        if (!need(3)) return;
        const std::string key = to_string(a[0]);
        auto it = data_.find(key);
        if ((it == data_.end() && a[1].empty()) || (it != data_.end() && it->second == a[1])) {
          data_[key] = a[2];
          reply(fd, kOk, {a[2]});
          changed();
        } else {
          reply(fd, kOk, {it == data_.end() ? a[1] : it->second});
        }
        return;
      }
      case kCheck: {
        bool all = true;
        for (const auto& k : a) all = all && data_.count(to_string(k));
        reply(fd, kOk, {to_bytes(all ? "1" : "0")});
        return;
      }
      case kDelete: {
        if (!need(1)) return;
        const bool had = data_.erase(to_string(a[0])) != 0;
        reply(fd, kOk, {to_bytes(had ? "1" : "0")});
        return;
      }
      case kNumKeys:
        reply(fd, kOk, {to_bytes(std::to_string(data_.size()))});
        return;
      default:
        reply(fd, kFailed, {to_bytes("unknown command " + std::to_string(cmd))});
    }
  }

  int listen_fd_ = -1, wake_r_ = -1, wake_w_ = -1, port_ = 0;
  std::thread thread_;
  std::map<int, Bytes> conns_;
  std::unordered_map<std::string, Bytes> data_;
  std::vector<Pending> pending_;
};

// ---------------------------------------------------------------- TCP client

namespace {

int connect_to(const std::string& host, int port, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::string last_error = "no attempt";
  while (true) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int g = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (g == 0) {
      for (addrinfo* ai = res; ai; ai = ai->ai_next) {
        const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) continue;
        if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
          ::freeaddrinfo(res);
          int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          return fd;
        }
        last_error = errno_text(errno);
        ::close(fd);
      }
      ::freeaddrinfo(res);
    } else {
      last_error = gai_strerror(g);
    }
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EMBER_ERROR("[TCPStore] cannot connect to the store at ", host, ":", port, " within ", timeout.count(),
              " ms (", last_error, "); is the master (rank 0) running, and are MASTER_ADDR/MASTER_PORT right?");
}

}  // namespace

TCPStore::TCPStore(std::string host, int port, bool is_master, std::chrono::milliseconds timeout)
    : Store(timeout), host_(std::move(host)), port_(port) {
  EMBER_CHECK(port >= 0 && port <= 65535, "[TCPStore] port ", port, " is out of range [0, 65535]");
  EMBER_CHECK(is_master || port > 0, "[TCPStore] a client needs the master's port (got 0)");
  if (is_master) {
    server_ = std::make_unique<Server>(host_, port);
    port_ = server_->port();
  }
  fd_ = connect_to(is_master ? "127.0.0.1" : host_, port_, timeout);
}

TCPStore::~TCPStore() {
  if (fd_ >= 0) ::close(fd_);
  server_.reset();
}

TCPStore::Reply TCPStore::request(const char* op, uint8_t cmd, const std::vector<Bytes>& args,
                                  std::chrono::milliseconds wait_for) {
  std::lock_guard<std::mutex> lock(mu_);
  EMBER_CHECK(send_all(fd_, frame(cmd, args)), "[", op, "] lost the connection to the store at ", host_, ":", port_,
              " (", errno_text(errno), "); the process hosting it (rank 0) may have exited");
  if (cmd == kSetNoReply) return {kOk, {}};
  // The server answers blocking commands by their deadline; the extra margin only covers
  // a server that died or hangs.
  const auto deadline = Clock::now() + wait_for + std::chrono::seconds(10);
  Bytes buf;
  uint8_t status = 0;
  std::vector<Bytes> out;
  while (true) {
    if (parse_frame(buf, status, out)) return {status, std::move(out)};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    EMBER_CHECK(left > 0, "[", op, "] the store at ", host_, ":", port_, " did not answer");
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (r <= 0) continue;
    uint8_t chunk[65536];
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n < 0 && errno == EINTR) continue;
    EMBER_CHECK(n > 0, "[", op, "] the store at ", host_, ":", port_,
                " closed the connection; the process hosting it (rank 0) may have exited");
    buf.insert(buf.end(), chunk, chunk + n);
  }
}

void TCPStore::set(const std::string& key, const Bytes& value) {
  request("TCPStore.set", kSet, {to_bytes(key), value}, std::chrono::milliseconds(0));
}

void TCPStore::set_nowait(const std::string& key, const Bytes& value) {
  request("TCPStore.set", kSetNoReply, {to_bytes(key), value}, std::chrono::milliseconds(0));
}

Bytes TCPStore::get(const std::string& key) {
  auto r = request("TCPStore.get", kGet, {to_bytes(std::to_string(timeout_.count())), to_bytes(key)}, timeout_);
  EMBER_CHECK(r.status != kTimedOut, "[TCPStore.get] key '", key, "' was not set within ", timeout_.count(), " ms");
  EMBER_CHECK(r.status == kOk && r.args.size() == 1, "[TCPStore.get] the store failed: ",
              r.args.empty() ? std::string() : to_string(r.args[0]));
  return std::move(r.args[0]);
}

int64_t TCPStore::add(const std::string& key, int64_t delta) {
  auto r = request("TCPStore.add", kAdd, {to_bytes(key), to_bytes(std::to_string(delta))}, std::chrono::milliseconds(0));
  EMBER_CHECK(r.status == kOk && r.args.size() == 1, "[TCPStore.add] the store failed");
  return parse_int(r.args[0], 0);
}

Bytes TCPStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  auto r = request("TCPStore.compare_set", kCompareSet, {to_bytes(key), expected, desired}, std::chrono::milliseconds(0));
  EMBER_CHECK(r.status == kOk && r.args.size() == 1, "[TCPStore.compare_set] the store failed");
  return std::move(r.args[0]);
}

void TCPStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  std::vector<Bytes> args{to_bytes(std::to_string(timeout.count()))};
  for (const auto& k : keys) args.push_back(to_bytes(k));
  auto r = request("TCPStore.wait", kWait, args, timeout);
  if (r.status == kTimedOut) {
    std::vector<std::string> missing;
    for (const auto& m : r.args) missing.push_back(to_string(m));
    EMBER_ERROR("[TCPStore.wait] timed out after ", timeout.count(), " ms waiting for key", missing.size() == 1 ? "" : "s",
                " ", join_keys(missing));
  }
  EMBER_CHECK(r.status == kOk, "[TCPStore.wait] the store failed");
}

bool TCPStore::check(const std::vector<std::string>& keys) {
  std::vector<Bytes> args;
  for (const auto& k : keys) args.push_back(to_bytes(k));
  auto r = request("TCPStore.check", kCheck, args, std::chrono::milliseconds(0));
  return r.status == kOk && !r.args.empty() && to_string(r.args[0]) == "1";
}

bool TCPStore::delete_key(const std::string& key) {
  auto r = request("TCPStore.delete_key", kDelete, {to_bytes(key)}, std::chrono::milliseconds(0));
  return r.status == kOk && !r.args.empty() && to_string(r.args[0]) == "1";
}

int64_t TCPStore::num_keys() {
  auto r = request("TCPStore.num_keys", kNumKeys, {}, std::chrono::milliseconds(0));
  EMBER_CHECK(r.status == kOk && r.args.size() == 1, "[TCPStore.num_keys] the store failed");
  return parse_int(r.args[0], 0);
}

// ---------------------------------------------------------------- FileStore

namespace {

// The file locked for the duration of one operation; its content as a map.
class LockedFile {
 public:
  LockedFile(const std::string& path, const char* op) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    EMBER_CHECK(fd_ >= 0, "[", op, "] cannot open the store file ", path, ": ", errno_text(errno));
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        const int e = errno;
        ::close(fd_);
        EMBER_ERROR("[", op, "] cannot lock the store file ", path, ": ", errno_text(e));
      }
    }
    Bytes all;
    uint8_t chunk[65536];
    ssize_t n;
    while ((n = ::read(fd_, chunk, sizeof(chunk))) > 0) all.insert(all.end(), chunk, chunk + n);
    size_t pos = 0;
    while (pos + 8 <= all.size()) {
      const uint32_t kl = get_u32(all.data() + pos);
      if (pos + 4 + kl + 4 > all.size()) break;
      std::string key(all.begin() + static_cast<std::ptrdiff_t>(pos + 4),
                      all.begin() + static_cast<std::ptrdiff_t>(pos + 4 + kl));
      const uint32_t vl = get_u32(all.data() + pos + 4 + kl);
      const size_t vpos = pos + 8 + kl;
      if (vpos + vl > all.size()) break;
      data[key] = Bytes(all.begin() + static_cast<std::ptrdiff_t>(vpos),
                        all.begin() + static_cast<std::ptrdiff_t>(vpos + vl));
      pos = vpos + vl;
    }
  }
  ~LockedFile() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  void write_back() {
    Bytes all;
    for (const auto& [k, v] : data) {
      put_u32(all, static_cast<uint32_t>(k.size()));
      all.insert(all.end(), k.begin(), k.end());
      put_u32(all, static_cast<uint32_t>(v.size()));
      all.insert(all.end(), v.begin(), v.end());
    }
    [[maybe_unused]] int t = ::ftruncate(fd_, 0);
    size_t off = 0;
    while (off < all.size()) {
      const ssize_t n = ::pwrite(fd_, all.data() + off, all.size() - off, static_cast<off_t>(off));
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
  }
  std::map<std::string, Bytes> data;

 private:
  int fd_ = -1;
};

}  // namespace

FileStore::FileStore(std::string path, std::chrono::milliseconds timeout) : Store(timeout), path_(std::move(path)) {
  EMBER_CHECK(!path_.empty(), "[FileStore] the path is empty");
  LockedFile f(path_, "FileStore");  // creates it, and fails early when it cannot
}

void FileStore::set(const std::string& key, const Bytes& value) {
  LockedFile f(path_, "FileStore.set");
  f.data[key] = value;
  f.write_back();
}

Bytes FileStore::get(const std::string& key) {
  wait({key}, timeout_);
  LockedFile f(path_, "FileStore.get");
  auto it = f.data.find(key);
  EMBER_CHECK(it != f.data.end(), "[FileStore.get] key '", key, "' was deleted while waiting for it");
  return it->second;
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  LockedFile f(path_, "FileStore.add");
  auto it = f.data.find(key);
  const int64_t now = (it == f.data.end() ? 0 : parse_int(it->second, 0)) + delta;
  f.data[key] = to_bytes(std::to_string(now));
  f.write_back();
  return now;
}

Bytes FileStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  LockedFile f(path_, "FileStore.compare_set");
  auto it = f.data.find(key);
  if ((it == f.data.end() && expected.empty()) || (it != f.data.end() && it->second == expected)) {
    f.data[key] = desired;
    f.write_back();
    return desired;
  }
  return it == f.data.end() ? expected : it->second;
}

void FileStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    std::vector<std::string> missing;
    {
      LockedFile f(path_, "FileStore.wait");
      for (const auto& k : keys)
        if (!f.data.count(k)) missing.push_back(k);
    }
    if (missing.empty()) return;
    if (Clock::now() >= deadline) {
      EMBER_ERROR("[FileStore.wait] timed out after ", timeout.count(), " ms waiting for key",
                  missing.size() == 1 ? "" : "s", " ", join_keys(missing), " in ", path_);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool FileStore::check(const std::vector<std::string>& keys) {
  LockedFile f(path_, "FileStore.check");
  return std::all_of(keys.begin(), keys.end(), [&](const std::string& k) { return f.data.count(k) != 0; });
}

bool FileStore::delete_key(const std::string& key) {
  LockedFile f(path_, "FileStore.delete_key");
  const bool had = f.data.erase(key) != 0;
  if (had) f.write_back();
  return had;
}

int64_t FileStore::num_keys() {
  LockedFile f(path_, "FileStore.num_keys");
  return static_cast<int64_t>(f.data.size());
}

// ---------------------------------------------------------------- PrefixStore

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> store)
    : Store(store ? store->timeout() : kDefaultTimeout), prefix_(std::move(prefix)), store_(std::move(store)) {
  EMBER_CHECK(store_ != nullptr, "[PrefixStore] the underlying store is null");
}

std::vector<std::string> PrefixStore::k(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& key : keys) out.push_back(k(key));
  return out;
}

void PrefixStore::set(const std::string& key, const Bytes& value) { store_->set(k(key), value); }
void PrefixStore::set_nowait(const std::string& key, const Bytes& value) { store_->set_nowait(k(key), value); }
Bytes PrefixStore::get(const std::string& key) { return store_->get(k(key)); }
int64_t PrefixStore::add(const std::string& key, int64_t delta) { return store_->add(k(key), delta); }
Bytes PrefixStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  return store_->compare_set(k(key), expected, desired);
}
void PrefixStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  store_->wait(k(keys), timeout);
}
bool PrefixStore::check(const std::vector<std::string>& keys) { return store_->check(k(keys)); }
bool PrefixStore::delete_key(const std::string& key) { return store_->delete_key(k(key)); }
int64_t PrefixStore::num_keys() { return store_->num_keys(); }

}  // namespace ember::distributed
