#pragma once
// Command-line options of the example programs: "--name value" pairs and "--flag" switches.
//
//   for (examples::Options o(argc, argv, usage); o.next();) {
//     if (o.is("--epochs")) a.epochs = o.int64();
//     else if (o.is("--resume")) a.resume = true;
//     else o.unknown();
//   }
//
// A missing or unreadable value, or an unknown option, calls usage(problem), which must not
// return (print the usage and exit).

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>

namespace examples {

class Options {
 public:
  using Usage = std::function<void(const std::string& problem)>;
  Options(int argc, char** argv, Usage usage) : argc_(argc), argv_(argv), usage_(std::move(usage)) {}

  // Moves to the next option; false after the last.
  bool next() {
    if (++i_ >= argc_) return false;
    name_ = argv_[i_];
    if (name_ == "--help" || name_ == "-h") fail("help");
    return true;
  }
  bool is(const char* name) const { return name_ == name; }
  const std::string& name() const { return name_; }
  [[noreturn]] void unknown() { fail("unknown option " + name_); }

  std::string str() {
    if (i_ + 1 >= argc_) fail("missing value after " + name_);
    return argv_[++i_];
  }
  int64_t int64() {
    return convert<int64_t>([](const std::string& s) { return std::stoll(s); });
  }
  uint64_t uint64() {
    return convert<uint64_t>([](const std::string& s) { return std::stoull(s); });
  }
  int integer() {
    return convert<int>([](const std::string& s) { return std::stoi(s); });
  }
  double real() {
    return convert<double>([](const std::string& s) { return std::stod(s); });
  }

 private:
  template <typename T, typename F>
  T convert(F f) {
    const std::string v = str();
    try {
      return static_cast<T>(f(v));
    } catch (const std::logic_error&) {
      fail("bad value for " + name_ + ": " + v);
    }
  }
  [[noreturn]] void fail(const std::string& problem) {
    usage_(problem);
    std::abort();  // usage must not return
  }

  int argc_;
  char** argv_;
  Usage usage_;
  int i_ = 0;
  std::string name_;
};

}  // namespace examples
