#pragma once
// ONNX export of jit graphs (docs/onnx.md): a traced (and optionally frozen) GraphModule
// written as an ONNX ModelProto that other runtimes (onnxruntime, OpenCV's dnn module,
// TensorRT) can load.
//
//   jit::GraphModule g = jit::freeze(jit::trace(*model, example, {.dynamic_batch = true}));
//   onnx::export_model(g, "model.onnx");            // opset 17, dynamic batch as "B"
//
// The file is built with the protobuf classes of the ONNX project (Debian: libonnx-dev);
// this header does not include them. A build without that package still has these
// functions: export_model then throws, saying how to get ONNX support (available()).

#include <string>

namespace ember::jit {
class GraphModule;
}

namespace ember::onnx {

inline constexpr int kMinOpset = 13;
inline constexpr int kMaxOpset = 17;

// How static int8 graphs (quant/quantized_ops.h) are written (docs/onnx.md):
//   QDQ: float operators between DequantizeLinear and QuantizeLinear (what ONNX Runtime and
//     TensorRT fold into int8 kernels; what torch.onnx writes);
//   QOperator: the int8 operators themselves (QLinearConv, QLinearMatMul-free 1x1 QLinearConv for
//     Linear, and ONNX Runtime's com.microsoft QLinearAdd, QLinearConcat, QLinearAveragePool,
//     QLinearGlobalAveragePool), with ONNX Runtime's quantizer's value names: what OpenCV 4.6's
//     dnn module imports.
enum class QuantFormat { QDQ, QOperator };

struct ExportOptions {
  // The default ONNX operator set version the model imports; kMinOpset..kMaxOpset.
  int opset = kMaxOpset;
  // The model's doc string; empty: the metadata's "doc_string" (or "description") when it
  // is a string, else a line saying ember wrote the file.
  std::string doc_string;
  // The graph's name; empty: the metadata's "model_name" when a string, else "ember_graph".
  std::string graph_name;
  // The form of static int8 ops (float graphs are the same in both).
  QuantFormat quant_format = QuantFormat::QDQ;
};

// Writes g as an ONNX model to path (atomically: a failed export leaves no file behind).
// Graph inputs and outputs keep the graph's names (input var names, output_names), dtypes
// and shapes, with the dynamic batch as the symbolic dim "B" ("4*B" for a multiple);
// parameters and constants become initializers named after them; the metadata becomes
// metadata_props (strings as they are, other values as JSON text).
// Throws ember::Error "[onnx::export] ..." for an opset outside 13..17, a node whose op (or
// attributes) has no ONNX form in the chosen opset, naming the node and op, and for a
// file that cannot be written. Nothing is written unless every node could be converted.
void export_model(const jit::GraphModule& g, const std::string& path, const ExportOptions& opt = {});

// The serialized ModelProto bytes (what export_model writes).
std::string export_to_bytes(const jit::GraphModule& g, const ExportOptions& opt = {});

// Whether this build has ONNX support (built with libonnx-dev).
bool available();

}  // namespace ember::onnx
