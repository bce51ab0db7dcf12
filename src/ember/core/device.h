#pragma once
// Where a tensor's memory lives. CPU is the only backend built today; CUDA exists as a
// type so the API (and code that passes devices around) is ready for it.

#include <cstdint>
#include <iosfwd>
#include <string>

namespace ember {

enum class DeviceType : int8_t { CPU, CUDA };

inline constexpr DeviceType kCPU = DeviceType::CPU;
inline constexpr DeviceType kCUDA = DeviceType::CUDA;

class Device {
 public:
  Device(DeviceType type = DeviceType::CPU, int8_t index = -1) : type_(type), index_(index) {}
  // Parses "cpu", "cuda", "cuda:1"; throws ember::Error on anything else.
  Device(const std::string& spec);
  Device(const char* spec) : Device(std::string(spec)) {}

  DeviceType type() const { return type_; }
  int8_t index() const { return index_; }
  bool has_index() const { return index_ >= 0; }
  bool is_cpu() const { return type_ == DeviceType::CPU; }
  bool is_cuda() const { return type_ == DeviceType::CUDA; }
  std::string str() const;
  bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
  bool operator!=(const Device& o) const { return !(*this == o); }

 private:
  DeviceType type_;
  int8_t index_;
};

std::ostream& operator<<(std::ostream& os, const Device& d);

}  // namespace ember
