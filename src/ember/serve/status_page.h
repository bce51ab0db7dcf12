#pragma once
// The HTML of ember-serve's status page at "/": models, versions, traffic split, live
// p50/p99 latency and QPS, refreshed from /status every second.
#include <string>

namespace ember::serve {
const std::string& status_page_html();
}
