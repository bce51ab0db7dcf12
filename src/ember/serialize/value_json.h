#pragma once
// Internal: a Value as readable JSON text, for metadata that leaves ember as text (ONNX
// metadata_props, ember-serve's answers). Not a checkpoint encoding: tensors become a
// short description ("tensor float32[2,3]") and non-finite floats the strings "nan", "inf",
// "-inf"; checkpoints use serialize/checkpoint.h.

#include <string>

namespace ember {
class Value;

// Appends v as JSON (", " and ": " separators; dict order kept; invalid UTF-8 in a string
// or key replaced by "(invalid utf-8)").
void append_value_json(std::string& out, const Value& v);
std::string value_to_json(const Value& v);

}  // namespace ember
