#include "ember/core/device.h"

#include <ostream>

#include "ember/core/check.h"

namespace ember {

Device::Device(const std::string& spec) : type_(DeviceType::CPU), index_(-1) {
  std::string kind = spec;
  auto colon = spec.find(':');
  if (colon != std::string::npos) {
    kind = spec.substr(0, colon);
    std::string idx = spec.substr(colon + 1);
    bool digits = !idx.empty() && idx.size() <= 3 &&
                  idx.find_first_not_of("0123456789") == std::string::npos;
    EMBER_CHECK(digits && std::stoi(idx) < 128, "[Device] invalid device string '", spec,
                "': the index after ':' must be a number below 128, as in 'cuda:0'");
    index_ = static_cast<int8_t>(std::stoi(idx));
  }
  if (kind == "cpu") {
    type_ = DeviceType::CPU;
  } else if (kind == "cuda") {
    type_ = DeviceType::CUDA;
  } else {
    EMBER_ERROR("[Device] invalid device string '", spec, "': expected 'cpu', 'cuda' or 'cuda:N'");
  }
}

std::string Device::str() const {
  std::string s = type_ == DeviceType::CPU ? "cpu" : "cuda";
  if (index_ >= 0) {
    s += ':';
    s += std::to_string(index_);
  }
  return s;
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace ember
