#pragma once
// ONNX import (docs/onnx.md): an ONNX model made elsewhere (torch.onnx.export of a CNN or an
// MLP, or ember's own export) read into a jit graph that ember runs.
//
//   jit::GraphModule g = onnx::load("model.onnx");   // dims named in the file follow B
//   Tensor logits = g.forward(images);
//
// The subset read is the one ember's exporter writes for such models: Conv, Gemm, MatMul,
// the element-wise ops, pools, batch and layer normalization, reshapes, transposes,
// softmax, concat, (un)squeeze, reductions, slices, gathers (select, embedding),
// comparisons, where, cast, trilu, expand, instance norm, transposed conv, and the int8
// operators of ember's quantized exports (QDQ and QOperator, run as ONNX defines them by
// quant/qlinear.h's ops); anything
// else is an error naming the node, its op and the opset (docs/onnx.md lists the ops).

#include <string>

namespace ember::jit {
class GraphModule;
}

namespace ember::onnx {

// Reads the ONNX model at path (default-domain opsets 13 to 17). Graph inputs keep their
// names and dtypes; a dim with a name (dim_param, "B", "batch_size") becomes the graph's
// dynamic batch B, so the module serves every batch size; initializers become parameters
// named as in the file; outputs keep their names (GraphModule's output_names). The
// file's metadata_props, producer and doc string go to the module's metadata.
// Throws ember::Error "[onnx::load] ..." for a file that is not an ONNX model, an opset
// outside 13..17, another domain (com.microsoft's QLinearAdd/Concat/AveragePool/GlobalAveragePool are read), or a node with no ember form, naming the node and op.
jit::GraphModule load(const std::string& path);

}  // namespace ember::onnx
