#pragma once
// Internal: constants of the checkpoint file format shared by the writer (checkpoint.cpp)
// and the reader (checkpoint_reader.cpp). docs/serialize.md describes the format.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ember/core/dtype.h"
#include "ember/serialize/value.h"

#ifndef EMBER_VERSION_STRING
#define EMBER_VERSION_STRING "0.1.0"
#endif

namespace ember::serialize_format {

inline constexpr std::string_view kFormatName = "ember-checkpoint";
inline constexpr std::string_view kEmberVersion = EMBER_VERSION_STRING;
// The checksum is the last __metadata__ entry; the writer emits exactly these bytes
// followed by 8 lowercase hex digits and '"'.
inline constexpr std::string_view kChecksumField = R"("ember.checksum":"crc32:)";
// safetensors' own limit on the header, against JSON bombs.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// Bounds that keep hostile files from exhausting the stack.
inline constexpr int kMaxValueDepth = 200;
inline constexpr int kMaxJsonDepth = 2 * kMaxValueDepth + 8;
inline constexpr int64_t kMaxDims = 64;
// JSON values per parse (the header, then the ember.value tree): ~450 MB of parsed JSON at most.
inline constexpr uint64_t kMaxJsonValues = uint64_t{1} << 22;
// Note [Load memory bound]: besides the tensors it returns, load() holds at most about 4x
// the file's size plus kLoadSlackBytes. The text it keeps (the header, the ember.value
// string) is at most twice the file; what can outgrow the text is the parsed JSON and the
// decoded Value (a JSON value can be 2 bytes of text, "0,", and up to ~kBytesPerParsedValue
// of memory: its parsed node, its decoded Value, and the spare capacity and reallocation
// copies of the vectors holding them). So the two parses together may hold at most
// max_json_values(file size) values, and save() refuses a value whose file would exceed
// that (what save writes, load reads).
inline constexpr uint64_t kLoadSlackBytes = uint64_t{64} << 20;
inline constexpr uint64_t kBytesPerParsedValue = 640;
inline constexpr uint64_t max_json_values(uint64_t file_bytes) {
  if (file_bytes >= kMaxJsonValues * kBytesPerParsedValue) return 2 * kMaxJsonValues;
  const uint64_t budget = (2 * file_bytes + kLoadSlackBytes) / kBytesPerParsedValue;
  return budget < 2 * kMaxJsonValues ? budget : 2 * kMaxJsonValues;
}
inline constexpr uint64_t kWriteChunkBytes = 16u << 20;

// safetensors dtype codes: "F32", "BF16", "BOOL", ...
const char* dtype_code(DType t);
std::optional<DType> dtype_from_code(std::string_view code);
// "F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL", for error messages.
std::string supported_codes();

// ember::load's body: reads and verifies a checkpoint or plain safetensors file.
Value read_checkpoint(const std::string& path);

}  // namespace ember::serialize_format
