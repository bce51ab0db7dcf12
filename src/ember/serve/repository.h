#pragma once
// The model repository of ember-serve: models by name, each with versions (ModelVersion),
// a default version, a traffic split (canary / A-B, optionally sticky by a request
// header) and an optional shadow version (docs/serve.md).
//
// On disk: <store>/<model>/<version>/model.ember, with optional settings in
// <store>/<model>/config.json. Versions compare as integers when both are numbers.

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ember/serve/model.h"

namespace ember::serve {

struct VersionLess {
  bool operator()(const std::string& a, const std::string& b) const;
};

class Repository {
 public:
  Repository(std::string store, ModelConfig defaults, std::map<std::string, ModelConfig> configs, Registry& metrics);

  // Loads every <store>/<model>/<version>/model.ember. Errors name the file.
  void load_all();
  // Loads one version from an artifact path (replacing a loaded one of the same name and
  // version: a hot swap, the old one drains its queue). Returns the new version.
  std::shared_ptr<ModelVersion> register_version(const std::string& model, const std::string& version,
                                                 const std::string& path);
  // Removes a version; false if it was not there. The removed version finishes its queue.
  bool unregister(const std::string& model, const std::string& version);
  // Routing: the version to run for a request. `version` "" means: by the traffic split
  // (sticky when sticky_value is set) or the default. Loads on demand from the store when
  // the model or version is not loaded yet. nullptr with `why` set when there is none.
  std::shared_ptr<ModelVersion> resolve(const std::string& model, const std::string& version,
                                        const std::string& sticky_value, std::string& why);
  std::shared_ptr<ModelVersion> find(const std::string& model, const std::string& version) const;
  std::shared_ptr<ModelVersion> shadow_of(const std::string& model, const std::string& served_version) const;

  // Management. Each throws ember::Error (a 400/404 body) naming what is wrong.
  void set_default(const std::string& model, const std::string& version);
  void set_traffic(const std::string& model, std::vector<std::pair<std::string, double>> weights);
  void set_shadow(const std::string& model, const std::string& version);
  void scale(const std::string& model, const std::string& version, int workers);

  bool has_model(const std::string& model) const;
  std::vector<std::string> models() const;
  std::vector<std::shared_ptr<ModelVersion>> versions(const std::string& model) const;
  std::vector<std::shared_ptr<ModelVersion>> all_versions() const;
  std::string default_version(const std::string& model) const;
  ModelConfig model_config(const std::string& model) const;
  // Stops every version (graceful shutdown).
  void drain_all();
  const std::string& store() const { return store_; }
  Registry& metrics() { return metrics_; }

 private:
  struct Model {
    std::map<std::string, std::shared_ptr<ModelVersion>, VersionLess> versions;
    ModelConfig config;
  };
  ModelConfig config_for(const std::string& model) const;
  std::string default_locked(const Model& m) const;
  bool load_from_store(const std::string& model, const std::string& version);

  std::string store_;
  ModelConfig defaults_;
  std::map<std::string, ModelConfig> configs_;
  Registry& metrics_;
  mutable std::mutex mu_;
  std::map<std::string, Model> models_;
};

}  // namespace ember::serve
