#pragma once
// ember-serve: the model server (docs/serve.md). TorchServe's inference and management
// APIs and KServe's v2 REST protocol (JSON and binary tensors) over Boost.Beast, with
// dynamic batching, bounded queues, Prometheus metrics, JSON access logs, canary and
// shadow routing, drift statistics and graceful shutdown.
//
//   serve::ServerOptions opt = serve::parse_server_config("serve.json");
//   opt.model_store = "models";
//   serve::Server server(opt);
//   server.start();                 // binds, loads the store, starts serving
//   server.run_until_signal();      // SIGTERM / SIGINT: drain and return

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/serve/model.h"

namespace ember::serve {

struct ServerOptions {
  std::string model_store;                                  // "" = no store
  std::vector<std::pair<std::string, std::string>> models;  // extra name=artifact (version "1")
  std::string inference_host = "127.0.0.1";
  int inference_port = 8080;  // 0 = any free port
  std::string management_host = "127.0.0.1";
  int management_port = 8081;
  int64_t max_request_bytes = 64 << 20;  // bodies above: 413
  int64_t max_header_bytes = 16 << 10;   // headers above: 431
  int64_t request_timeout_ms = 10000;    // a request must arrive whole within this (slowloris)
  int64_t idle_timeout_ms = 60000;       // keep-alive connections idle longer are closed
  int64_t max_connections = 4096;        // more are closed at once
  int io_threads = 1;
  int intra_op_threads = 0;              // 0: (cores - io_threads) / total workers, at least 1
  int64_t drain_timeout_ms = 30000;      // graceful shutdown waits this long for in-flight requests
  bool load_models = true;               // load the whole store at start-up (else on first request)
  bool management_auth = true;           // bearer token on the management API
  std::string management_token;          // "" with auth on: generated at start-up and logged
  std::string inference_token;           // "" = inference needs no token
  std::string access_log = "-";          // "-" stdout, "" off, or a file
  ModelConfig model_defaults;
  std::map<std::string, ModelConfig> model_configs;
};

// Reads serve.json over `base`; unknown keys and wrong types throw ember::Error naming
// the key and the accepted ones.
ServerOptions parse_server_config(const std::string& path, ServerOptions base = {});

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Loads the models, binds both ports and starts the I/O threads. Throws ember::Error.
  void start();
  int inference_port() const;
  int management_port() const;
  const std::string& management_token() const;
  // Graceful: stop accepting, wait for in-flight requests (up to drain_timeout_ms),
  // drain the model queues, stop. Safe to call from any thread, more than once.
  void shutdown();
  // Blocks until SIGTERM or SIGINT, then shuts down.
  void run_until_signal();
  // Blocks until shutdown() finished.
  void wait();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::serve
