#pragma once
// ember-serve's structured logs: one JSON object per line (docs/serve.md), access logs
// ("type": "access") and events ("type": "worker_restart", "model_loaded", ...).

#include <string>
#include <utility>
#include <vector>

namespace ember::serve {

// Where log lines go: "-" (stdout, the default), "" (nowhere) or a file path (appended).
void set_log_destination(const std::string& where);
// A field's value is written as a JSON string unless `raw` holds a JSON number/literal.
struct LogField {
  std::string key, value;
  bool raw = false;
};
LogField log_num(std::string key, double v);
// Writes {"ts": "...", "type": type, fields...} as one line.
void log_event(const std::string& type, const std::vector<LogField>& fields);
void log_event(const std::string& type, std::initializer_list<std::pair<const char*, std::string>> fields);

}  // namespace ember::serve
