// ember-serve: serves ember model artifacts over HTTP (docs/serve.md).
//
//   ember-serve --model-store models/ [--config serve.json] [--models name=file.ember,...]
//               [--inference-address 127.0.0.1:8080] [--management-address 127.0.0.1:8081]
//               [--no-management-auth] [--access-log FILE]
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "ember/core/error.h"
#include "ember/serve/server.h"

namespace {

void usage(FILE* out) {
  std::fputs(
      "usage: ember-serve [--model-store DIR] [--config serve.json] [--models name=file.ember,...]\n"
      "                   [--inference-address HOST:PORT] [--management-address HOST:PORT]\n"
      "                   [--no-management-auth] [--access-log FILE|-]\n"
      "Serves <store>/<model>/<version>/model.ember artifacts: TorchServe's /predictions and management\n"
      "API, KServe v2 (/v2/models/{m}/infer), /metrics (Prometheus), / (status page).\n"
      "SIGTERM or SIGINT: stop accepting, answer what is in flight, exit 0. See docs/serve.md.\n",
      out);
}

void parse_address(const std::string& s, std::string& host, int& port) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos) throw ember::Error("[ember-serve] an address must be HOST:PORT, got \"" + s + "\"");
  host = s.substr(0, colon);
  port = std::stoi(s.substr(colon + 1));
}

}  // namespace

int main(int argc, char** argv) {
  // The signals are taken by run_until_signal (sigwait): block them before any thread starts.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  try {
    ember::serve::ServerOptions opt;
    std::string config, infer_addr, mgmt_addr, access_log;
    bool no_auth = false, have_log = false;
    std::vector<std::pair<std::string, std::string>> models;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw ember::Error("[ember-serve] " + a + " needs a value");
        return argv[++i];
      };
      if (a == "--model-store") {
        opt.model_store = value();
      } else if (a == "--config") {
        config = value();
      } else if (a == "--models") {
        std::string list = value();
        size_t start = 0;
        while (start <= list.size()) {
          size_t comma = list.find(',', start);
          if (comma == std::string::npos) comma = list.size();
          const std::string item = list.substr(start, comma - start);
          const size_t eq = item.find('=');
          if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
            throw ember::Error("[ember-serve] --models takes name=file.ember[,name=file.ember], got \"" + item + "\"");
          models.emplace_back(item.substr(0, eq), item.substr(eq + 1));
          start = comma + 1;
        }
      } else if (a == "--inference-address") {
        infer_addr = value();
      } else if (a == "--management-address") {
        mgmt_addr = value();
      } else if (a == "--no-management-auth") {
        no_auth = true;
      } else if (a == "--access-log") {
        access_log = value();
        have_log = true;
      } else if (a == "-h" || a == "--help") {
        usage(stdout);
        return 0;
      } else {
        usage(stderr);
        std::fprintf(stderr, "ember-serve: unknown option %s\n", a.c_str());
        return 2;
      }
    }
    if (!config.empty()) opt = ember::serve::parse_server_config(config, opt);
    if (!infer_addr.empty()) parse_address(infer_addr, opt.inference_host, opt.inference_port);
    if (!mgmt_addr.empty()) parse_address(mgmt_addr, opt.management_host, opt.management_port);
    if (no_auth) opt.management_auth = false;
    if (have_log) opt.access_log = access_log;
    opt.models.insert(opt.models.end(), models.begin(), models.end());
    if (opt.model_store.empty() && opt.models.empty()) {
      usage(stderr);
      std::fputs("ember-serve: give --model-store or --models\n", stderr);
      return 2;
    }
    ember::serve::Server server(opt);
    server.start();
    server.run_until_signal();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ember-serve: %s\n", e.what());
    return 1;
  }
}
