#pragma once
// Key-value stores for rendezvous (torch.distributed's Store family). Ranks meet through a
// store: each publishes its transport address, reads the others', and the process group
// keeps using it for cheap bookkeeping (which collective each rank has reached, so that a
// timeout can name the ranks that never arrived).
//
//   TCPStore    a small TCP server (one thread, in the process that hosts it, usually
//               rank 0) and a client in every process; MASTER_ADDR/MASTER_PORT point at it.
//   FileStore   a file on a shared file system; every operation locks it (flock).
//   PrefixStore a view of another store with every key prefixed ("prefix/key").
//
// Blocking reads (get, wait) give up after the store's timeout and throw ember::Error
// naming the keys that are missing. Values are bytes; add() keeps its counter as decimal
// text, as PyTorch does, so get() of a counter reads "3".

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ember::distributed {

using Bytes = std::vector<uint8_t>;

// The default timeout of stores and process groups (PyTorch: 30 minutes; ember uses the
// same unless told otherwise).
inline constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::minutes(30);

class Store {
 public:
  explicit Store(std::chrono::milliseconds timeout = kDefaultTimeout) : timeout_(timeout) {}
  virtual ~Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  virtual void set(const std::string& key, const Bytes& value) = 0;
  void set(const std::string& key, const std::string& value) { set(key, Bytes(value.begin(), value.end())); }
  // Waits (up to timeout()) until key exists, then returns its value.
  virtual Bytes get(const std::string& key) = 0;
  std::string get_string(const std::string& key) {
    Bytes b = get(key);
    return std::string(b.begin(), b.end());
  }
  // Adds delta to the integer stored under key (0 when absent) and returns the sum.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // Sets key to desired when its value equals expected (an empty expected matches an
  // absent key); returns the value the key holds afterwards.
  virtual Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) = 0;
  // Waits until every key exists; throws naming the missing ones after the timeout.
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }
  // True when every key exists (does not wait).
  virtual bool check(const std::vector<std::string>& keys) = 0;
  // Removes key; true when it existed.
  virtual bool delete_key(const std::string& key) = 0;
  // Keys currently stored.
  virtual int64_t num_keys() = 0;
  // A set that does not wait for the store to acknowledge it (the TCP store sends and
  // returns); a later operation from the same process sees it. Defaults to set().
  virtual void set_nowait(const std::string& key, const Bytes& value) { set(key, value); }

  std::chrono::milliseconds timeout() const { return timeout_; }
  void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

 protected:
  std::chrono::milliseconds timeout_;
};

// The TCP store. is_master: this process hosts the server on host:port (port 0 picks a
// free one; port() tells which). Every instance, the master's too, is a client of it.
// Clients retry connecting until the timeout, so workers may start before the master.
class TCPStore : public Store {
 public:
  TCPStore(std::string host, int port, bool is_master, std::chrono::milliseconds timeout = kDefaultTimeout);
  ~TCPStore() override;

  void set(const std::string& key, const Bytes& value) override;
  using Store::set;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::wait;
  bool check(const std::vector<std::string>& keys) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  void set_nowait(const std::string& key, const Bytes& value) override;

  const std::string& host() const { return host_; }
  int port() const { return port_; }
  bool is_master() const { return server_ != nullptr; }

  class Server;

 private:
  struct Reply {
    uint8_t status;
    std::vector<Bytes> args;
  };
  Reply request(const char* op, uint8_t cmd, const std::vector<Bytes>& args, std::chrono::milliseconds wait_for);

  std::string host_;
  int port_;
  std::unique_ptr<Server> server_;
  int fd_ = -1;
  std::mutex mu_;  // one request at a time on the connection
};

// A store in one file (file://path init). Every operation takes an exclusive flock on
// the file and rereads it; blocking reads poll. Meant for a few ranks on one machine or
// a shared file system.
class FileStore : public Store {
 public:
  explicit FileStore(std::string path, std::chrono::milliseconds timeout = kDefaultTimeout);

  void set(const std::string& key, const Bytes& value) override;
  using Store::set;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::wait;
  bool check(const std::vector<std::string>& keys) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Every key of `store` under "prefix/".
class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> store);

  void set(const std::string& key, const Bytes& value) override;
  using Store::set;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::wait;
  bool check(const std::vector<std::string>& keys) override;
  bool delete_key(const std::string& key) override;
  // Counts the keys of the underlying store (as PyTorch's PrefixStore does).
  int64_t num_keys() override;
  void set_nowait(const std::string& key, const Bytes& value) override;

  const std::shared_ptr<Store>& underlying() const { return store_; }

 private:
  std::string k(const std::string& key) const { return prefix_ + "/" + key; }
  std::vector<std::string> k(const std::vector<std::string>& keys) const;
  std::string prefix_;
  std::shared_ptr<Store> store_;
};

}  // namespace ember::distributed
