#include "ember/serve/repository.h"

#include <algorithm>
#include <filesystem>
#include <random>

#include "ember/core/check.h"
#include "ember/core/error.h"
#include "ember/serve/codec.h"
#include "ember/serve/log.h"

namespace ember::serve {
namespace fs = std::filesystem;

namespace {
bool all_digits(const std::string& s) {
  return !s.empty() && s.size() < 19 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Names become paths and metric labels: keep them to a safe alphabet.
void check_name(const std::string& s, const char* what) {
  EMBER_CHECK(!s.empty() && s.size() <= 128 && s != "." && s != ".." &&
                  std::all_of(s.begin(), s.end(),
                              [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; }),
              "[ember-serve] ", what, " \"", s, "\" must be 1-128 characters of letters, digits, '-', '_' or '.'");
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}
}  // namespace

bool VersionLess::operator()(const std::string& a, const std::string& b) const {
  if (all_digits(a) && all_digits(b)) return std::stoll(a) < std::stoll(b);
  return a < b;
}

Repository::Repository(std::string store, ModelConfig defaults, std::map<std::string, ModelConfig> configs,
                       Registry& metrics)
    : store_(std::move(store)), defaults_(std::move(defaults)), configs_(std::move(configs)), metrics_(metrics) {}

ModelConfig Repository::config_for(const std::string& model) const {
  auto it = configs_.find(model);
  ModelConfig c = it != configs_.end() ? it->second : defaults_;
  if (!store_.empty()) {
    const fs::path p = fs::path(store_) / model / "config.json";
    std::error_code ec;
    if (fs::exists(p, ec)) c = parse_model_config(read_json_file(p.string()), p.string(), c);
  }
  return c;
}

void Repository::load_all() {
  if (store_.empty()) return;
  std::error_code ec;
  EMBER_CHECK(fs::is_directory(store_, ec), "[ember-serve] the model store ", store_, " is not a directory");
  std::vector<std::pair<std::string, std::string>> found;
  for (const auto& m : fs::directory_iterator(store_)) {
    if (!m.is_directory()) continue;
    for (const auto& v : fs::directory_iterator(m.path())) {
      if (v.is_directory() && fs::exists(v.path() / "model.ember"))
        found.emplace_back(m.path().filename().string(), v.path().filename().string());
    }
  }
  std::sort(found.begin(), found.end());
  for (const auto& [m, v] : found) register_version(m, v, (fs::path(store_) / m / v / "model.ember").string());
}

std::shared_ptr<ModelVersion> Repository::register_version(const std::string& model, const std::string& version,
                                                           const std::string& path) {
  check_name(model, "model name");
  check_name(version, "version");
  ModelConfig cfg;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = models_.find(model);
    cfg = it != models_.end() ? it->second.config : ModelConfig();
    if (it == models_.end()) cfg = config_for(model);
  }
  // Load outside the lock: requests keep flowing to the loaded versions meanwhile.
  auto mv = std::make_shared<ModelVersion>(model, version, path, cfg, metrics_);
  std::shared_ptr<ModelVersion> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Model& m = models_[model];
    if (m.versions.empty()) m.config = cfg;
    auto it = m.versions.find(version);
    if (it != m.versions.end()) old = it->second;
    m.versions[version] = mv;
  }
  log_event("model_loaded", {{"model", model}, {"version", version}, {"path", path}});
  if (old) old->drain();  // finishes what it had queued; in-flight holders keep it alive
  return mv;
}

bool Repository::unregister(const std::string& model, const std::string& version) {
  std::shared_ptr<ModelVersion> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = models_.find(model);
    if (it == models_.end()) return false;
    auto v = it->second.versions.find(version);
    if (v == it->second.versions.end()) return false;
    old = v->second;
    it->second.versions.erase(v);
    if (it->second.config.default_version == version) it->second.config.default_version.clear();
    if (it->second.config.shadow_version == version) it->second.config.shadow_version.clear();
    auto& t = it->second.config.traffic;
    t.erase(std::remove_if(t.begin(), t.end(), [&](const auto& p) { return p.first == version; }), t.end());
    if (it->second.versions.empty()) models_.erase(it);
  }
  old->drain();
  log_event("model_unloaded", {{"model", model}, {"version", version}});
  return true;
}

bool Repository::load_from_store(const std::string& model, const std::string& version) {
  if (store_.empty()) return false;
  try {
    check_name(model, "model name");
    if (!version.empty()) check_name(version, "version");
  } catch (const Error&) {
    return false;
  }
  std::error_code ec;
  const fs::path dir = fs::path(store_) / model;
  if (!fs::is_directory(dir, ec)) return false;
  bool loaded = false;
  for (const auto& v : fs::directory_iterator(dir, ec)) {
    const std::string name = v.path().filename().string();
    if (!version.empty() && name != version) continue;
    if (!fs::exists(v.path() / "model.ember", ec) || find(model, name)) continue;
    register_version(model, name, (v.path() / "model.ember").string());
    loaded = true;
  }
  return loaded;
}

std::string Repository::default_locked(const Model& m) const {
  if (!m.config.default_version.empty() && m.versions.count(m.config.default_version)) return m.config.default_version;
  return m.versions.empty() ? "" : m.versions.rbegin()->first;
}

std::shared_ptr<ModelVersion> Repository::find(const std::string& model, const std::string& version) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(model);
  if (it == models_.end()) return nullptr;
  auto v = it->second.versions.find(version.empty() ? default_locked(it->second) : version);
  return v == it->second.versions.end() ? nullptr : v->second;
}

std::shared_ptr<ModelVersion> Repository::resolve(const std::string& model, const std::string& version,
                                                  const std::string& sticky_value, std::string& why) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = models_.find(model);
      if (it != models_.end()) {
        const Model& m = it->second;
        std::string chosen = version;
        if (chosen.empty() && !m.config.traffic.empty()) {
          double total = 0;
          for (const auto& [v, w] : m.config.traffic)
            if (m.versions.count(v)) total += w;
          if (total > 0) {
            double u;
            if (!sticky_value.empty()) {
              u = static_cast<double>(fnv1a(sticky_value) % 1000003) / 1000003.0;
            } else {
              thread_local std::mt19937_64 rng{std::random_device{}()};
              u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
            }
            double acc = 0;
            for (const auto& [v, w] : m.config.traffic) {
              if (!m.versions.count(v) || w <= 0) continue;
              acc += w / total;
              chosen = v;
              if (u < acc) break;
            }
          }
        }
        if (chosen.empty()) chosen = default_locked(m);
        auto v = m.versions.find(chosen);
        if (v != m.versions.end()) return v->second;
        if (attempt == 1) {
          std::string have;
          for (const auto& [name, _] : m.versions) have += (have.empty() ? "" : ", ") + name;
          why = "model \"" + model + "\" has no version \"" + chosen + "\" (loaded: " + have + ")";
          return nullptr;
        }
      } else if (attempt == 1) {
        std::string have;
        for (const auto& [name, _] : models_) have += (have.empty() ? "" : ", ") + name;
        why = "no model named \"" + model + "\" (loaded: " + (have.empty() ? "none" : have) + ")";
        return nullptr;
      }
    }
    if (!load_from_store(model, version)) {
      if (attempt == 0) continue;
    }
  }
  why = "no model named \"" + model + "\"";
  return nullptr;
}

std::shared_ptr<ModelVersion> Repository::shadow_of(const std::string& model, const std::string& served) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(model);
  if (it == models_.end() || it->second.config.shadow_version.empty() || it->second.config.shadow_version == served)
    return nullptr;
  auto v = it->second.versions.find(it->second.config.shadow_version);
  return v == it->second.versions.end() ? nullptr : v->second;
}

void Repository::set_default(const std::string& model, const std::string& version) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(model);
  EMBER_CHECK(it != models_.end(), "[ember-serve] no model named \"", model, "\"");
  EMBER_CHECK(it->second.versions.count(version), "[ember-serve] model \"", model, "\" has no version \"", version,
              "\"");
  it->second.config.default_version = version;
}

void Repository::set_traffic(const std::string& model, std::vector<std::pair<std::string, double>> weights) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(model);
  EMBER_CHECK(it != models_.end(), "[ember-serve] no model named \"", model, "\"");
  for (const auto& [v, w] : weights) {
    EMBER_CHECK(it->second.versions.count(v), "[ember-serve] traffic names version \"", v, "\" that model \"", model,
                "\" does not have");
    EMBER_CHECK(w >= 0, "[ember-serve] traffic weight of version \"", v, "\" must be >= 0");
  }
  it->second.config.traffic = std::move(weights);
}

void Repository::set_shadow(const std::string& model, const std::string& version) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(model);
  EMBER_CHECK(it != models_.end(), "[ember-serve] no model named \"", model, "\"");
  EMBER_CHECK(version.empty() || it->second.versions.count(version), "[ember-serve] model \"", model,
              "\" has no version \"", version, "\"");
  it->second.config.shadow_version = version;
}

void Repository::scale(const std::string& model, const std::string& version, int workers) {
  EMBER_CHECK(workers >= 1 && workers <= 64, "[ember-serve] workers must be in [1, 64], got ", workers);
  std::vector<std::shared_ptr<ModelVersion>> targets;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = models_.find(model);
    EMBER_CHECK(it != models_.end(), "[ember-serve] no model named \"", model, "\"");
    for (const auto& [v, mv] : it->second.versions)
      if (version.empty() || v == version) targets.push_back(mv);
    EMBER_CHECK(!targets.empty(), "[ember-serve] model \"", model, "\" has no version \"", version, "\"");
    if (version.empty()) it->second.config.workers = workers;
  }
  for (auto& mv : targets) mv->scale(workers);
}

bool Repository::has_model(const std::string& model) const {
  std::lock_guard<std::mutex> lock(mu_);
  return models_.count(model) > 0;
}

std::vector<std::string> Repository::models() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, _] : models_) out.push_back(name);
  return out;
}

std::vector<std::shared_ptr<ModelVersion>> Repository::versions(const std::string& model) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<ModelVersion>> out;
  auto it = models_.find(model);
  if (it != models_.end())
    for (const auto& [_, mv] : it->second.versions) out.push_back(mv);
  return out;
}

std::vector<std::shared_ptr<ModelVersion>> Repository::all_versions() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<ModelVersion>> out;
  for (const auto& [_, m] : models_)
    for (const auto& [__, mv] : m.versions) out.push_back(mv);
  return out;
}

std::string Repository::default_version(const std::string& model) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(model);
  return it == models_.end() ? "" : default_locked(it->second);
}

ModelConfig Repository::model_config(const std::string& model) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(model);
  return it == models_.end() ? ModelConfig() : it->second.config;
}

void Repository::drain_all() {
  for (auto& mv : all_versions()) mv->drain();
}

}  // namespace ember::serve
