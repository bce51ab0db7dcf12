// ember-serve's HTTP front end on Boost.Beast (docs/serve.md).
//
// Note [Serving threads]: a few I/O threads (io_threads) run every connection through
// Asio; each connection lives on its own strand. They parse requests, decode tensors and
// route; they never run a model. Model runs happen on each version's worker threads
// (model.h, Note [Dynamic batching]), whose completion callbacks encode the answer and
// post it back to the connection's strand. So a slow model never stalls /metrics, health
// checks or other models, and a burst turns into queue growth that the bounded queue
// refuses with 503 instead of latency without bound.
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "ember/serve/server.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "ember/core/check.h"
#include "ember/core/error.h"
#include "ember/core/parallel.h"
#include "ember/ops/reduce.h"
#include "ember/ops/creation.h"
#include "ember/ops/pointwise.h"
#include "ember/serialize/value_json.h"
#include "ember/serve/codec.h"
#include "ember/serve/log.h"
#include "ember/serve/repository.h"
#include "ember/serve/status_page.h"

namespace ember::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// ---------------------------------------------------------------- configuration

namespace {

const char* const kServerKeys[] = {"inference_address", "management_address", "max_request_bytes",
                                   "max_header_bytes",  "request_timeout_ms", "max_connections",
                                   "io_threads",        "intra_op_threads",   "drain_timeout_ms",
                                   "load_models",       "auth",               "access_log",
                                   "model_defaults",    "models"};

void parse_address(const Value& v, const std::string& key, const std::string& where, std::string& host, int& port) {
  EMBER_CHECK(v.is_string(), "[ember-serve] ", where, ": \"", key, "\" must be a string \"host:port\"");
  const std::string& s = v.to_string();
  const size_t colon = s.rfind(':');
  EMBER_CHECK(colon != std::string::npos && colon + 1 < s.size(), "[ember-serve] ", where, ": \"", key,
              "\" must be \"host:port\", got \"", s, "\"");
  host = s.substr(0, colon);
  const std::string p = s.substr(colon + 1);
  EMBER_CHECK(std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; }) && p.size() <= 5 &&
                  std::stoi(p) <= 65535,
              "[ember-serve] ", where, ": \"", key, "\" has a bad port \"", p, "\"");
  port = std::stoi(p);
}

int64_t int_at_least(const Value& v, const std::string& key, const std::string& where, int64_t lo) {
  EMBER_CHECK(v.is_int(), "[ember-serve] ", where, ": \"", key, "\" must be an integer, got ", v.kind_name());
  EMBER_CHECK(v.to_int() >= lo, "[ember-serve] ", where, ": \"", key, "\" must be at least ", lo);
  return v.to_int();
}

std::string accepted(const char* const* keys, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += std::string(i ? ", " : "") + keys[i];
  return s;
}

}  // namespace

ServerOptions parse_server_config(const std::string& path, ServerOptions o) {
  const Value root = read_json_file(path);
  EMBER_CHECK(root.is_dict(), "[ember-serve] ", path, " must hold a JSON object");
  for (const auto& item : root.to_dict()) {
    const std::string& k = item.key();
    const Value& v = item.value();
    if (k == "inference_address") {
      parse_address(v, k, path, o.inference_host, o.inference_port);
    } else if (k == "management_address") {
      parse_address(v, k, path, o.management_host, o.management_port);
    } else if (k == "max_request_bytes") {
      o.max_request_bytes = int_at_least(v, k, path, 1024);
    } else if (k == "max_header_bytes") {
      o.max_header_bytes = int_at_least(v, k, path, 1024);
    } else if (k == "request_timeout_ms") {
      o.request_timeout_ms = int_at_least(v, k, path, 1);
    } else if (k == "max_connections") {
      o.max_connections = int_at_least(v, k, path, 1);
    } else if (k == "io_threads") {
      o.io_threads = static_cast<int>(int_at_least(v, k, path, 1));
    } else if (k == "intra_op_threads") {
      o.intra_op_threads = static_cast<int>(int_at_least(v, k, path, 0));
    } else if (k == "drain_timeout_ms") {
      o.drain_timeout_ms = int_at_least(v, k, path, 0);
    } else if (k == "load_models") {
      EMBER_CHECK(v.is_bool(), "[ember-serve] ", path, ": \"load_models\" must be true or false");
      o.load_models = v.to_bool();
    } else if (k == "access_log") {
      EMBER_CHECK(v.is_string(), "[ember-serve] ", path, ": \"access_log\" must be a string (\"-\", \"\" or a path)");
      o.access_log = v.to_string();
    } else if (k == "auth") {
      EMBER_CHECK(v.is_dict(), "[ember-serve] ", path, ": \"auth\" must be an object");
      for (const auto& a : v.to_dict()) {
        if (a.key() == "management") {
          EMBER_CHECK(a.value().is_bool(), "[ember-serve] ", path, ": \"auth.management\" must be true or false");
          o.management_auth = a.value().to_bool();
        } else if (a.key() == "management_token" || a.key() == "inference_token") {
          EMBER_CHECK(a.value().is_string() && a.value().to_string().size() >= 16, "[ember-serve] ", path, ": \"auth.",
                      a.key(), "\" must be a string of at least 16 characters");
          (a.key() == "management_token" ? o.management_token : o.inference_token) = a.value().to_string();
        } else {
          EMBER_ERROR("[ember-serve] ", path, ": unknown setting \"auth.", a.key(),
                      "\"; auth accepts: management, management_token, inference_token");
        }
      }
    } else if (k == "model_defaults") {
      o.model_defaults = parse_model_config(v, path + " (model_defaults)", o.model_defaults);
    } else if (k == "models") {
      EMBER_CHECK(v.is_dict(), "[ember-serve] ", path, ": \"models\" must be an object of model name -> settings");
      for (const auto& m : v.to_dict())
        o.model_configs[m.key()] = parse_model_config(m.value(), path + " (models." + m.key() + ")", o.model_defaults);
    } else {
      EMBER_ERROR("[ember-serve] ", path, ": unknown setting \"", k, "\"; serve.json accepts: ",
                  accepted(kServerKeys, sizeof kServerKeys / sizeof kServerKeys[0]));
    }
  }
  return o;
}

// ---------------------------------------------------------------- the server

namespace {

struct Reply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  bool close = false;
  // For the access log and metrics.
  std::string model, version;
  int64_t batch = 0;
};

Reply error_reply(int status, const std::string& message) {
  Reply r;
  r.status = status;
  r.body = "{\"error\":";
  json::append_string(r.body, json::is_valid_utf8(message) ? message : std::string("(message is not UTF-8)"));
  r.body += ",\"code\":" + std::to_string(status) + "}";
  return r;
}

// An error answer about one model version (counted and logged under it); 503s say when
// to come back.
Reply model_error(int status, const std::string& message, const std::string& model, const std::string& version,
                  int64_t batch = 0) {
  Reply r = error_reply(status, message);
  r.model = model;
  r.version = version;
  r.batch = batch;
  if (status == 503) r.headers.emplace_back("Retry-After", "1");
  return r;
}

std::string random_hex(size_t bytes) {
  std::random_device rd;
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < bytes; ++i) {
    const unsigned v = rd() & 0xff;
    s += hex[v >> 4];
    s += hex[v & 15];
  }
  return s;
}

// A request id for requests that bring none: a random per-process prefix and a counter,
// 16 hex digits (std::random_device per request costs a system call).
std::string next_request_id() {
  static const uint64_t prefix = [] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }();
  static std::atomic<uint64_t> counter{0};
  const uint64_t v = (prefix & 0xffffffff00000000ull) + ((prefix + counter.fetch_add(1)) & 0xffffffffull);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

bool equal_const_time(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    size_t j = i;
    while (j < path.size() && path[j] != '/') ++j;
    if (j > i) out.emplace_back(path.substr(i, j - i));
    i = j;
  }
  return out;
}

std::map<std::string, std::string> parse_query(std::string_view q) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  while (i < q.size()) {
    size_t amp = q.find('&', i);
    if (amp == std::string_view::npos) amp = q.size();
    const std::string_view kv = q.substr(i, amp - i);
    const size_t eq = kv.find('=');
    auto decode = [](std::string_view s) {
      std::string r;
      for (size_t k = 0; k < s.size(); ++k) {
        if (s[k] == '+') {
          r += ' ';
        } else if (s[k] == '%' && k + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[k + 1])) &&
                   std::isxdigit(static_cast<unsigned char>(s[k + 2]))) {
          r += static_cast<char>(std::stoi(std::string(s.substr(k + 1, 2)), nullptr, 16));
          k += 2;
        } else {
          r += s[k];
        }
      }
      return r;
    };
    if (!kv.empty()) out[decode(kv.substr(0, eq))] = eq == std::string_view::npos ? "" : decode(kv.substr(eq + 1));
    i = amp + 1;
  }
  return out;
}

double resident_bytes() {
  std::ifstream f("/proc/self/statm");
  long pages_total = 0, pages_res = 0;
  f >> pages_total >> pages_res;
  return static_cast<double>(pages_res) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

// Requests per second over the last 10 whole seconds.
class RateMeter {
 public:
  void hit() {
    const int64_t s = now();
    std::lock_guard<std::mutex> lock(mu_);
    Slot& slot = slots_[s % kSlots];
    if (slot.sec != s) slot = {s, 0};
    ++slot.count;
  }
  double rate() const {
    const int64_t s = now();
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t n = 0;
    for (const Slot& slot : slots_)
      if (slot.sec >= s - 10 && slot.sec < s) n += slot.count;
    return static_cast<double>(n) / 10.0;
  }

 private:
  static int64_t now() {
    return std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count();
  }
  static constexpr int kSlots = 16;
  struct Slot {
    int64_t sec = -1;
    uint64_t count = 0;
  };
  mutable std::mutex mu_;
  Slot slots_[kSlots];
};

// What a request carries from parsing to its access-log line.
struct Meta {
  std::string request_id, method, target;
  Clock::time_point start;
  size_t bytes_in = 0;
  bool keep_alive = true;
  unsigned version = 11;
};

class Session;

}  // namespace

struct Server::Impl {
  explicit Impl(ServerOptions o) : opt(std::move(o)), infer_acc(ioc), mgmt_acc(ioc) {}

  ServerOptions opt;
  Registry metrics;
  std::unique_ptr<Repository> repo;
  asio::io_context ioc;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  tcp::acceptor infer_acc, mgmt_acc;
  int infer_port = 0, mgmt_port = 0;
  std::vector<std::thread> io_threads;
  std::atomic<int64_t> inflight{0}, connections{0};
  std::atomic<bool> draining{false}, stop_started{false};
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool done = false;
  std::thread shutdown_thread;

  Family<Counter>* requests = nullptr;
  Family<Histogram>* latency = nullptr;
  Family<Counter>* http_responses = nullptr;
  Family<Counter>* shadow_total = nullptr;
  Family<Counter>* shadow_disagree = nullptr;
  Family<Gauge>* drift_psi = nullptr;
  Family<Gauge>* drift_mean_shift = nullptr;
  Family<Gauge>* drift_std_ratio = nullptr;
  Gauge* inflight_gauge = nullptr;
  Gauge* rss_gauge = nullptr;
  Gauge* connections_gauge = nullptr;
  std::mutex rates_mu;
  std::map<std::string, std::unique_ptr<RateMeter>> rates;

  void accept(tcp::acceptor& acc, bool management);
  void dispatch(const std::shared_ptr<Session>& s, http::request<http::string_body>&& req, std::shared_ptr<Meta> meta);
  // Routes; each answers through s->reply (at once or from a worker thread).
  void route_inference(const std::shared_ptr<Session>& s, const std::shared_ptr<Meta>& meta,
                       http::request<http::string_body>& req);
  void route_management(const std::shared_ptr<Session>& s, const std::shared_ptr<Meta>& meta,
                        http::request<http::string_body>& req);
  void kserve_infer(const std::shared_ptr<Session>& s, const std::shared_ptr<Meta>& meta,
                    http::request<http::string_body>& req, const std::string& model, const std::string& version);
  void torchserve_predict(const std::shared_ptr<Session>& s, const std::shared_ptr<Meta>& meta,
                          http::request<http::string_body>& req, const std::string& model,
                          const std::string& version);
  Reply model_metadata(const std::string& model, const std::string& version);
  Reply describe_model(const std::string& model);
  Reply status_json();
  std::string render_metrics();
  void record(const std::shared_ptr<Meta>& meta, const Reply& r);
  // The version a request goes to (traffic split, sticky header); sticky receives the
  // header's value, why the 404 message when there is none.
  std::shared_ptr<ModelVersion> route(const http::request<http::string_body>& req, const std::string& model,
                                      const std::string& version, std::string& sticky, std::string& why);
  void submit_routed(const std::shared_ptr<Session>& s, const std::shared_ptr<Meta>& meta,
                     std::shared_ptr<ModelVersion> mv, const std::string& model, const std::string& version,
                     const std::string& sticky, const std::vector<Tensor>& inputs,
                     const std::function<std::function<void(InferResult)>(const ModelVersion*)>& make);
  void run_shadow(const ModelVersion& served, const std::vector<Tensor>& inputs,
                  const std::vector<Tensor>& outputs);
  RateMeter& rate_of(const std::string& model, const std::string& version);
  void do_shutdown();
};

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, Server::Impl& srv, bool management)
      : stream_(std::move(socket)), srv_(srv), management_(management) {
    srv_.connections.fetch_add(1);
  }
  ~Session() { srv_.connections.fetch_sub(1); }
  bool management() const { return management_; }

  void start() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read(); });
  }

  // Answers the request `meta` describes; any thread.
  void reply(const std::shared_ptr<Meta>& meta, Reply r) {
    asio::post(stream_.get_executor(), [self = shared_from_this(), meta, r = std::move(r)]() mutable {
      self->write(meta, std::move(r));
    });
  }

 private:
  void read() {
    parser_.emplace();
    parser_->body_limit(static_cast<uint64_t>(srv_.opt.max_request_bytes));
    parser_->header_limit(static_cast<uint32_t>(srv_.opt.max_header_bytes));
    stream_.expires_after(std::chrono::milliseconds(srv_.opt.request_timeout_ms));
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t n) {
      self->on_read(ec, n);
    });
  }

  void on_read(beast::error_code ec, size_t bytes) {
    if (ec == http::error::end_of_stream || ec == asio::error::connection_reset || ec == asio::error::eof) {
      close();
      return;
    }
    auto meta = std::make_shared<Meta>();
    meta->start = Clock::now();
    meta->request_id = next_request_id();
    meta->keep_alive = false;
    if (ec == http::error::body_limit) {
      srv_.inflight.fetch_add(1);
      write(meta, error_reply(413, "request body exceeds max_request_bytes (" +
                                       std::to_string(srv_.opt.max_request_bytes) + " bytes)"));
      return;
    }
    if (ec == http::error::header_limit) {
      srv_.inflight.fetch_add(1);
      write(meta, error_reply(431, "request headers exceed max_header_bytes (" +
                                       std::to_string(srv_.opt.max_header_bytes) + " bytes)"));
      return;
    }
    if (ec == beast::error::timeout) {
      if (parser_->got_some()) {
        srv_.inflight.fetch_add(1);
        write(meta, error_reply(408, "the request did not arrive within request_timeout_ms (" +
                                         std::to_string(srv_.opt.request_timeout_ms) + " ms)"));
      } else {
        close();
      }
      return;
    }
    if (ec) {
      if (ec.category() == http::make_error_code(http::error::bad_target).category()) {
        srv_.inflight.fetch_add(1);
        write(meta, error_reply(400, "malformed HTTP request: " + ec.message()));
      } else {
        close();
      }
      return;
    }
    stream_.expires_never();
    http::request<http::string_body> req = parser_->release();
    meta->bytes_in = bytes;
    meta->method = std::string(req.method_string());
    meta->target = std::string(req.target());
    meta->keep_alive = req.keep_alive();
    meta->version = req.version();
    const auto rid = req.find("X-Request-Id");
    if (rid != req.end() && !rid->value().empty() && rid->value().size() <= 128) {
      meta->request_id = std::string(rid->value());
    }
    srv_.inflight.fetch_add(1);
    srv_.dispatch(shared_from_this(), std::move(req), meta);
  }

  void write(const std::shared_ptr<Meta>& meta, Reply r) {
    srv_.record(meta, r);
    res_ = {};
    res_.version(meta->version);
    res_.result(static_cast<unsigned>(r.status));
    res_.set(http::field::server, "ember-serve");
    res_.set(http::field::content_type, r.content_type);
    res_.set("X-Request-Id", meta->request_id);
    for (const auto& [k, v] : r.headers) res_.set(k, v);
    res_.body() = std::move(r.body);
    const bool keep = meta->keep_alive && !r.close && !srv_.draining.load();
    res_.keep_alive(keep);
    res_.prepare_payload();
    http::async_write(stream_, res_, [self = shared_from_this(), keep](beast::error_code ec, size_t) {
      self->srv_.inflight.fetch_sub(1);
      if (ec) {
        self->close();
      } else if (!keep) {
        self->linger();
      } else {
        self->read();
      }
    });
  }

  // A close after an answer the client may still be sending a body to (413, a
  // malformed request): stop sending, then read and drop what arrives for a while, so
  // the client finishes its write and reads the answer instead of a reset.
  void linger() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return close();
    stream_.expires_after(std::chrono::seconds(2));
    drain_left_ = size_t{8} << 20;
    scratch_ = std::make_unique<char[]>(kScratch);
    drain();
  }
  void drain() {
    stream_.async_read_some(asio::buffer(scratch_.get(), kScratch),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              if (ec || n >= self->drain_left_) return self->close();
                              self->drain_left_ -= n;
                              self->drain();
                            });
  }

  void close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.socket().close(ec);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
  static constexpr size_t kScratch = 16384;
  std::unique_ptr<char[]> scratch_;
  size_t drain_left_ = 0;
  Server::Impl& srv_;
  bool management_;
};

}  // namespace

void Server::Impl::accept(tcp::acceptor& acc, bool management) {
  acc.async_accept(asio::make_strand(ioc), [this, &acc, management](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec == asio::error::operation_aborted || !acc.is_open()) return;
    } else if (draining.load() || connections.load() >= opt.max_connections) {
      beast::error_code ignored;
      socket.close(ignored);
    } else {
      std::make_shared<Session>(std::move(socket), *this, management)->start();
    }
    if (acc.is_open()) accept(acc, management);
  });
}

RateMeter& Server::Impl::rate_of(const std::string& model, const std::string& version) {
  std::lock_guard<std::mutex> lock(rates_mu);
  auto& p = rates[model + "\n" + version];
  if (!p) p = std::make_unique<RateMeter>();
  return *p;
}

void Server::Impl::record(const std::shared_ptr<Meta>& meta, const Reply& r) {
  const double seconds = std::chrono::duration<double>(Clock::now() - meta->start).count();
  const std::string code = std::to_string(r.status);
  if (!r.model.empty()) {
    requests->with({r.model, r.version, code}).inc();
    // Latency of answered inferences only: fast 503s under overload would hide how long
    // the admitted requests took (their count is in ember_requests_total by code).
    if (r.status < 300) latency->with({r.model, r.version}).observe(seconds);
    rate_of(r.model, r.version).hit();
  } else {
    http_responses->with({code}).inc();
  }
  if (opt.access_log.empty()) return;
  std::vector<LogField> f{{"request_id", meta->request_id},
                          {"method", meta->method},
                          {"path", meta->target.size() > 256 ? meta->target.substr(0, 256) : meta->target},
                          log_num("status", r.status),
                          log_num("latency_ms", std::round(seconds * 1e6) / 1e3),
                          log_num("bytes_in", static_cast<double>(meta->bytes_in)),
                          log_num("bytes_out", static_cast<double>(r.body.size()))};
  if (!r.model.empty()) {
    f.push_back({"model", r.model});
    f.push_back({"version", r.version});
    f.push_back(log_num("batch_size", static_cast<double>(r.batch)));
  }
  log_event("access", f);
}

void Server::Impl::dispatch(const std::shared_ptr<Session>& s, http::request<http::string_body>&& req,
                            std::shared_ptr<Meta> meta) {
  try {
    if (s->management()) {
      route_management(s, meta, req);
    } else {
      route_inference(s, meta, req);
    }
  } catch (const BadRequest& e) {
    s->reply(meta, error_reply(400, e.what()));
  } catch (const Error& e) {
    s->reply(meta, error_reply(400, std::string(e.message())));
  } catch (const std::exception& e) {
    s->reply(meta, error_reply(500, std::string("internal error: ") + e.what()));
  }
}

namespace {

bool authorized(const http::request<http::string_body>& req, const std::string& token) {
  const auto it = req.find(http::field::authorization);
  if (it == req.end()) return false;
  const std::string v(it->value());
  return v.size() > 7 && v.compare(0, 7, "Bearer ") == 0 && equal_const_time(v.substr(7), token);
}

Reply unauthorized(const char* which) {
  Reply r = error_reply(401, std::string("the ") + which +
                                  " API needs \"Authorization: Bearer <token>\" (see auth in docs/serve.md)");
  r.headers.emplace_back("WWW-Authenticate", "Bearer");
  return r;
}

Reply json_reply(const Value& v) {
  Reply r;
  r.body = value_to_json(v);
  return r;
}

Value spec_value(const TensorSpec& s) {
  Value v = Value::dict();
  v["name"] = s.name;
  v["datatype"] = kserve_dtype(s.dtype);
  v["shape"] = Value(s.shape);
  return v;
}

}  // namespace

void Server::Impl::route_inference(const std::shared_ptr<Session>& s, const std::shared_ptr<Meta>& meta,
                                   http::request<http::string_body>& req) {
  const std::string_view target = req.target();
  const size_t qpos = target.find('?');
  const std::vector<std::string> p = split_path(target.substr(0, qpos));
  const auto method = req.method();
  const bool get = method == http::verb::get || method == http::verb::head;
  const bool post = method == http::verb::post;
  auto answer = [&](Reply r) { s->reply(meta, std::move(r)); };
  // Open routes: health, metrics, the status page.
  if (p.empty() && get) {
    Reply r;
    r.content_type = "text/html; charset=utf-8";
    r.body = status_page_html();
    return answer(std::move(r));
  }
  if (p.size() == 1 && p[0] == "ping" && get) {
    Reply r = json_reply(Value());
    r.status = draining ? 503 : 200;
    r.body = draining ? "{\"status\":\"Unhealthy\"}" : "{\"status\":\"Healthy\"}";
    return answer(std::move(r));
  }
  if (p.size() == 1 && p[0] == "metrics" && get) {
    Reply r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = render_metrics();
    return answer(std::move(r));
  }
  if (p.size() == 1 && p[0] == "status" && get) return answer(status_json());
  if (p.size() == 3 && p[0] == "v2" && p[1] == "health" && get && (p[2] == "live" || p[2] == "ready")) {
    Reply r;
    r.status = p[2] == "ready" && draining ? 503 : 200;
    r.body = std::string("{\"") + p[2] + "\":" + (r.status == 200 ? "true" : "false") + "}";
    return answer(std::move(r));
  }
  if (!opt.inference_token.empty() && !authorized(req, opt.inference_token)) return answer(unauthorized("inference"));
  if (draining && post) return answer(error_reply(503, "the server is shutting down"));
  // TorchServe: /predictions/{model}[/{version}]
  if (!p.empty() && p[0] == "predictions") {
    if (!post) return answer(error_reply(405, "use POST for /predictions"));
    if (p.size() != 2 && p.size() != 3) return answer(error_reply(404, "use /predictions/{model}[/{version}]"));
    return torchserve_predict(s, meta, req, p[1], p.size() == 3 ? p[2] : "");
  }
  if (p.size() == 1 && p[0] == "v2" && get) {
    return answer(json_reply(to_value(json::parse(
        "{\"name\":\"ember-serve\",\"version\":\"0.1.0\",\"extensions\":[\"binary_tensor_data\",\"drift\"]}", 4,
        64))));
  }
  // KServe v2: /v2/models/{m}[/versions/{v}][/ready|/infer|/drift]
  if (p.size() >= 3 && p[0] == "v2" && p[1] == "models") {
    const std::string& model = p[2];
    std::string version;
    size_t i = 3;
    if (p.size() >= 5 && p[3] == "versions") {
      version = p[4];
      i = 5;
    }
    const std::string action = i < p.size() ? p[i] : "";
    if (i + 1 < p.size() || (i < p.size() && action != "ready" && action != "infer" && action != "drift")) {
      return answer(error_reply(404, "unknown route " + std::string(target.substr(0, qpos))));
    }
    if (action == "infer") {
      if (!post) return answer(error_reply(405, "use POST for infer"));
      return kserve_infer(s, meta, req, model, version);
    }
    if (!get) return answer(error_reply(405, "use GET"));
    std::string why;
    auto mv = version.empty() ? repo->find(model, "") : repo->find(model, version);
    if (!mv) mv = repo->resolve(model, version, "", why);
    if (!mv) return answer(error_reply(404, why.empty() ? "no model named \"" + model + "\"" : why));
    if (action == "ready") {
      Reply r;
      r.status = draining ? 503 : 200;
      r.body = std::string("{\"name\":") + value_to_json(Value(model)) + ",\"ready\":" + (draining ? "false" : "true") + "}";
      return answer(std::move(r));
    }
    if (action == "drift") {
      Value d = mv->drift().report();
      d["model_name"] = model;
      d["model_version"] = mv->version();
      return answer(json_reply(d));
    }
    return answer(model_metadata(model, mv->version()));
  }
  answer(error_reply(404, "unknown route " + std::string(target.substr(0, qpos))));
}

Reply Server::Impl::model_metadata(const std::string& model, const std::string& version) {
  auto mv = repo->find(model, version);
  if (!mv) return error_reply(404, "model \"" + model + "\" has no version \"" + version + "\"");
  Value v = Value::dict();
  v["name"] = model;
  Value::List versions;
  for (const auto& x : repo->versions(model)) versions.push_back(Value(x->version()));
  v["versions"] = Value(versions);
  v["platform"] = "ember_graph";
  Value::List in, out;
  for (const TensorSpec& s : mv->inputs()) in.push_back(spec_value(s));
  for (const TensorSpec& s : mv->outputs()) out.push_back(spec_value(s));
  v["inputs"] = Value(in);
  v["outputs"] = Value(out);
  const Value& meta = mv->module().metadata();
  if (meta.is_dict() && meta.contains("labels")) v["labels"] = meta.at("labels");
  return json_reply(v);
}

namespace {

// The KServe v2 JSON tensor list of a request, decoded against the version's specs.
struct DecodedInfer {
  std::vector<Tensor> inputs;
  std::string id;
  bool binary_all = false;
  std::vector<std::pair<std::string, bool>> outputs;  // requested (name, binary); empty = all, JSON
};

DecodedInfer decode_kserve(const http::request<http::string_body>& req, const ModelVersion& mv) {
  const std::string& body = req.body();
  std::string_view header = body, binary;
  const auto hl = req.find("Inference-Header-Content-Length");
  if (hl != req.end()) {
    const std::string v(hl->value());
    if (v.empty() || v.size() > 15 || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }))
      throw BadRequest("Inference-Header-Content-Length must be a byte count, got \"" + v + "\"");
    const size_t n = std::stoull(v);
    if (n > body.size())
      throw BadRequest("Inference-Header-Content-Length is " + v + " but the body has " +
                       std::to_string(body.size()) + " bytes");
    header = std::string_view(body).substr(0, n);
    binary = std::string_view(body).substr(n);
  }
  json::Json doc;
  try {
    doc = json::parse(header, 64, header.size() + 16, nullptr, /*compact_numbers=*/true);
  } catch (const json::ParseError& e) {
    throw BadRequest(std::string("request body is not valid JSON: ") + e.what());
  }
  if (doc.type != json::Json::Type::Object) throw BadRequest("request body must be a JSON object with \"inputs\"");
  DecodedInfer d;
  if (const json::Json* id = doc.find("id"); id && id->type == json::Json::Type::String) d.id = id->s;
  if (const json::Json* params = doc.find("parameters"); params && params->type == json::Json::Type::Object) {
    if (const json::Json* b = params->find("binary_data_output"); b && b->type == json::Json::Type::Bool)
      d.binary_all = b->b;
  }
  const json::Json* inputs = doc.find("inputs");
  if (!inputs || inputs->type != json::Json::Type::Array || inputs->array.empty())
    throw BadRequest("request needs \"inputs\": a non-empty list of {name, shape, datatype, data}");
  const std::vector<TensorSpec>& specs = mv.inputs();
  std::vector<Tensor> by_spec(specs.size());
  size_t offset = 0;
  for (const json::Json& in : inputs->array) {
    if (in.type != json::Json::Type::Object) throw BadRequest("each input must be an object {name, shape, datatype, data}");
    const json::Json* name = in.find("name");
    const json::Json* shape = in.find("shape");
    const json::Json* dtype = in.find("datatype");
    if (!name || name->type != json::Json::Type::String) throw BadRequest("an input has no \"name\" string");
    const std::string what = "input \"" + name->s + "\"";
    if (!shape || shape->type != json::Json::Type::Array) throw BadRequest(what + " needs \"shape\": a list of sizes");
    if (!dtype || dtype->type != json::Json::Type::String) throw BadRequest(what + " needs \"datatype\", e.g. \"FP32\"");
    std::vector<int64_t> sizes;
    if (shape->compact) {
      if (!shape->all_integers) throw BadRequest(what + ": \"shape\" must hold integers");
      sizes = shape->integers;
    } else if (!shape->array.empty()) {
      throw BadRequest(what + ": \"shape\" must hold integers");
    }
    DType dt;
    if (!parse_kserve_dtype(dtype->s, dt))
      throw BadRequest(what + ": unknown datatype \"" + dtype->s +
                       "\"; use BOOL, UINT8, INT8, INT16, INT32, INT64, FP16, BF16, FP32 or FP64");
    size_t k = 0;
    while (k < specs.size() && specs[k].name != name->s) ++k;
    if (k == specs.size()) {
      if (specs.size() == 1 && inputs->array.size() == 1) {
        k = 0;  // one input: its name is a formality
      } else {
        std::string names;
        for (const TensorSpec& s : specs) names += (names.empty() ? "" : ", ") + s.name;
        throw BadRequest(what + " is not an input of model " + mv.name() + " (inputs: " + names + ")");
      }
    }
    if (by_spec[k].defined()) throw BadRequest(what + " is given twice");
    const json::Json* params = in.find("parameters");
    const json::Json* bsize = params && params->type == json::Json::Type::Object ? params->find("binary_data_size") : nullptr;
    if (bsize) {
      if (bsize->type != json::Json::Type::Int || bsize->i < 0) throw BadRequest(what + ": binary_data_size must be >= 0");
      const size_t n = static_cast<size_t>(bsize->i);
      if (offset + n > binary.size())
        throw BadRequest(what + ": binary_data_size " + std::to_string(n) + " runs past the end of the body (" +
                         std::to_string(binary.size() - offset) + " bytes left)");
      by_spec[k] = decode_binary(binary.substr(offset, n), dt, sizes, what);
      offset += n;
    } else {
      const json::Json* data = in.find("data");
      if (!data) throw BadRequest(what + " has neither \"data\" nor parameters.binary_data_size");
      by_spec[k] = decode_json_data(*data, dt, sizes, what);
    }
  }
  if (offset != binary.size())
    throw BadRequest(std::to_string(binary.size() - offset) + " bytes of binary data follow the inputs unclaimed");
  for (size_t k = 0; k < specs.size(); ++k)
    if (!by_spec[k].defined()) throw BadRequest("input \"" + specs[k].name + "\" is missing");
  d.inputs = std::move(by_spec);
  if (const json::Json* outs = doc.find("outputs"); outs && outs->type == json::Json::Type::Array) {
    for (const json::Json& o : outs->array) {
      const json::Json* name = o.type == json::Json::Type::Object ? o.find("name") : nullptr;
      if (!name || name->type != json::Json::Type::String) throw BadRequest("each requested output needs a \"name\"");
      bool bin = d.binary_all;
      if (const json::Json* params = o.find("parameters"); params && params->type == json::Json::Type::Object)
        if (const json::Json* b = params->find("binary_data"); b && b->type == json::Json::Type::Bool) bin = b->b;
      const auto& outs_spec = mv.outputs();
      if (std::none_of(outs_spec.begin(), outs_spec.end(), [&](const TensorSpec& s) { return s.name == name->s; })) {
        std::string names;
        for (const TensorSpec& s : outs_spec) names += (names.empty() ? "" : ", ") + s.name;
        throw BadRequest("output \"" + name->s + "\" is not an output of model " + mv.name() + " (outputs: " + names + ")");
      }
      d.outputs.emplace_back(name->s, bin);
    }
  }
  return d;
}

Reply encode_kserve(const ModelVersion& mv, const DecodedInfer& d, const InferResult& r) {
  Reply rep;
  rep.model = mv.name();
  rep.version = mv.version();
  rep.batch = r.batch_rows;
  if (r.status != 200) return model_error(r.status, r.error, mv.name(), mv.version(), r.batch_rows);
  std::vector<std::pair<size_t, bool>> chosen;
  if (d.outputs.empty()) {
    for (size_t i = 0; i < r.outputs.size(); ++i) chosen.emplace_back(i, d.binary_all);
  } else {
    for (const auto& [name, bin] : d.outputs)
      for (size_t i = 0; i < mv.outputs().size(); ++i)
        if (mv.outputs()[i].name == name) chosen.emplace_back(i, bin);
  }
  std::string js = "{\"model_name\":";
  json::append_string(js, mv.name());
  js += ",\"model_version\":";
  json::append_string(js, mv.version());
  if (!d.id.empty() && json::is_valid_utf8(d.id)) {
    js += ",\"id\":";
    json::append_string(js, d.id);
  }
  js += ",\"outputs\":[";
  std::string binary;
  for (size_t c = 0; c < chosen.size(); ++c) {
    const auto [i, bin] = chosen[c];
    const Tensor& t = r.outputs[i];
    if (c) js += ',';
    js += "{\"name\":";
    json::append_string(js, mv.outputs()[i].name);
    js += ",\"datatype\":\"";
    js += kserve_dtype(t.dtype());
    js += "\",\"shape\":[";
    for (int64_t k = 0; k < t.dim(); ++k) {
      if (k) js += ',';
      js += std::to_string(t.size(k));
    }
    js += "]";
    if (bin) {
      const std::string raw = raw_bytes(t);
      js += ",\"parameters\":{\"binary_data_size\":" + std::to_string(raw.size()) + "}}";
      binary += raw;
    } else {
      js += ",\"data\":";
      append_flat(js, t);
      js += "}";
    }
  }
  js += "]}";
  if (!binary.empty()) {
    rep.headers.emplace_back("Inference-Header-Content-Length", std::to_string(js.size()));
    rep.content_type = "application/octet-stream";
    rep.body = js + binary;
  } else {
    rep.body = std::move(js);
  }
  return rep;
}

}  // namespace

void Server::Impl::kserve_infer(const std::shared_ptr<Session>& s, const std::shared_ptr<Meta>& meta,
                                http::request<http::string_body>& req, const std::string& model,
                                const std::string& version) {
  std::string sticky, why;
  std::shared_ptr<ModelVersion> mv = route(req, model, version, sticky, why);
  if (!mv) return s->reply(meta, error_reply(404, why));
  auto decoded = std::make_shared<DecodedInfer>();
  try {
    *decoded = decode_kserve(req, *mv);
  } catch (const BadRequest& e) {
    return s->reply(meta, model_error(400, e.what(), model, mv->version()));
  }
  if (std::string bad = mv->check_inputs(decoded->inputs); !bad.empty()) {
    return s->reply(meta, model_error(400, bad, model, mv->version()));
  }
  // Note [Who destroys a model version]: callbacks hold a plain pointer. They run on the
  // version's workers, and a version is destroyed only after drain() joined its workers,
  // which first answer everything queued; a shared_ptr here could make a worker drop the
  // last reference and destroy the version it is running in.
  submit_routed(s, meta, mv, model, version, sticky, decoded->inputs, [this, s, meta, decoded](const ModelVersion* v) {
    return [this, s, meta, v, decoded](InferResult r) {
      s->reply(meta, encode_kserve(*v, *decoded, r));
      if (r.status == 200) run_shadow(*v, decoded->inputs, r.outputs);
    };
  });
}

std::shared_ptr<ModelVersion> Server::Impl::route(const http::request<http::string_body>& req,
                                                  const std::string& model, const std::string& version,
                                                  std::string& sticky, std::string& why) {
  const ModelConfig cfg = repo->model_config(model);
  if (!cfg.sticky_header.empty()) {
    const auto it = req.find(cfg.sticky_header);
    if (it != req.end()) sticky = std::string(it->value());
  }
  return repo->resolve(model, version, sticky, why);
}

void Server::Impl::submit_routed(const std::shared_ptr<Session>& s, const std::shared_ptr<Meta>& meta,
                                 std::shared_ptr<ModelVersion> mv, const std::string& model,
                                 const std::string& version, const std::string& sticky,
                                 const std::vector<Tensor>& inputs,
                                 const std::function<std::function<void(InferResult)>(const ModelVersion*)>& make) {
  // A version being hot-swapped or unloaded refuses new work: route the request again, to
  // its replacement (a few tries; the swap itself is quick).
  for (int attempt = 0; attempt < 4; ++attempt) {
    const auto deadline = meta->start + std::chrono::milliseconds(mv->config().timeout_ms);
    std::vector<Tensor> in = inputs;
    std::function<void(InferResult)> done = make(mv.get());
    if (mv->try_submit(in, deadline, done)) return;
    std::string why;
    mv = repo->resolve(model, version, sticky, why);
    if (!mv) return s->reply(meta, error_reply(404, why));
    if (std::string bad = mv->check_inputs(inputs); !bad.empty()) {
      return s->reply(meta, model_error(400, bad, model, mv->version()));
    }
  }
  s->reply(meta, model_error(503, "model " + model + " is being replaced; retry", model, mv->version()));
}

void Server::Impl::run_shadow(const ModelVersion& served, const std::vector<Tensor>& inputs,
                              const std::vector<Tensor>& outputs) {
  std::shared_ptr<ModelVersion> sh = repo->shadow_of(served.name(), served.version());
  if (!sh || !sh->check_inputs(inputs).empty()) return;
  Counter& total = shadow_total->with({sh->name(), sh->version()});
  Counter& disagree = shadow_disagree->with({sh->name(), sh->version()});
  sh->submit(inputs, Clock::now() + std::chrono::milliseconds(sh->config().timeout_ms),
             [outputs, &total, &disagree](InferResult r) {
               if (r.status != 200) return;
               total.inc();
               bool differs = r.outputs.size() != outputs.size();
               for (size_t i = 0; !differs && i < outputs.size(); ++i) {
                 const Tensor& a = outputs[i];
                 const Tensor& b = r.outputs[i];
                 if (a.sizes() != b.sizes()) {
                   differs = true;
                 } else if (a.dim() >= 2 && is_floating_point(a.dtype())) {
                   // Classifier-style outputs: disagreement = a different argmax in any row.
                   differs = !equal(a.argmax(-1), b.argmax(-1));
                 } else if (is_floating_point(a.dtype())) {
                   differs = !allclose(a, b, 1e-3, 1e-4);
                 } else {
                   differs = !equal(a, b);
                 }
               }
               if (differs) disagree.inc();
             });
}

namespace {

// TorchServe-style input: a nested list (JSON), or raw uint8 pixels / an IDX file through
// the artifact's declared normalization.
Tensor torchserve_input(const http::request<http::string_body>& req, const ModelVersion& mv) {
  if (mv.inputs().size() != 1)
    throw BadRequest("/predictions serves models with one input; model " + mv.name() + " has " +
                     std::to_string(mv.inputs().size()) + " (use /v2/models/" + mv.name() + "/infer)");
  const TensorSpec& spec = mv.inputs()[0];
  const std::string& body = req.body();
  const auto ct_it = req.find(http::field::content_type);
  const std::string ct = ct_it == req.end() ? "" : std::string(ct_it->value());
  const bool sample_dims = !spec.shape.empty() && spec.shape[0] < 0;
  int64_t per_sample = 1;
  for (size_t d = sample_dims ? 1 : 0; d < spec.shape.size(); ++d) per_sample *= spec.shape[d];
  if (ct.rfind("application/json", 0) == 0) {
    json::Json doc;
    try {
      doc = json::parse(body, 64, body.size() + 16, nullptr, /*compact_numbers=*/true);
    } catch (const json::ParseError& e) {
      throw BadRequest(std::string("request body is not valid JSON: ") + e.what());
    }
    const json::Json* data = &doc;
    if (doc.type == json::Json::Type::Object) {
      data = doc.find("data");
      if (!data) data = doc.find("instances");
      if (!data) throw BadRequest("a JSON body must be a nested list, or an object with \"data\" or \"instances\"");
    }
    std::vector<int64_t> shape = nested_shape(*data, "input");
    if (sample_dims && shape.size() + 1 == spec.shape.size()) shape.insert(shape.begin(), 1);  // one sample
    return decode_json_data(*data, spec.dtype, shape, "input \"" + spec.name + "\"");
  }
  // Raw bytes: uint8 samples, optionally an IDX file (magic 0x00000803 / 0x00000801).
  std::string_view bytes = body;
  if (bytes.size() >= 4 && bytes[0] == 0 && bytes[1] == 0 && bytes[2] == 0x08) {
    const int dims = static_cast<unsigned char>(bytes[3]);
    const size_t header = 4 + 4 * static_cast<size_t>(dims);
    if (dims < 1 || dims > 4 || bytes.size() < header) throw BadRequest("truncated IDX header");
    bytes = bytes.substr(header);
  }
  if (per_sample <= 0 || bytes.empty() || bytes.size() % static_cast<size_t>(per_sample) != 0)
    throw BadRequest("raw input of " + std::to_string(bytes.size()) + " bytes is not a whole number of samples of " +
                     std::to_string(per_sample) + " uint8 values (input \"" + spec.name + "\")");
  std::vector<int64_t> shape = spec.shape;
  if (sample_dims) shape[0] = static_cast<int64_t>(bytes.size()) / per_sample;
  Tensor x = decode_binary(bytes, kUInt8, shape, "input \"" + spec.name + "\"");
  if (spec.dtype == kUInt8) return x;
  Tensor f = x.to(kFloat32);
  const Value& meta = mv.module().metadata();
  if (meta.is_dict() && meta.contains("normalization")) {
    const Value& n = meta.at("normalization");
    const double scale = n.contains("scale") ? n.at("scale").to_double() : 1.0;
    std::vector<double> mean = n.contains("mean") ? n.at("mean").to_double_list() : std::vector<double>{0.0};
    std::vector<double> sd = n.contains("std") ? n.at("std").to_double_list() : std::vector<double>{1.0};
    if (mean.size() == 1 && sd.size() == 1) {
      f = (f * scale - mean[0]) / sd[0];
    } else if (f.dim() >= 2 && static_cast<int64_t>(mean.size()) == f.size(1) && mean.size() == sd.size()) {
      std::vector<int64_t> bshape(static_cast<size_t>(f.dim()), 1);
      bshape[1] = f.size(1);
      std::vector<float> mf(mean.begin(), mean.end()), sf(sd.begin(), sd.end());
      f = (f * scale - tensor(mf).reshape(bshape)) / tensor(sf).reshape(bshape);
    }
  }
  return f.to(spec.dtype);
}

Reply torchserve_output(const ModelVersion& mv, const InferResult& r, bool batched_request) {
  Reply rep;
  rep.model = mv.name();
  rep.version = mv.version();
  rep.batch = r.batch_rows;
  if (r.status != 200) return model_error(r.status, r.error, mv.name(), mv.version(), r.batch_rows);
  const Tensor& out = r.outputs[0];
  const Value& meta = mv.module().metadata();
  std::string js;
  if (meta.is_dict() && meta.contains("labels") && out.dim() == 2 && is_floating_point(out.dtype()) &&
      static_cast<int64_t>(meta.at("labels").to_list().size()) == out.size(1)) {
    // A classifier: the top five labels with their probabilities, per sample (TorchServe's
    // image classifier answer).
    const auto& labels = meta.at("labels").to_list();
    const Tensor probs = softmax(out.to(kFloat32), 1).contiguous();
    const float* p = probs.data_ptr<float>();
    const int64_t c = out.size(1);
    if (batched_request) js += '[';
    for (int64_t i = 0; i < out.size(0); ++i) {
      std::vector<int64_t> order(static_cast<size_t>(c));
      for (int64_t k = 0; k < c; ++k) order[k] = k;
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p[i * c + a] > p[i * c + b]; });
      if (i) js += ',';
      js += '{';
      for (int64_t k = 0; k < std::min<int64_t>(5, c); ++k) {
        if (k) js += ',';
        json::append_string(js, labels[order[k]].to_string());
        js += ':';
        js += std::to_string(p[i * c + order[k]]);
      }
      js += '}';
    }
    if (batched_request) js += ']';
  } else {
    append_nested(js, batched_request || out.dim() == 0 ? out : out.select(0, 0));
  }
  rep.body = std::move(js);
  return rep;
}

}  // namespace

void Server::Impl::torchserve_predict(const std::shared_ptr<Session>& s, const std::shared_ptr<Meta>& meta,
                                      http::request<http::string_body>& req, const std::string& model,
                                      const std::string& version) {
  std::string sticky, why;
  std::shared_ptr<ModelVersion> mv = route(req, model, version, sticky, why);
  if (!mv) return s->reply(meta, error_reply(404, why));
  Tensor x;
  try {
    x = torchserve_input(req, *mv);
  } catch (const BadRequest& e) {
    return s->reply(meta, model_error(400, e.what(), model, mv->version()));
  }
  if (std::string bad = mv->check_inputs({x}); !bad.empty()) {
    return s->reply(meta, model_error(400, bad, model, mv->version()));
  }
  const bool batched = x.dim() > 0 && x.size(0) > 1;
  // Note [Who destroys a model version]: the callback holds a plain pointer.
  submit_routed(s, meta, mv, model, version, sticky, {x}, [this, s, meta, batched, x](const ModelVersion* v) {
    return [this, s, meta, v, batched, x](InferResult r) {
      s->reply(meta, torchserve_output(*v, r, batched));
      if (r.status == 200) run_shadow(*v, {x}, r.outputs);
    };
  });
}

Reply Server::Impl::describe_model(const std::string& model) {
  const auto versions = repo->versions(model);
  if (versions.empty()) return error_reply(404, "no model named \"" + model + "\"");
  Value v = Value::dict();
  v["model_name"] = model;
  v["default_version"] = repo->default_version(model);
  v["config"] = model_config_to_value(repo->model_config(model));
  Value::List list;
  for (const auto& mv : versions) {
    Value e = Value::dict();
    e["version"] = mv->version();
    e["path"] = mv->path();
    e["workers"] = mv->workers();
    e["queue_length"] = mv->queue_length();
    e["batchable"] = mv->batchable();
    e["worker_restarts"] = static_cast<int64_t>(mv->worker_restarts());
    Value::List in;
    for (const TensorSpec& s : mv->inputs()) in.push_back(spec_value(s));
    e["inputs"] = Value(in);
    list.push_back(std::move(e));
  }
  v["versions"] = Value(list);
  return json_reply(v);
}

void Server::Impl::route_management(const std::shared_ptr<Session>& s, const std::shared_ptr<Meta>& meta,
                                    http::request<http::string_body>& req) {
  const std::string_view target = req.target();
  const size_t qpos = target.find('?');
  const std::vector<std::string> p = split_path(target.substr(0, qpos));
  const auto q = parse_query(qpos == std::string_view::npos ? std::string_view() : target.substr(qpos + 1));
  const auto method = req.method();
  auto answer = [&](Reply r) { s->reply(meta, std::move(r)); };
  if (p.size() == 1 && p[0] == "metrics" && method == http::verb::get) {
    Reply r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = render_metrics();
    return answer(std::move(r));
  }
  if (opt.management_auth && !authorized(req, opt.management_token)) return answer(unauthorized("management"));
  if (p.empty() || p[0] != "models") return answer(error_reply(404, "unknown route; management routes are under /models"));
  if (p.size() == 1 && method == http::verb::get) {
    Value list = Value::list();
    for (const std::string& m : repo->models()) {
      Value e = Value::dict();
      e["modelName"] = m;
      e["defaultVersion"] = repo->default_version(m);
      Value::List vs;
      for (const auto& mv : repo->versions(m)) vs.push_back(Value(mv->version()));
      e["versions"] = Value(vs);
      list.to_list().push_back(std::move(e));
    }
    Value v = Value::dict();
    v["models"] = list;
    return answer(json_reply(v));
  }
  if (p.size() == 1 && method == http::verb::post) {
    // Register: POST /models?url=<artifact>&model_name=<m>&version=<v>
    auto need = [&](const char* k) {
      auto it = q.find(k);
      if (it == q.end() || it->second.empty())
        throw BadRequest(std::string("register needs the query parameter ") + k +
                         " (POST /models?url=<artifact path>&model_name=<name>&version=<version>)");
      return it->second;
    };
    std::string url = need("url");
    const std::string name = need("model_name");
    const std::string version = q.count("version") ? q.at("version") : "1";
    if (!url.empty() && url[0] != '/' && !repo->store().empty()) url = repo->store() + "/" + url;
    int workers = 0;
    if (q.count("min_worker")) {
      const std::string& qs = q.at("min_worker");
      if (qs.empty() || qs.size() > 2 || !std::all_of(qs.begin(), qs.end(), [](char c) { return c >= '0' && c <= '9'; }))
        throw BadRequest("min_worker must be a number in [1, 64]");
      workers = std::stoi(qs);
    }
    // Loading reads and verifies the artifact, and a hot swap drains the old version:
    // both off the I/O threads, which keep serving meanwhile.
    std::thread([this, s, meta, name, version, url, workers] {
      try {
        repo->register_version(name, version, url);
        if (workers > 0) repo->scale(name, version, workers);
      } catch (const std::exception& e) {
        return s->reply(meta, error_reply(400, e.what()));
      }
      Value v = Value::dict();
      v["status"] = "Model \"" + name + "\" version " + version + " registered";
      s->reply(meta, json_reply(v));
    }).detach();
    return;
  }
  if (p.size() < 2) return answer(error_reply(405, "use GET or POST on /models"));
  const std::string& model = p[1];
  if (!repo->has_model(model)) return answer(error_reply(404, "no model named \"" + model + "\""));
  if (p.size() == 2 && method == http::verb::get) return answer(describe_model(model));
  if (p.size() == 3 && p[2] == "traffic" && method == http::verb::put) {
    // Body {"1": 90, "2": 10}; {} clears the split.
    const ModelConfig c = parse_model_config(
        [&] {
          try {
            Value body = Value::dict();
            body["traffic"] = to_value(json::parse(req.body(), 8, 4096));
            return body;
          } catch (const json::ParseError& e) {
            throw BadRequest(std::string("traffic body is not valid JSON: ") + e.what());
          }
        }(),
        "traffic");
    repo->set_traffic(model, c.traffic);
    return answer(describe_model(model));
  }
  if (p.size() == 3 && p[2] == "shadow" && method == http::verb::put) {
    repo->set_shadow(model, q.count("version") ? q.at("version") : "");
    return answer(describe_model(model));
  }
  if ((p.size() == 2 || p.size() == 3) && method == http::verb::put && q.count("min_worker")) {
    const std::string& qs = q.at("min_worker");
    if (qs.empty() || qs.size() > 3 || !std::all_of(qs.begin(), qs.end(), [](char c) { return c >= '0' && c <= '9'; }))
      throw BadRequest("min_worker must be a number in [1, 64]");
    repo->scale(model, p.size() == 3 ? p[2] : "", std::stoi(qs));
    return answer(describe_model(model));
  }
  if (p.size() == 4 && p[3] == "set-default" && method == http::verb::put) {
    repo->set_default(model, p[2]);
    return answer(describe_model(model));
  }
  if (p.size() == 3 && method == http::verb::delete_) {
    const std::string version = p[2];
    // Unregistering drains the version's queue: do it off the I/O thread.
    std::thread([this, s, meta, model, version] {
      const bool ok = repo->unregister(model, version);
      if (!ok) return s->reply(meta, error_reply(404, "model \"" + model + "\" has no version \"" + version + "\""));
      Value v = Value::dict();
      v["status"] = "Model \"" + model + "\" version " + version + " unregistered";
      s->reply(meta, json_reply(v));
    }).detach();
    return;
  }
  answer(error_reply(404, "unknown management route " + std::string(target.substr(0, qpos))));
}

Reply Server::Impl::status_json() {
  Value v = Value::dict();
  v["server"] = "ember-serve";
  v["draining"] = draining.load();
  v["inflight"] = inflight.load();
  v["connections"] = connections.load();
  Value::List models;
  for (const std::string& m : repo->models()) {
    Value e = Value::dict();
    e["name"] = m;
    e["default_version"] = repo->default_version(m);
    const ModelConfig c = repo->model_config(m);
    Value split = Value::dict();
    for (const auto& [ver, w] : c.traffic) split[ver] = w;
    e["traffic"] = split;
    if (!c.shadow_version.empty()) e["shadow_version"] = c.shadow_version;
    Value::List vs;
    for (const auto& mv : repo->versions(m)) {
      Value x = Value::dict();
      x["version"] = mv->version();
      Histogram& h = latency->with({m, mv->version()});
      x["requests"] = static_cast<int64_t>(h.count());
      x["p50_ms"] = h.quantile(0.5) * 1e3;
      x["p99_ms"] = h.quantile(0.99) * 1e3;
      x["qps"] = rate_of(m, mv->version()).rate();
      x["queue_length"] = mv->queue_length();
      x["workers"] = mv->workers();
      if (mv->drift().has_reference()) {
        const Value d = mv->drift().report();
        if (d.contains("psi")) x["drift_psi"] = d.at("psi");
      }
      vs.push_back(std::move(x));
    }
    e["versions"] = Value(vs);
    models.push_back(std::move(e));
  }
  v["models"] = Value(models);
  return json_reply(v);
}

std::string Server::Impl::render_metrics() {
  inflight_gauge->set(static_cast<double>(inflight.load()));
  connections_gauge->set(static_cast<double>(connections.load()));
  rss_gauge->set(resident_bytes());
  for (const auto& mv : repo->all_versions()) {
    if (!mv->drift().has_reference()) continue;
    const Value d = mv->drift().report();
    if (!d.contains("mean_shift")) continue;
    const std::vector<std::string> l{mv->name(), mv->version()};
    if (d.contains("psi")) drift_psi->with(l).set(d.at("psi").to_double());
    drift_mean_shift->with(l).set(d.at("mean_shift").to_double());
    drift_std_ratio->with(l).set(d.at("std_ratio").to_double());
  }
  return metrics.render();
}

// ---------------------------------------------------------------- lifecycle

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Server::~Server() {
  shutdown();
  if (impl_->shutdown_thread.joinable()) impl_->shutdown_thread.join();
}

void Server::start() {
  Impl& s = *impl_;
  set_log_destination(s.opt.access_log);
  s.requests = &s.metrics.counter("ember_requests_total", "Inference requests answered, by status code",
                                  {"model", "version", "code"});
  s.latency = &s.metrics.histogram("ember_request_duration_seconds",
                                   "Latency of answered (2xx) inference requests, from the last byte read to the answer written",
                                   {"model", "version"}, latency_buckets());
  s.http_responses = &s.metrics.counter("ember_http_responses_total",
                                        "Answers to requests that named no model (health, metrics, errors)", {"code"});
  s.shadow_total = &s.metrics.counter("ember_shadow_requests_total", "Requests copied to a shadow version",
                                      {"model", "version"});
  s.shadow_disagree = &s.metrics.counter("ember_shadow_disagreements_total",
                                         "Shadow answers that disagree with the served answer", {"model", "version"});
  s.drift_psi = &s.metrics.gauge("ember_drift_psi", "Population stability index of the inputs against the reference",
                                 {"model", "version"});
  s.drift_mean_shift = &s.metrics.gauge("ember_drift_mean_shift",
                                        "Shift of the input mean in reference standard deviations", {"model", "version"});
  s.drift_std_ratio = &s.metrics.gauge("ember_drift_std_ratio", "Input std over the reference std",
                                       {"model", "version"});
  s.inflight_gauge = &s.metrics.gauge("ember_inflight_requests", "Requests read and not yet answered", {}).with({});
  s.connections_gauge = &s.metrics.gauge("ember_open_connections", "Open client connections", {}).with({});
  s.rss_gauge = &s.metrics.gauge("ember_process_resident_memory_bytes", "Resident memory of the server", {}).with({});

  s.repo = std::make_unique<Repository>(s.opt.model_store, s.opt.model_defaults, s.opt.model_configs, s.metrics);
  if (s.opt.load_models) s.repo->load_all();
  for (const auto& [name, path] : s.opt.models) s.repo->register_version(name, "1", path);
  int workers = 0;
  for (const auto& mv : s.repo->all_versions()) workers += mv->workers();
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Note [Serving threads]: the workers' intra-op teams together get the cores the I/O
  // threads leave, never more: an OpenMP team whose threads are descheduled waits at every
  // barrier (4x less throughput measured with 2-thread teams next to the load generator).
  const int intra = s.opt.intra_op_threads > 0
                        ? s.opt.intra_op_threads
                        : std::max(1, (cores - std::max(1, s.opt.io_threads)) / std::max(1, workers));
  set_num_threads(intra);
  if (s.opt.management_auth && s.opt.management_token.empty()) s.opt.management_token = random_hex(16);

  auto bind = [&](tcp::acceptor& acc, const std::string& host, int port, const char* what) {
    beast::error_code ec;
    const auto addr = asio::ip::make_address(host, ec);
    EMBER_CHECK(!ec, "[ember-serve] bad ", what, " host \"", host, "\": ", ec.message());
    const tcp::endpoint ep(addr, static_cast<unsigned short>(port));
    acc.open(ep.protocol(), ec);
    if (!ec) acc.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acc.bind(ep, ec);
    if (!ec) acc.listen(asio::socket_base::max_listen_connections, ec);
    EMBER_CHECK(!ec, "[ember-serve] cannot listen on ", host, ":", port, " (", what, "): ", ec.message());
    return static_cast<int>(acc.local_endpoint().port());
  };
  s.infer_port = bind(s.infer_acc, s.opt.inference_host, s.opt.inference_port, "inference");
  s.mgmt_port = bind(s.mgmt_acc, s.opt.management_host, s.opt.management_port, "management");
  s.accept(s.infer_acc, false);
  s.accept(s.mgmt_acc, true);
  s.work.emplace(asio::make_work_guard(s.ioc));
  for (int i = 0; i < std::max(1, s.opt.io_threads); ++i) s.io_threads.emplace_back([&s] { s.ioc.run(); });
  std::vector<LogField> f{log_num("inference_port", s.infer_port), log_num("management_port", s.mgmt_port),
                          log_num("models", static_cast<double>(s.repo->models().size())),
                          log_num("intra_op_threads", intra)};
  if (s.opt.management_auth) f.push_back({"management_token", s.opt.management_token});
  log_event("listening", f);
}

int Server::inference_port() const { return impl_->infer_port; }
int Server::management_port() const { return impl_->mgmt_port; }
const std::string& Server::management_token() const { return impl_->opt.management_token; }

void Server::Impl::do_shutdown() {
  draining = true;
  asio::post(ioc, [this] {
    beast::error_code ec;
    infer_acc.close(ec);
    mgmt_acc.close(ec);
  });
  const auto until = Clock::now() + std::chrono::milliseconds(opt.drain_timeout_ms);
  while (inflight.load() > 0 && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const int64_t left = inflight.load();
  if (repo) repo->drain_all();
  work.reset();
  ioc.stop();
  for (std::thread& t : io_threads)
    if (t.joinable()) t.join();
  log_event("stopped", {log_num("unanswered", static_cast<double>(left))});
  {
    std::lock_guard<std::mutex> lock(done_mu);
    done = true;
  }
  done_cv.notify_all();
}

void Server::shutdown() {
  Impl& s = *impl_;
  if (s.io_threads.empty()) return;  // never started
  if (!s.stop_started.exchange(true)) {
    s.do_shutdown();
    return;
  }
  wait();
}

void Server::wait() {
  std::unique_lock<std::mutex> lock(impl_->done_mu);
  impl_->done_cv.wait(lock, [&] { return impl_->done; });
}

void Server::run_until_signal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  int sig = 0;
  sigwait(&set, &sig);
  log_event("signal", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
  shutdown();
}

}  // namespace ember::serve
