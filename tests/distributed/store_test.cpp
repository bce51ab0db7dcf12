// TCPStore, FileStore and PrefixStore: every operation, timeouts naming the keys, and a
// counter shared by real processes.

#include <gtest/gtest.h>

#include <thread>

#include "ember/core/error.h"
#include "ember/distributed/distributed.h"
#include "ember/distributed/store.h"
#include "tests/distributed/harness.h"

namespace dist = ember::distributed;
using namespace std::chrono_literals;

namespace store_test {

std::string str(const dist::Bytes& b) { return std::string(b.begin(), b.end()); }
dist::Bytes bytes(const std::string& s) { return dist::Bytes(s.begin(), s.end()); }

// The operations every store shares; `a` and `b` are two handles on one store.
void exercise(dist::Store& a, dist::Store& b) {
  a.set("k1", "v1");
  EXPECT_EQ(b.get_string("k1"), "v1");
  EXPECT_TRUE(b.check({"k1"}));
  EXPECT_FALSE(b.check({"k1", "nope"}));
  EXPECT_EQ(a.add("n", 5), 5);
  EXPECT_EQ(b.add("n", -2), 3);
  EXPECT_EQ(a.get_string("n"), "3");
  // compare_set: absent + empty expected sets; a wrong expectation returns the current value.
  EXPECT_EQ(str(a.compare_set("c", {}, bytes("x"))), "x");
  EXPECT_EQ(str(b.compare_set("c", bytes("y"), bytes("z"))), "x");
  EXPECT_EQ(str(b.compare_set("c", bytes("x"), bytes("z"))), "z");
  const int64_t n = a.num_keys();
  EXPECT_GE(n, 3);
  EXPECT_TRUE(a.delete_key("k1"));
  EXPECT_FALSE(a.delete_key("k1"));
  EXPECT_EQ(b.num_keys(), n - 1);
  // wait: satisfied by a later set from another thread.
  std::thread t([&] {
    std::this_thread::sleep_for(50ms);
    b.set("late", "1");
  });
  try {
    a.wait({"late", "n"}, 5000ms);
  } catch (...) {
    t.join();
    throw;
  }
  t.join();
  // Timeouts name the missing keys only.
  try {
    a.wait({"n", "missing1", "missing2"}, 200ms);
    ADD_FAILURE() << "no timeout";
  } catch (const ember::Error& e) {
    // (A PrefixStore reports the full keys.)
    const std::string w = e.what();
    EXPECT_NE(w.find("timed out after 200 ms waiting for keys '"), std::string::npos) << w;
    EXPECT_NE(w.find("missing1', '"), std::string::npos) << w;
    EXPECT_EQ(w.find("'n'"), std::string::npos) << w;
  }
}

TEST(DistributedStore, TCPStore) {
  dist::TCPStore master("127.0.0.1", 0, true, 2000ms);
  ASSERT_GT(master.port(), 0);
  dist::TCPStore client("127.0.0.1", master.port(), false, 2000ms);
  exercise(master, client);
  client.set_timeout(300ms);
  const auto start = std::chrono::steady_clock::now();
  try {
    client.get("never");
    ADD_FAILURE() << "no timeout";
  } catch (const ember::Error& e) {
    EXPECT_EQ(std::string(e.what()), "[TCPStore.get] key 'never' was not set within 300 ms");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  // Values are bytes: zeros and large values survive.
  dist::Bytes big(1 << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 31);
  client.set("big", big);
  EXPECT_EQ(master.get("big"), big);
}

TEST(DistributedStore, TCPStoreClientWithoutServerTimesOut) {
  const int port = dist_test::free_port();
  try {
    dist::TCPStore client("127.0.0.1", port, false, 300ms);
    ADD_FAILURE() << "connected to nothing";
  } catch (const ember::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[TCPStore] cannot connect to the store at 127.0.0.1:" + std::to_string(port) +
                                         " within 300 ms"),
              std::string::npos)
        << e.what();
  }
}

TEST(DistributedStore, FileStore) {
  const std::string dir = dist_test::temp_dir();
  dist::FileStore a(dir + "/store", 2000ms), b(dir + "/store", 2000ms);
  exercise(a, b);
  [[maybe_unused]] int rc = std::system(("rm -rf " + dir).c_str());
}

TEST(DistributedStore, PrefixStore) {
  // Two connections: one client serves one request at a time, and exercise() sets a key
  // from a second thread while the first waits for it.
  auto base = std::make_shared<dist::TCPStore>("127.0.0.1", 0, true, 2000ms);
  auto other = std::make_shared<dist::TCPStore>("127.0.0.1", base->port(), false, 2000ms);
  dist::PrefixStore a("p", base), b("p", other);
  exercise(a, b);
  EXPECT_TRUE(base->check({"p/n"}));
  EXPECT_FALSE(base->check({"n"}));
}

DIST_SCENARIO(store_counter) {
  const int rank = std::stoi(std::getenv("RANK")), world = std::stoi(std::getenv("WORLD_SIZE"));
  dist::TCPStore s("127.0.0.1", std::stoi(std::getenv("MASTER_PORT")), rank == 0, 10000ms);
  for (int i = 0; i < 100; ++i) s.add("counter", 1);
  s.set("done/" + std::to_string(rank), "1");
  std::vector<std::string> keys;
  for (int r = 0; r < world; ++r) keys.push_back("done/" + std::to_string(r));
  s.wait(keys);
  WCHECK(s.get_string("counter") == std::to_string(100 * world), << s.get_string("counter"));
  // The master keeps serving until every rank has read the result.
  s.add("read", 1);
  if (rank == 0) {
    while (s.add("read", 0) < world) std::this_thread::sleep_for(5ms);
  }
  return 0;
}

DIST_SCENARIO(init_env_missing) {
  ::unsetenv("MASTER_ADDR");
  try {
    dist::init_process_group();
  } catch (const ember::Error& e) {
    std::cout << e.what() << std::endl;
    return 0;
  }
  return 1;
}

}  // namespace store_test

TEST(DistributedStore, CounterAcrossProcesses) {
  auto r = dist_test::run_ranks("store_counter", 3, 30);
  ASSERT_TRUE(r.all_ok()) << r.dump();
}

TEST(DistributedStore, InitWithoutMasterAddrSaysWhatToSet) {
  auto r = dist_test::run_ranks("init_env_missing", 1, 30);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  EXPECT_NE(r.ranks[0].output.find("[init_process_group] init_method env:// needs MASTER_ADDR"), std::string::npos)
      << r.dump();
}
