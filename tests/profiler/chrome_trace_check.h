#pragma once
// The profiler tests' check of an exported Chrome trace: strict JSON, only the event
// phases ember writes, complete events with a category and non-negative times, and
// proper nesting of the complete events on each thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ember/serialize/json.h"

namespace profiler_test {

struct TraceCheck {
  ember::json::Json doc;
  std::vector<const ember::json::Json*> complete;  // the "X" events, in file order
  int counters = 0;                                // "C" events (the memory timeline)
};

inline double json_number(const ember::json::Json& j) {
  return j.type == ember::json::Json::Type::Int ? static_cast<double>(j.i) : j.d;
}

// Writes back the parts of JSON the trace's args use (integers, strings, arrays), with ", "
// between elements: the form of Event::shapes and Event::dtypes.
inline std::string render(const ember::json::Json& j) {
  using ember::json::Json;
  switch (j.type) {
    case Json::Type::Int:
      return std::to_string(j.i);
    case Json::Type::String:
      return "\"" + j.s + "\"";
    case Json::Type::Array: {
      std::string s = "[";
      for (size_t k = 0; k < j.array.size(); ++k) s += (k ? ", " : "") + render(j.array[k]);
      return s + "]";
    }
    default:
      return std::string("(") + j.type_name() + ")";
  }
}

// Parses `text` and checks it (gtest failures); the result points into its own doc.
inline void check_chrome_trace(const std::string& text, TraceCheck& out) {
  using ember::json::Json;
  out.doc = ember::json::parse(text, 16, 1 << 20);
  const Json* events = out.doc.find("traceEvents");
  ASSERT_NE(events, nullptr);
  struct X {
    std::string name;
    double ts, dur;
    int64_t tid;
  };
  std::vector<X> xs;
  for (const Json& e : events->array) {
    const std::string ph = e.find("ph")->s;
    ASSERT_TRUE(ph == "X" || ph == "M" || ph == "C") << ph;
    if (ph == "C") ++out.counters;
    if (ph != "X") continue;
    ASSERT_NE(e.find("cat"), nullptr);
    const Json* ts = e.find("ts");
    const Json* dur = e.find("dur");
    ASSERT_TRUE(ts && dur);
    EXPECT_GE(json_number(*dur), 0);
    xs.push_back({e.find("name")->s, json_number(*ts), json_number(*dur), e.find("tid")->i});
    out.complete.push_back(&e);
  }
  // Proper nesting per thread: sorted by start, each event ends before its enclosing one.
  std::sort(xs.begin(), xs.end(),
            [](const X& a, const X& b) { return a.ts < b.ts || (a.ts == b.ts && a.dur > b.dur); });
  std::vector<const X*> stack;
  for (const X& x : xs) {
    while (!stack.empty() && stack.back()->ts + stack.back()->dur <= x.ts) stack.pop_back();
    if (!stack.empty() && stack.back()->tid == x.tid) {
      EXPECT_LE(x.ts + x.dur, stack.back()->ts + stack.back()->dur + 1e-3)
          << x.name << " overlaps " << stack.back()->name;
    }
    stack.push_back(&x);
  }
}

}  // namespace profiler_test
