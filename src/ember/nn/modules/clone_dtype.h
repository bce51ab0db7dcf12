#pragma once
// Internal: clone() builds a fresh module (float32 parameters) and copies values in with
// clone_into(), which replaces a tensor of another dtype by a new object, leaving members
// such as `weight` pointing at the stale one. Converting the fresh copy first keeps the
// members valid when the source was moved to another dtype with to().

#include "ember/nn/module.h"

namespace ember::nn {

inline void match_dtype(const Module& source, Module& copy) {
  std::vector<Tensor> params = source.parameters();
  if (!params.empty()) copy.to(params.front().dtype());
}

}  // namespace ember::nn
