#pragma once
// Object collectives (torch.distributed's all_gather_object / gather_object /
// broadcast_object_list) for ember::Value: nested dicts, lists, numbers, strings and
// tensors, encoded to bytes (encode_value) and moved as uint8 tensors. Every rank of the
// group must call them, in the same order as its other collectives.
//
//   std::vector<Value> all;
//   dist::all_gather_object(all, Value(dist::get_rank()));   // all[r] is rank r's value

#include <string>
#include <vector>

#include "ember/distributed/process_group.h"
#include "ember/serialize/value.h"

namespace ember::distributed {

// object_list receives one Value per rank (resized to the group's size).
void all_gather_object(std::vector<Value>& object_list, const Value& obj, const ProcessGroupPtr& group = nullptr);
// On dst, object_gather_list receives one Value per rank; other ranks pass nullptr.
void gather_object(const Value& obj, std::vector<Value>* object_gather_list = nullptr, int dst = 0,
                   const ProcessGroupPtr& group = nullptr);
// Rank src's object_list replaces every other rank's (same length required everywhere).
void broadcast_object_list(std::vector<Value>& object_list, int src = 0, const ProcessGroupPtr& group = nullptr);

namespace detail {
// A self-contained byte encoding of a Value (tensors by dtype, sizes and contiguous bytes).
std::string encode_value(const Value& v);
// The inverse; throws ember::Error starting with "[op]" on malformed input.
Value decode_value(const std::string& bytes, const char* op);
}  // namespace detail

}  // namespace ember::distributed
