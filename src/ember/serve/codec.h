#pragma once
// Tensors to and from the wire: KServe v2 JSON tensors ({"name", "shape", "datatype",
// "data"}), the KServe binary tensor extension (raw little-endian bytes after the JSON
// header), TorchServe-style nested lists, and raw uint8 images through an artifact's
// declared normalization. Every decoder reports what is wrong in words for a 400 body.

#include <string>
#include <string_view>
#include <vector>

#include "ember/core/tensor.h"
#include "ember/serialize/json.h"

namespace ember::serve {

// Thrown by the decoders; what() is the 400 body's message.
struct BadRequest : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// data: a flat or nested JSON array with exactly prod(shape) numbers (booleans for BOOL).
// Integer dtypes take integers in range; floats take any number. `what` names the tensor.
Tensor decode_json_data(const json::Json& data, DType dtype, const std::vector<int64_t>& shape,
                        const std::string& what);
// Raw little-endian bytes of prod(shape) elements.
Tensor decode_binary(std::string_view bytes, DType dtype, const std::vector<int64_t>& shape,
                     const std::string& what);
// The shape of a nested JSON array (ragged arrays are an error).
std::vector<int64_t> nested_shape(const json::Json& data, const std::string& what);

// Appends the elements of t as a flat JSON array (floats in their shortest round-trip form).
void append_flat(std::string& out, const Tensor& t);
// Appends t as nested JSON lists (TorchServe's answers).
void append_nested(std::string& out, const Tensor& t);
// The raw little-endian bytes of t (contiguous).
std::string raw_bytes(const Tensor& t);
// Bytes per element of a dtype.
size_t element_size_of(DType t);

}  // namespace ember::serve

namespace ember {
class Value;
}
namespace ember::serve {
// A parsed JSON document as a Value (objects keep their order).
Value to_value(const json::Json& j);
// Reads and parses a JSON file; ember::Error naming the file and the parse error.
Value read_json_file(const std::string& path);
}  // namespace ember::serve
