// Classifies a batch of IDX images with any exported model artifact (jit::save), without
// the model's source: the graph, weights, labels and input normalisation all come from
// the file. With --labels it reports accuracy; it warns when the batch's pixel statistics
// drift from the reference profile stored at export.
//
//   fashion_mnist --epochs 2 --export model.ember
//   infer model.ember /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
//         [--labels .../t10k-labels-idx1-ubyte.gz] [--count 1000] [--show 5] [--min-accuracy X]

#include <ember/ember.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

namespace {

[[noreturn]] void usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s MODEL.ember IMAGES.idx[.gz] [--labels LABELS.idx[.gz]] [--count N] [--show N] "
               "[--min-accuracy X]\n",
               prog);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) usage(argv[0]);
  const std::string model_path = argv[1], images_path = argv[2];
  std::string labels_path;
  int64_t count = 1000, show = 5;
  double min_accuracy = 0;
  for (int i = 3; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) usage(argv[0]);
    if (k == "--labels") labels_path = argv[++i];
    else if (k == "--count") count = std::stoll(argv[++i]);
    else if (k == "--show") show = std::stoll(argv[++i]);
    else if (k == "--min-accuracy") min_accuracy = std::stod(argv[++i]);
    else usage(argv[0]);
  }
  try {
    const auto t0 = std::chrono::steady_clock::now();
    ember::jit::GraphModule model = ember::jit::load(model_path);
    const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const ember::Value& meta = model.metadata();
    std::cout << "model: " << (meta.contains("model_name") ? meta.at("model_name").to_string() : "?") << " ("
              << model.graph().nodes.size() << " ops, " << model.graph().parameter_count()
              << " parameters), loaded in " << load_ms << " ms\n";

    // Pixels as the model was trained on them: uint8 [N, H, W] -> float [N, 1, H, W],
    // scaled and standardised with the artifact's normalisation.
    ember::Tensor images = ember::data::read_idx(images_path);
    count = std::min<int64_t>(count, images.size(0));
    images = images.narrow(0, 0, count);
    ember::Tensor x = images.to(ember::kFloat32).unsqueeze(1);
    if (meta.contains("normalization")) {
      const ember::Value& n = meta.at("normalization");
      x = x * n.at("scale").to_double();
      x = (x - n.at("mean").to_double_list().at(0)) / n.at("std").to_double_list().at(0);
    }
    // Drift check: the batch's mean against the reference profile (in units of its std).
    if (meta.contains("input_profile")) {
      const ember::Value& p = meta.at("input_profile");
      const double ref_mean = p.at("mean").to_double(), ref_std = p.at("std").to_double();
      const double mean = x.mean().item<double>();
      const double z = std::abs(mean - ref_mean) / std::max(ref_std, 1e-12);
      std::printf("input mean %.4f vs reference %.4f (%.2f reference std apart)%s\n", mean, ref_mean, z,
                  z > 0.25 ? ": WARNING, the inputs drift from the training data" : "");
    }
    const auto t1 = std::chrono::steady_clock::now();
    ember::Tensor logits = model.forward(x);
    const double run_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
    ember::Tensor pred = logits.argmax(1);
    std::printf("classified %lld images in %.1f ms\n", static_cast<long long>(count), run_ms);
    std::vector<std::string> names;
    if (meta.contains("labels")) {
      for (const ember::Value& l : meta.at("labels").to_list()) names.push_back(l.to_string());
    }
    const std::vector<int64_t> p = pred.to_vector<int64_t>();
    for (int64_t i = 0; i < std::min<int64_t>(show, count); ++i) {
      const int64_t c = p[static_cast<size_t>(i)];
      std::printf("  image %lld: %s\n", static_cast<long long>(i),
                  c < static_cast<int64_t>(names.size()) ? names[static_cast<size_t>(c)].c_str()
                                                        : std::to_string(c).c_str());
    }
    if (!labels_path.empty()) {
      ember::Tensor labels = ember::data::read_idx(labels_path).narrow(0, 0, count).to(ember::kInt64);
      const double accuracy = pred.eq(labels).sum().item<double>() / static_cast<double>(count);
      std::printf("accuracy: %.4f on %lld images\n", accuracy, static_cast<long long>(count));
      if (accuracy < min_accuracy) {
        std::fprintf(stderr, "accuracy %.4f is below --min-accuracy %.4f\n", accuracy, min_accuracy);
        return 3;
      }
    }
  } catch (const ember::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
