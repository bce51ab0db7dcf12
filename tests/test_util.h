#pragma once
// Helpers shared by the unit tests: a tensor's sizes and values as std::vectors, and checks
// that a call fails with an ember::Error naming what it should.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ember::testing {

using I64 = std::vector<int64_t>;
using F32 = std::vector<float>;

inline I64 Sizes(const Tensor& t) { return t.sizes().vec(); }
inline I64 Strides(const Tensor& t) { return t.strides().vec(); }
inline I64 Longs(const Tensor& t) { return t.to_vector<int64_t>(); }
inline F32 Floats(const Tensor& t) { return t.to_vector<float>(); }
inline std::vector<double> Doubles(const Tensor& t) { return t.to_vector<double>(); }

inline std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Runs fn, expects an ember::Error whose message contains every one of `parts`
// (case-insensitively), and returns the message.
inline std::string ExpectError(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& p : parts) {
      EXPECT_NE(Lower(msg).find(Lower(p)), std::string::npos)
          << "message \"" << msg << "\" does not mention \"" << p << "\"";
    }
    return msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected ember::Error, got another exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected ember::Error, nothing was thrown";
  return {};
}

// The message of the ember::Error fn throws, or "" when it throws none.
inline std::string ErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Batch norm layers with running statistics far from (0, 1) and non-zero biases, so that
// folding or exporting them is actually exercised.
inline void RandomizeNormStats(nn::Module& m) {
  NoGradGuard g;
  for (auto& it : m.named_buffers()) {
    if (it.key().find("running_var") != std::string::npos) it.value().uniform_(0.5, 2.0);
    else if (it.key().find("running_mean") != std::string::npos) it.value().normal_(0, 0.3);
  }
  for (auto& it : m.named_parameters()) {
    if (it.key().find("bias") != std::string::npos) it.value().normal_(0, 0.2);
  }
}

}  // namespace ember::testing
