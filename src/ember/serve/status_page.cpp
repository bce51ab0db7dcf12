#include "ember/serve/status_page.h"

namespace ember::serve {

const std::string& status_page_html() {
  static const std::string page = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>ember-serve</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 20px; }
table { border-collapse: collapse; margin-top: 1em; }
th, td { border-bottom: 1px solid #ddd; padding: 4px 12px; text-align: right; }
th:first-child, td:first-child, th:nth-child(2), td:nth-child(2) { text-align: left; }
.draining { color: #b00; font-weight: bold; }
#error { color: #b00; }
</style>
</head>
<body>
<h1>ember-serve</h1>
<div id="summary">loading...</div>
<div id="error"></div>
<table id="models">
<thead><tr><th>model</th><th>version</th><th>default</th><th>traffic</th><th>requests</th>
<th>QPS</th><th>p50 ms</th><th>p99 ms</th><th>queue</th><th>workers</th><th>drift PSI</th></tr></thead>
<tbody></tbody>
</table>
<script>
function cell(row, text) { const td = document.createElement('td'); td.textContent = text; row.appendChild(td); }
function fixed(x, d) { return (typeof x === 'number') ? x.toFixed(d) : '-'; }
async function refresh() {
  try {
    const r = await fetch('/status', {cache: 'no-store'});
    const s = await r.json();
    const summary = document.getElementById('summary');
    summary.textContent = s.models.length + ' model(s), ' + s.inflight + ' request(s) in flight, ' +
                          s.connections + ' connection(s)' + (s.draining ? ' - DRAINING' : '');
    summary.className = s.draining ? 'draining' : '';
    const body = document.querySelector('#models tbody');
    body.textContent = '';
    for (const m of s.models) {
      let total = 0;
      for (const w of Object.values(m.traffic)) total += w;
      for (const v of m.versions) {
        const row = document.createElement('tr');
        row.className = 'version-row';
        row.dataset.model = m.name;
        row.dataset.version = v.version;
        cell(row, m.name);
        cell(row, v.version + (m.shadow_version === v.version ? ' (shadow)' : ''));
        cell(row, m.default_version === v.version ? 'yes' : '');
        cell(row, total > 0 ? fixed(100 * (m.traffic[v.version] || 0) / total, 1) + '%' : '');
        cell(row, v.requests);
        cell(row, fixed(v.qps, 1));
        cell(row, fixed(v.p50_ms, 2));
        cell(row, fixed(v.p99_ms, 2));
        cell(row, v.queue_length);
        cell(row, v.workers);
        cell(row, fixed(v.drift_psi, 3));
        body.appendChild(row);
      }
    }
    document.getElementById('error').textContent = '';
  } catch (e) {
    document.getElementById('error').textContent = 'cannot reach /status: ' + e;
  }
}
refresh();
setInterval(refresh, 1000);
</script>
</body>
</html>
)HTML";
  return page;
}

}  // namespace ember::serve
