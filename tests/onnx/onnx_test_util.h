#pragma once
// Shared by the ONNX tests: tensors as .npy files, and validate_onnx.py (the ONNX checker,
// then OpenCV's dnn module or the numpy evaluator of the ONNX op definitions) run in a
// subprocess on an exported file against the graph's own outputs.

#include <ember/ember.h>
#include <ember/onnx/export.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

namespace ember::onnx_test {

inline onnx::ExportOptions Opset(int opset) {
  onnx::ExportOptions o;
  o.opset = opset;
  return o;
}

// Per process: ctest runs test cases in parallel (and other checkouts may run theirs), and
// cases reuse file names.
inline std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/onnx_test_" + std::to_string(::getpid()) + "_" + name;
}

// A tensor as a .npy file (format 1.0: magic, header dict padded to 64 bytes).
inline void WriteNpy(const std::string& path, const Tensor& t) {
  std::string descr;
  switch (t.dtype()) {
    case DType::Float32:
      descr = "<f4";
      break;
    case DType::Float64:
      descr = "<f8";
      break;
    case DType::Int64:
      descr = "<i8";
      break;
    case DType::Int32:
      descr = "<i4";
      break;
    case DType::Bool:
      descr = "|b1";
      break;
    default:
      FAIL() << "WriteNpy: dtype " << t.dtype() << " is not written";
  }
  std::string shape = "(";
  for (int64_t k = 0; k < t.dim(); ++k)
    shape += std::to_string(t.size(k)) + (t.dim() == 1 ? ",)" : k + 1 < t.dim() ? ", " : ")");
  if (t.dim() == 0) shape = "()";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  const char len_bytes[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  f.write(len_bytes, 2);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  const Tensor c = t.contiguous();
  f.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.nbytes()));
  ASSERT_TRUE(f.good()) << path;
}

struct Validation {
  int status = -1;
  std::string output;
};

inline Validation RunCommand(const std::string& cmd) {
  Validation v;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return v;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) v.output.append(buf, n);
  v.status = pclose(p);
  return v;
}

inline std::string ScriptPath(const std::string& name) {
  return (std::filesystem::path(__FILE__).parent_path() / name).string();
}

inline std::string Join(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : ",") + p;
  return s;
}

// Runs validate_onnx.py on the model (and on inputs and ember's outputs when given).
inline Validation Validate(const std::string& model, const std::vector<std::string>& inputs = {},
                           const std::vector<std::string>& refs = {}, bool numpy = false) {
  std::string cmd = "/usr/bin/python3 '" + ScriptPath("validate_onnx.py") + "' '" + model + "'";
  if (!inputs.empty()) cmd += " '" + Join(inputs) + "' '" + Join(refs) + "'";
  if (numpy) cmd += " --numpy";
  return RunCommand(cmd);
}

// The largest value of "key<number>" in text (-1 when there is none).
inline double MaxField(const std::string& text, const std::string& key) {
  double best = -1;
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) {
    best = std::max(best, std::stod(text.substr(at + key.size())));
  }
  return best;
}

inline bool Has(const std::string& text, const std::string& line) { return text.find(line) != std::string::npos; }

inline std::string ShapeText(const Tensor& t) {
  std::string s = "shape=[";
  for (int64_t k = 0; k < t.dim(); ++k) s += (k ? ", " : "") + std::to_string(t.size(k));
  return s + "]";
}

// Which runtimes run an exported file: OpenCV's dnn module, the numpy evaluator, or both.
enum class Runtime { OpenCV, Numpy, Both };

// Exports g, checks it, and compares the runtime's outputs with the graph's for the inputs
// make(b) at batch sizes 1 and 5. Returns the validator's output (of the last run).
inline std::string ExportAndCompareInputs(const jit::GraphModule& g, const std::string& name,
                                          const std::function<std::vector<Tensor>(int64_t)>& make,
                                          const onnx::ExportOptions& opt = {}, Runtime rt = Runtime::OpenCV,
                                          std::vector<int64_t> batches = {1, 5}) {
  const std::string path = TempPath(name + ".onnx");
  onnx::export_model(g, path, opt);
  std::string last;
  for (int64_t b : batches) {
    const std::vector<Tensor> xs = make(b);
    const std::vector<Tensor> want = g.run(xs);
    std::vector<std::string> ins, refs;
    for (size_t k = 0; k < xs.size(); ++k) {
      ins.push_back(TempPath(name + "_in" + std::to_string(k) + ".npy"));
      WriteNpy(ins.back(), xs[k]);
    }
    for (size_t k = 0; k < want.size(); ++k) {
      refs.push_back(TempPath(name + "_ref" + std::to_string(k) + ".npy"));
      WriteNpy(refs.back(), want[k]);
    }
    for (bool numpy : {false, true}) {
      if ((numpy && rt == Runtime::OpenCV) || (!numpy && rt == Runtime::Numpy)) continue;
      const Validation v = Validate(path, ins, refs, numpy);
      const std::string runtime = numpy ? "numpy" : "opencv";
      EXPECT_EQ(v.status, 0) << name << " at batch " << b << " (" << runtime << "):\n" << v.output;
      EXPECT_TRUE(Has(v.output, "checker: ok")) << v.output;
      for (const Tensor& w : want)
        EXPECT_TRUE(Has(v.output, runtime + ": " + ShapeText(w))) << ShapeText(w) << "\n" << v.output;
      const double rel = MaxField(v.output, "max_rel=");
      EXPECT_GE(rel, 0.0) << v.output;
      EXPECT_LE(rel, 1e-4) << name << " at batch " << b << " (" << runtime << "):\n" << v.output;
      // The measured agreement, for docs/onnx.md.
      std::cout << "[onnx] " << name << " batch " << b << " " << runtime << " max_rel=" << rel << "\n";
      last = v.output;
    }
  }
  return last;
}

// One float input of shape [b, item_shape...] drawn from randn.
inline std::string ExportAndCompare(const jit::GraphModule& g, const std::string& name,
                                    const std::vector<int64_t>& item_shape, const onnx::ExportOptions& opt = {},
                                    Runtime rt = Runtime::OpenCV) {
  return ExportAndCompareInputs(
      g, name,
      [&](int64_t b) {
        std::vector<int64_t> shape{b};
        shape.insert(shape.end(), item_shape.begin(), item_shape.end());
        return std::vector<Tensor>{randn(shape)};
      },
      opt, rt);
}

}  // namespace ember::onnx_test
