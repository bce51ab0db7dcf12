// ember-inspect: what a model artifact holds, without running it.
//
//   ember-inspect model.ember [--graph]
//
// Prints the op set version, the metadata (model name, version, training run, labels,
// normalisation ...), the input/output specs with dynamic dims, the op histogram and the
// parameter count; --graph adds the full graph listing.

#include <ember/ember.h>

#include <cstdio>
#include <iostream>
#include <string>

namespace {

void print_value(std::ostream& os, const ember::Value& v, int indent) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  switch (v.kind()) {
    case ember::Value::Kind::Dict:
      for (const auto& it : v.to_dict()) {
        const ember::Value& e = it.value();
        if (e.is_dict()) {
          os << pad << it.key() << ":\n";
          print_value(os, e, indent + 2);
        } else {
          os << pad << it.key() << ": ";
          print_value(os, e, 0);
          os << "\n";
        }
      }
      break;
    case ember::Value::Kind::List: {
      os << "[";
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) os << ", ";
        if (i == 12 && v.size() > 14) {
          os << "... " << v.size() - 12 << " more";
          break;
        }
        print_value(os, v.to_list()[i], 0);
      }
      os << "]";
      break;
    }
    case ember::Value::Kind::String: os << '"' << v.to_string() << '"'; break;
    case ember::Value::Kind::Int: os << v.to_int(); break;
    case ember::Value::Kind::Double: os << v.to_double(); break;
    case ember::Value::Kind::Bool: os << (v.to_bool() ? "true" : "false"); break;
    case ember::Value::Kind::Tensor: os << "<tensor " << v.to_tensor().sizes() << ">"; break;
    case ember::Value::Kind::None: os << "None"; break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help") {
    std::fprintf(stderr, "usage: %s MODEL.ember [--graph]\n", argv[0]);
    return 2;
  }
  const bool listing = argc > 2 && std::string(argv[2]) == "--graph";
  try {
    ember::jit::GraphModule m = ember::jit::load(argv[1]);
    const ember::jit::Graph& g = m.graph();
    std::cout << argv[1] << ": ember model artifact, op set version " << ember::jit::opset_version() << "\n";
    std::cout << "metadata:\n";
    print_value(std::cout, m.metadata(), 2);
    const ember::Value specs = ember::jit::specs_of(g);
    for (const char* side : {"inputs", "outputs"}) {
      std::cout << side << ":\n";
      for (const ember::Value& s : specs.at(side).to_list()) {
        std::cout << "  " << s.at("name").to_string() << ": " << s.at("dtype").to_string() << s.at("shape").to_string()
                  << "\n";
      }
    }
    std::cout << "ops (" << g.nodes.size() << "):\n";
    for (const auto& [op, n] : g.op_histogram()) std::cout << "  " << op << ": " << n << "\n";
    std::cout << "parameters: " << g.parameter_count() << "\n";
    const ember::jit::MemoryPlan plan = ember::jit::plan_memory(g, 1);
    std::cout << "activation memory at batch 1: peak " << plan.peak_bytes << " bytes (" << plan.total_bytes
              << " without reuse)\n";
    if (listing) std::cout << g;
  } catch (const ember::Error& e) {
    std::cerr << "ember-inspect: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
