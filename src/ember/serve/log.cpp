#include "ember/serve/log.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

#include "ember/serialize/json.h"

namespace ember::serve {
namespace {
std::mutex g_mu;
FILE* g_out = stdout;
bool g_owned = false;

std::string iso_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

void append_safe_string(std::string& out, const std::string& s) {
  if (json::is_valid_utf8(s)) {
    json::append_string(out, s);
  } else {
    std::string clean;
    for (unsigned char c : s) clean += c < 0x80 ? static_cast<char>(c) : '?';
    json::append_string(out, clean);
  }
}
}  // namespace

void set_log_destination(const std::string& where) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_owned && g_out) std::fclose(g_out);
  g_owned = false;
  if (where == "-") {
    g_out = stdout;
  } else if (where.empty()) {
    g_out = nullptr;
  } else {
    g_out = std::fopen(where.c_str(), "a");
    g_owned = g_out != nullptr;
    if (!g_out) g_out = stderr;
  }
}

LogField log_num(std::string key, double v) {
  std::string s;
  if (v == static_cast<double>(static_cast<int64_t>(v)) && v > -1e15 && v < 1e15) {
    json::append_int(s, static_cast<int64_t>(v));
  } else {
    json::append_double(s, v);
  }
  return {std::move(key), std::move(s), true};
}

void log_event(const std::string& type, const std::vector<LogField>& fields) {
  std::string line = "{\"ts\":\"" + iso_now() + "\",\"type\":";
  append_safe_string(line, type);
  for (const LogField& f : fields) {
    line += ',';
    append_safe_string(line, f.key);
    line += ':';
    if (f.raw) {
      line += f.value;
    } else {
      append_safe_string(line, f.value);
    }
  }
  line += "}\n";
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_out) return;
  std::fwrite(line.data(), 1, line.size(), g_out);
  std::fflush(g_out);
}

void log_event(const std::string& type, std::initializer_list<std::pair<const char*, std::string>> fields) {
  std::vector<LogField> f;
  for (const auto& [k, v] : fields) f.push_back({k, v, false});
  log_event(type, f);
}

}  // namespace ember::serve
