// The main job: a small CNN trained on Fashion-MNIST with Adam, evaluated every epoch,
// checkpointed every epoch and resumable. `make demo` runs it for two epochs.
//
//   fashion_mnist [--epochs 2] [--batch-size 64] [--lr 1e-3] [--threads 2] [--seed 0]
//                 [--workers 2] [--data DIR] [--out DIR] [--resume] [--limit N]
//                 [--min-accuracy X] [--export model.ember] [--model cnn|mlp|resnet]
//                 [--quantize dynamic|static|qat] [--observer minmax|moving_average|percentile]
//                 [--qat-epochs N]
//                 [--profile trace.json] [--amp bf16|fp16]
//                 [--distributed [--backend gloo|mpi]]
//
// --model mlp trains a 784-512-256-10 MLP instead of the CNN, --model resnet a small residual
// CNN (conv-bn-relu stems, two residual blocks whose skip additions are quant::FloatFunctional,
// global average pooling). --quantize dynamic then
// quantizes the trained model's Linear layers to int8 (quant::quantize_dynamic, docs/
// quantization.md) and reports float32 against int8: test accuracy, state_dict size on
// disk, and the time of a test-set pass (batch 1000) and of one image (batch 1).
// --quantize static does the same with static post-training quantization (quant::prepare,
// calibration on the first 1000 training images, quant::convert): Conv2d (+ReLU) and Linear
// (+ReLU) layers with activations quantized with the calibrated, fixed scales and handed from
// layer to layer as uint8 codes (max pooling on the codes); --observer minmax (default),
// moving_average or percentile picks the activation observers. --quantize qat fine-tunes a
// copy of the trained model with quantization-aware training (quant::prepare_qat, fake
// quantization, --qat-epochs epochs at a tenth of --lr) and converts it to the same int8 model.
// --export traces the trained model (eval mode, dynamic batch), freezes it (batch norm and
// constants folded, element-wise chains fused) and saves one artifact with the labels, the
// input normalisation and a reference input profile; examples/infer runs it (docs/jit.md).
// --profile trace.json profiles steps 10-14 of the first epoch (after 5 skipped and 3
// warm-up steps: profiler::Schedule), prints the op table and writes a Chrome trace that
// Perfetto or chrome://tracing opens (docs/profiler.md).
// --amp bf16|fp16 trains with mixed precision (docs/amp.md): the forward pass and the loss
// run under amp::AutocastGuard (convolutions and Linear layers in the low precision, the
// loss in float32), the parameters and Adam's state stay float32; fp16 adds a GradScaler
// (dynamic loss scaling, steps with inf/NaN gradients skipped). Evaluation runs in float32.
// --min-accuracy makes the run fail (exit 3) when the final test accuracy is below X; the
// smoke tests use it.
// --distributed trains data-parallel on the processes ember-run starts (docs/distributed.md):
// DistributedDataParallel, a DistributedSampler giving each rank its share of every epoch
// (--batch-size samples per rank and step), rank 0 evaluating and writing the checkpoint.
//   ember-run --standalone --nproc-per-node 2 build/examples/fashion_mnist --distributed
// --backend mpi runs the same on MPI instead of Gloo; mpirun starts the processes:
//   mpirun -np 2 build/examples/fashion_mnist --distributed --backend mpi
// The last line is a machine-readable summary that bench/train_fashion_mnist.py reads.

#include <ember/core/cpu_capability.h>
#include <ember/profiler/profiler.h>
#include <ember/ember.h>
#include <ember/quant/quant.h>
#include <ember/quant/qat.h>
#include <ember/quant/static_quant.h>
#ifdef EMBER_HAVE_DISTRIBUTED
#include <ember/distributed/ddp.h>
#include <ember/distributed/distributed.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "common/options.h"

namespace nn = ember::nn;
namespace data = ember::data;

namespace {

struct Args {
  int64_t epochs = 2;
  int64_t batch_size = 64;
  double lr = 1e-3;
  int threads = 2;
  uint64_t seed = 0;
  int64_t workers = 2;
  int64_t limit = 0;  // train on the first N images only (0: all); for quick checks
  double min_accuracy = 0;
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string out = "runs/fashion_mnist";
  std::string export_path;
  std::string model = "cnn";
  std::string quantize;
  std::string observer = "minmax";
  int64_t qat_epochs = 1;
  std::string profile_path;
  std::string amp;  // "", "bf16" or "fp16"
  bool distributed = false;
  std::string backend = "gloo";
  bool resume = false;
};

[[noreturn]] void usage(const char* prog, const std::string& problem) {
  std::fprintf(stderr,
               "%s: %s\nusage: %s [--epochs N] [--batch-size N] [--lr X] [--threads N] [--seed N] "
               "[--workers N] [--data DIR] [--out DIR] [--resume] [--limit N] [--min-accuracy X] [--export FILE] "
               "[--model cnn|mlp] [--quantize dynamic|static|qat] [--observer minmax|moving_average|percentile] "
               "[--qat-epochs N] [--profile "
               "trace.json] [--amp bf16|fp16] [--distributed [--backend gloo|mpi]]\n",
               prog, problem.c_str(), prog);
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (examples::Options o(argc, argv, [&](const std::string& problem) { usage(argv[0], problem); }); o.next();) {
    // clang-format off
    if (o.is("--epochs")) a.epochs = o.int64();
    else if (o.is("--batch-size")) a.batch_size = o.int64();
    else if (o.is("--lr")) a.lr = o.real();
    else if (o.is("--threads")) a.threads = o.integer();
    else if (o.is("--seed")) a.seed = o.uint64();
    else if (o.is("--workers")) a.workers = o.int64();
    else if (o.is("--limit")) a.limit = o.int64();
    else if (o.is("--min-accuracy")) a.min_accuracy = o.real();
    else if (o.is("--data")) a.data_dir = o.str();
    else if (o.is("--out")) a.out = o.str();
    else if (o.is("--resume")) a.resume = true;
    else if (o.is("--export")) a.export_path = o.str();
    else if (o.is("--model")) a.model = o.str();
    else if (o.is("--quantize")) a.quantize = o.str();
    else if (o.is("--observer")) a.observer = o.str();
    else if (o.is("--qat-epochs")) a.qat_epochs = o.int64();
    else if (o.is("--profile")) a.profile_path = o.str();
    else if (o.is("--amp")) a.amp = o.str();
    else if (o.is("--distributed")) a.distributed = true;
    else if (o.is("--backend")) a.backend = o.str();
    else o.unknown();
    // clang-format on
  }
  if (a.backend != "gloo" && a.backend != "mpi") usage(argv[0], "--backend is gloo or mpi, not " + a.backend);
  if (!a.amp.empty() && a.amp != "bf16" && a.amp != "fp16") usage(argv[0], "--amp is bf16 or fp16, not " + a.amp);
  if (a.model != "cnn" && a.model != "mlp" && a.model != "resnet") {
    usage(argv[0], "--model is cnn, mlp or resnet, not " + a.model);
  }
  if (!a.quantize.empty() && a.quantize != "dynamic" && a.quantize != "static" && a.quantize != "qat") {
    usage(argv[0], "--quantize " + a.quantize +
                       " is not a mode (dynamic: int8 Linear layers, activations per batch; static: int8 Conv2d and "
                       "Linear layers, activations calibrated on training images; qat: quantization-aware fine-tuning, "
                       "then the static int8 model)");
  }
  if (a.qat_epochs < 1) usage(argv[0], "--qat-epochs must be >= 1");
  if (a.observer != "minmax" && a.observer != "moving_average" && a.observer != "percentile") {
    usage(argv[0], "--observer is minmax, moving_average or percentile, not " + a.observer);
  }
  if (a.epochs < 1 || a.batch_size < 1 || a.threads < 1 || a.workers < 0 || !(a.lr > 0)) {
    usage(argv[0], "epochs, batch size and threads must be >= 1, workers >= 0, lr > 0");
  }
  return a;
}

// conv3x3-bn-relu-conv3x3-bn plus the block's input, then ReLU. The layers sit in an
// nn::Sequential and the addition in a quant::FloatFunctional, so that static quantization
// reaches both (docs/quantization.md, "Residual and multi-branch models").
class ResidualBlockImpl : public nn::Cloneable<ResidualBlockImpl> {
 public:
  explicit ResidualBlockImpl(int64_t channels) : Cloneable("ResidualBlock"), channels(channels) { reset(); }
  void reset() override {
    auto conv = [&] { return nn::Conv2d(nn::Conv2dOptions(channels, channels, 3).padding(1).bias(false)); };
    body = register_module("body", nn::Sequential(conv(), nn::BatchNorm2d(channels), nn::ReLU(), conv(),
                                                  nn::BatchNorm2d(channels)));
    skip = register_module("skip", ember::quant::FloatFunctional());
  }
  ember::Tensor forward(const ember::Tensor& x) override { return skip->add_relu(body->forward(x), x); }
  int64_t channels;
  nn::Sequential body{nullptr};
  ember::quant::FloatFunctional skip{nullptr};
};
EMBER_MODULE(ResidualBlock);

nn::Sequential make_model(const std::string& kind) {
  if (kind == "resnet") {
    auto stem = [](int64_t in, int64_t out, int64_t k) {
      return nn::Conv2d(nn::Conv2dOptions(in, out, k).padding(k / 2).bias(false));
    };
    return nn::Sequential(stem(1, 16, 3), nn::BatchNorm2d(16), nn::ReLU(), ResidualBlock(16),
                          nn::MaxPool2d(nn::MaxPool2dOptions(2)), stem(16, 32, 3), nn::BatchNorm2d(32), nn::ReLU(),
                          ResidualBlock(32), nn::MaxPool2d(nn::MaxPool2dOptions(2)), stem(32, 64, 1),
                          nn::BatchNorm2d(64), nn::ReLU(), nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions(1)),
                          nn::Flatten(), nn::Linear(64, 10));
  }
  if (kind == "mlp") {
    return nn::Sequential(nn::Flatten(), nn::Linear(784, 512), nn::ReLU(), nn::Linear(512, 256), nn::ReLU(),
                          nn::Linear(256, 10));
  }
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)), nn::ReLU(),
                        nn::MaxPool2d(nn::MaxPool2dOptions(2)),
                        nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)), nn::ReLU(),
                        nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Flatten(), nn::Linear(3136, 128),
                        nn::ReLU(), nn::Linear(128, 10));
}

// Test accuracy with the model in eval mode and no graph recorded.
double evaluate(nn::Sequential& model, const std::shared_ptr<data::FashionMNIST>& test_set) {
  model->eval();
  ember::NoGradGuard no_grad;
  data::DataLoader loader(test_set, data::DataLoaderOptions().batch_size(1000));
  int64_t correct = 0, seen = 0;
  for (data::Example& batch : loader) {
    ember::Tensor pred = model->forward(batch.data).argmax(1);
    correct += pred.eq(batch.target).sum().item<int64_t>();
    seen += batch.target.size(0);
  }
  model->train();
  return seen ? static_cast<double>(correct) / static_cast<double>(seen) : 0.0;
}

// Seconds per call of fn: the median of `reps` calls after two warm-up calls.
template <typename Fn>
double median_seconds(int reps, Fn&& fn) {
  fn();
  fn();
  std::vector<double> s;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

// --quantize dynamic|static|qat: the trained model against its int8 copy (accuracy, size on
// disk, speed). The float model is left as it is. Static quantization calibrates on the
// first 1000 images of calibration_set; QAT fine-tunes on train_data.
void report_quantization(nn::Sequential& model, const Args& args, const std::shared_ptr<data::FashionMNIST>& calibration_set,
                         const std::shared_ptr<data::Dataset>& train_data,
                         const std::shared_ptr<data::FashionMNIST>& test_set, const std::filesystem::path& out_dir,
                         double fp32_accuracy) {
  const std::string& mode = args.quantize;
  const std::string& observer = args.observer;
  nn::Sequential qmodel(std::dynamic_pointer_cast<nn::SequentialImpl>(model->clone()));
  std::vector<std::string> replaced;
  double calibration_ms = 0.0, qat_accuracy = 0.0;
  if (mode == "dynamic") {
    replaced = ember::quant::quantize_dynamic(*qmodel, {ember::quant::ModuleKind::Linear});
  } else if (mode == "qat") {
    // Fine-tune with fake quantization, then convert: the weights adapt to the int8 grids.
    const auto t0 = std::chrono::steady_clock::now();
    qmodel->train();
    ember::quant::prepare_qat(*qmodel);
    ember::optim::Adam opt(qmodel->parameters(), ember::optim::AdamOptions(args.lr * 0.1));
    data::DataLoader loader(train_data, data::DataLoaderOptions()
                                            .batch_size(args.batch_size)
                                            .shuffle(true)
                                            .seed(args.seed + 1)
                                            .num_workers(args.workers));
    for (int64_t epoch = 1; epoch <= args.qat_epochs; ++epoch) {
      loader.set_epoch(epoch);
      data::ProgressBar bar(static_cast<int64_t>(loader.size()),
                            "qat " + std::to_string(epoch) + "/" + std::to_string(args.qat_epochs), args.batch_size);
      int64_t step = 0;
      for (data::Example& batch : loader) {
        opt.zero_grad();
        ember::Tensor loss = nn::functional::cross_entropy(qmodel->forward(batch.data), batch.target);
        loss.backward();
        opt.step();
        bar.update(++step, {{"loss", loss.item<double>()}});
      }
      bar.close();
      if (epoch == args.qat_epochs) ember::quant::freeze_bn_stats(*qmodel);
    }
    qat_accuracy = evaluate(qmodel, test_set);  // fake-quantized, eval mode (ranges frozen)
    qmodel->eval();
    replaced = ember::quant::convert(*qmodel);
    calibration_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  } else {
    const auto t0 = std::chrono::steady_clock::now();
    qmodel->eval();
    ember::quant::QConfig config;
    config.activation = observer == "percentile"       ? ember::quant::ObserverKind::Percentile
                        : observer == "moving_average" ? ember::quant::ObserverKind::MovingAverageMinMax
                                                       : ember::quant::ObserverKind::MinMax;
    ember::quant::prepare(*qmodel, config);
    {
      ember::InferenceMode guard;
      std::vector<int64_t> first(static_cast<size_t>(std::min<int64_t>(1000, calibration_set->size())));
      for (size_t i = 0; i < first.size(); ++i) first[i] = static_cast<int64_t>(i);
      data::DataLoader loader(std::make_shared<data::Subset>(calibration_set, first),
                              data::DataLoaderOptions().batch_size(100));
      for (data::Example& b : loader) qmodel->forward(b.data);
    }
    replaced = ember::quant::convert(*qmodel);
    calibration_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  const double int8_accuracy = evaluate(qmodel, test_set);
  const std::string fp32_path = (out_dir / "model_fp32.safetensors").string();
  const std::string int8_path = (out_dir / ("model_int8_" + mode + ".safetensors")).string();
  ember::save(model->state_dict(), fp32_path);
  ember::save(qmodel->state_dict(), int8_path);
  const double fp32_kib = static_cast<double>(std::filesystem::file_size(fp32_path)) / 1024.0;
  const double int8_kib = static_cast<double>(std::filesystem::file_size(int8_path)) / 1024.0;

  data::DataLoader loader(test_set, data::DataLoaderOptions().batch_size(1000));
  std::vector<ember::Tensor> batches;
  for (data::Example& b : loader) batches.push_back(b.data);
  const ember::Tensor one = batches.front().narrow(0, 0, 1).contiguous();
  auto timings = [&](nn::Sequential& m) {
    m->eval();
    ember::InferenceMode guard;
    const double pass = median_seconds(3, [&] {
      for (const ember::Tensor& x : batches) m->forward(x);
    });
    const double single = median_seconds(200, [&] { m->forward(one); });
    m->train();
    return std::make_pair(pass, single);
  };
  const auto [fp32_pass, fp32_one] = timings(model);
  const auto [int8_pass, int8_one] = timings(qmodel);
  std::string names;
  for (const auto& n : replaced) names += (names.empty() ? "" : ", ") + n;
  if (mode == "dynamic") {
    std::printf("quantize dynamic: int8 Linear layers %s (weights per channel, activations per batch)\n",
                names.c_str());
  } else if (mode == "qat") {
    std::printf(
        "quantize qat: int8 layers %s (%lld epoch(s) of quantization-aware fine-tuning at lr %g in %.1f s; "
        "fake-quantized model: accuracy %.4f)\n",
        names.c_str(), static_cast<long long>(args.qat_epochs), args.lr * 0.1, calibration_ms / 1000.0, qat_accuracy);
  } else {
    std::printf(
        "quantize static: int8 layers %s (weights per channel, activations per tensor with scales "
        "calibrated on 1000 training images in %.0f ms, %s observers)\n",
        names.c_str(), calibration_ms, observer.c_str());
  }
  std::printf("  %-6s  %9s  %14s  %22s  %16s\n", "model", "accuracy", "size on disk", "test set (batch 1000)",
              "one image");
  std::printf("  %-6s  %9.4f  %10.1f KiB  %19.1f ms  %13.3f ms\n", "fp32", fp32_accuracy, fp32_kib, fp32_pass * 1e3,
              fp32_one * 1e3);
  std::printf("  %-6s  %9.4f  %10.1f KiB  %19.1f ms  %13.3f ms\n", "int8", int8_accuracy, int8_kib, int8_pass * 1e3,
              int8_one * 1e3);
  std::printf("  int8 - fp32: %+.2f accuracy points; %.2fx smaller; %.2fx faster (test set), %.2fx (one image)\n",
              (int8_accuracy - fp32_accuracy) * 100.0, fp32_kib / int8_kib, fp32_pass / int8_pass, fp32_one / int8_one);
}

// The model as a standalone artifact: traced in eval mode with a dynamic batch, frozen, and
// saved with what a server needs to use it (labels, input normalisation, input profile).
void export_model(nn::Sequential& model, const std::shared_ptr<data::FashionMNIST>& test_set, const Args& args,
                  double accuracy) {
  model->eval();
  data::DataLoader loader(test_set, data::DataLoaderOptions().batch_size(256));
  const data::Example sample = *loader.begin();
  ember::jit::TraceOptions opt;
  opt.dynamic_batch = true;
  opt.input_names = {"images"};
  opt.output_names = {"logits"};
  ember::jit::GraphModule frozen = ember::jit::freeze(ember::jit::trace(*model, sample.data, opt));
  ember::Value meta = ember::Value::dict();
  meta["model_name"] = "fashion-mnist-" + args.model;
  meta["version"] = "1";
  ember::Value run = ember::Value::dict();
  run["epochs"] = args.epochs;
  run["seed"] = static_cast<int64_t>(args.seed);
  run["batch_size"] = args.batch_size;
  run["lr"] = args.lr;
  run["test_accuracy"] = accuracy;
  meta["training_run"] = run;
  ember::Value norm = ember::Value::dict();
  norm["scale"] = 1.0 / 255.0;  // uint8 pixels to [0, 1], then (x - mean) / std
  norm["mean"] = std::vector<double>{0.2860};
  norm["std"] = std::vector<double>{0.3530};
  meta["normalization"] = norm;
  ember::Value::List labels;
  for (const char* l : {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
                        "Ankle boot"})
    labels.push_back(ember::Value(l));
  meta["labels"] = ember::Value(labels);
  meta["input_profile"] = ember::jit::input_profile(sample.data);
  ember::jit::save(frozen, args.export_path, meta);
  model->train();
  std::printf("exported: %s (%lld ops, %lld parameters)\n", args.export_path.c_str(),
              static_cast<long long>(frozen.graph().nodes.size()),
              static_cast<long long>(frozen.graph().parameter_count()));
}

// Peak resident memory of this process in MiB (Linux: VmHWM).
double peak_rss_mb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  }
  return 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  int rank = 0, world = 1;
  if (args.distributed) {
#ifdef EMBER_HAVE_DISTRIBUTED
    try {
      ember::distributed::init_process_group({.backend = args.backend});
    } catch (const ember::Error& e) {
      std::cerr << e.what() << "\n";
      return 1;
    }
    rank = ember::distributed::get_rank();
    world = ember::distributed::get_world_size();
#else
    std::cerr << "--distributed: this build has no distributed training (libgloo-dev was missing)\n";
    return 1;
#endif
  }
  // Under ember-run each worker gets its share of the cores in OMP_NUM_THREADS.
  const char* omp = std::getenv("OMP_NUM_THREADS");
  const int threads = args.distributed && omp ? std::max(1, std::atoi(omp)) : args.threads;
  ember::set_num_threads(threads);
  ember::manual_seed(args.seed);

  std::shared_ptr<data::FashionMNIST> train_set, test_set;
  try {
    train_set = std::make_shared<data::FashionMNIST>(args.data_dir, /*train=*/true);
    test_set = std::make_shared<data::FashionMNIST>(args.data_dir, /*train=*/false);
    // Standardise pixels with the training set's mean and std (as torchvision examples do);
    // a single Normalize keeps the loader's fused uint8 -> float batch path.
    train_set->set_transform(data::transforms::Normalize({0.2860}, {0.3530}));
    test_set->set_transform(data::transforms::Normalize({0.2860}, {0.3530}));
  } catch (const ember::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  std::shared_ptr<data::Dataset> train_data = train_set;
  if (args.limit > 0 && args.limit < static_cast<int64_t>(train_set->size())) {
    std::vector<int64_t> first(static_cast<size_t>(args.limit));
    for (size_t i = 0; i < first.size(); ++i) first[i] = static_cast<int64_t>(i);
    train_data = std::make_shared<data::Subset>(train_set, first);
  }

  nn::Sequential model = make_model(args.model);
  ember::optim::Adam optimizer(model->parameters(), ember::optim::AdamOptions(args.lr));
  auto loader_options = data::DataLoaderOptions().batch_size(args.batch_size).num_workers(args.workers).seed(args.seed);
  if (args.distributed) {
    // This rank's share of each epoch, reshuffled by set_epoch the same way on every rank.
    loader_options.sampler(std::make_shared<data::DistributedSampler>(static_cast<int64_t>(train_data->size()), world,
                                                                      rank, /*shuffle=*/true, args.seed));
  } else {
    loader_options.shuffle(true);
  }
  data::DataLoader loader(train_data, loader_options);

  const bool use_amp = !args.amp.empty();
  const ember::DType amp_dtype = args.amp == "fp16" ? ember::kFloat16 : ember::kBFloat16;
  // Loss scaling is for float16's narrow range; bfloat16 has float32's exponent range.
  ember::amp::GradScalerOptions scaler_options;
  scaler_options.enabled = args.amp == "fp16";
  ember::amp::GradScaler scaler(scaler_options);
  int64_t skipped_steps = 0;

  const std::filesystem::path out_dir(args.out);
  const std::string ckpt_path = (out_dir / "checkpoint.safetensors").string();
  int64_t first_epoch = 1;
  if (args.resume) {
    try {
      ember::Value ckpt = ember::load(ckpt_path);
      model->load_state_dict(ckpt.at("model").to_tensor_dict());
      optimizer.load_state_dict(ckpt.at("optimizer"));
      ember::set_rng_state(ckpt.at("rng_state").to_tensor());
      if (scaler.is_enabled() && ckpt.contains("scaler")) scaler.load_state_dict(ckpt.at("scaler"));
      first_epoch = ckpt.at("epoch").to_int() + 1;
      std::cout << "resumed from " << ckpt_path << " after epoch " << first_epoch - 1 << " (test accuracy "
                << ckpt.at("test_accuracy").to_double() << ")\n";
    } catch (const ember::Error& e) {
      std::cerr << "cannot resume: " << e.what() << "\n";
      return 1;
    }
  }
  std::filesystem::create_directories(out_dir);
  // The forward pass: the model itself, or its DistributedDataParallel wrapper (created
  // after a resume, so that it broadcasts the restored parameters).
  std::function<ember::Tensor(const ember::Tensor&)> forward = [&](const ember::Tensor& x) {
    return model->forward(x);
  };
#ifdef EMBER_HAVE_DISTRIBUTED
  std::shared_ptr<nn::parallel::DistributedDataParallelImpl> ddp;
  if (args.distributed) {
    ddp = std::make_shared<nn::parallel::DistributedDataParallelImpl>(model.ptr());
    forward = [&](const ember::Tensor& x) { return ddp->forward(x); };
  }
#endif
  // Rank 0 evaluates; the others get its accuracy.
  auto evaluate_all = [&]() {
    double acc = rank == 0 ? evaluate(model, test_set) : 0.0;
#ifdef EMBER_HAVE_DISTRIBUTED
    if (args.distributed) {
      ember::Tensor t = ember::tensor(acc, ember::TensorOptions(ember::kFloat64));
      ember::distributed::broadcast(t, 0);
      acc = t.item<double>();
    }
#endif
    return acc;
  };
  if (rank != 0) std::cout.setstate(std::ios::failbit);  // one rank reports

  std::cout << "Fashion-MNIST: " << train_data->size() << " training images, " << test_set->size()
            << " test images; batch " << args.batch_size << ", Adam lr " << args.lr << ", " << threads
            << " threads, " << args.workers << " loader workers, CPU kernels: " << ember::cpu_capability_name()
            << (use_amp ? ", mixed precision: autocast " + args.amp + (scaler.is_enabled() ? " + GradScaler" : "") : "")
            << (args.distributed ? ", " + std::to_string(world) + " ranks (DistributedDataParallel)" : std::string())
            << "\n"
            << *model << "\n";

  double accuracy = 0, train_seconds = 0;
  int64_t trained_samples = 0;
  for (int64_t epoch = first_epoch; epoch <= args.epochs; ++epoch) {
    loader.set_epoch(epoch);
    std::ostringstream quiet;  // ranks other than 0 report nothing
    data::ProgressBar bar = rank == 0 ? data::ProgressBar(static_cast<int64_t>(loader.size()),
                                                          "epoch " + std::to_string(epoch) + "/" +
                                                              std::to_string(args.epochs),
                                                          args.batch_size * world)
                                      : data::ProgressBar(static_cast<int64_t>(loader.size()), "", 0, quiet, false);
    const auto start = std::chrono::steady_clock::now();
    int64_t step = 0, epoch_samples = 0;
    double loss_sum = 0;
    std::unique_ptr<ember::profiler::Profile> prof;
    if (!args.profile_path.empty() && epoch == first_epoch) {
      ember::profiler::ProfileOptions po;
      po.record_shapes = true;
      po.profile_memory = true;
      po.schedule = {.skip_first = 5, .wait = 2, .warmup = 3, .active = 5, .repeat = 1};
      prof = std::make_unique<ember::profiler::Profile>(po);
    }
    for (data::Example& batch : loader) {
      {
        EMBER_RECORD("train step");
        optimizer.zero_grad();
        ember::Tensor loss;
        {
          ember::amp::AutocastGuard autocast(amp_dtype, use_amp);
          loss = nn::functional::cross_entropy(forward(batch.data), batch.target);
        }
        scaler.scale(loss).backward();
        if (!scaler.step(optimizer)) ++skipped_steps;
        scaler.update();
        const double l = loss.item<double>();
        loss_sum += l;
        epoch_samples += batch.data.size(0) * world;
        bar.update(++step, {{"loss", l}});
      }
      if (prof) prof->step();
    }
    bar.close();
    if (prof) {
      prof->stop();
      std::printf("%s", prof->table("self_cpu_time_total", 15).c_str());
      // Peak of the profiled steps by category (Note [Memory by category]).
      ember::profiler::MemorySample peak;
      for (const auto& m : prof->memory_timeline()) {
        if (m.categories.known && m.allocated_bytes > peak.allocated_bytes) peak = m;
      }
      if (peak.categories.known) {
        const auto& c = peak.categories;
        auto mib = [](int64_t b) { return static_cast<double>(b) / (1 << 20); };
        std::printf("memory at the profiled peak (after %s): %.1f MiB = parameters %.1f + gradients %.1f + "
                    "optimizer state %.1f + saved activations %.1f + other %.1f\n",
                    peak.after.c_str(), mib(peak.allocated_bytes), mib(c.parameters), mib(c.gradients),
                    mib(c.optimizer_state), mib(c.activations), mib(c.other));
      }
      prof->export_chrome_trace(args.profile_path);
      std::printf("profile: %zu events of 5 steps written to %s (open in https://ui.perfetto.dev or chrome://tracing)\n",
                  prof->events().size(), args.profile_path.c_str());
      prof.reset();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    train_seconds += seconds;
    trained_samples += epoch_samples;
    accuracy = evaluate_all();
    if (rank == 0) std::printf("epoch %lld: mean loss %.4f, %.1f s (%.0f samples/s), test accuracy %.4f\n",
                static_cast<long long>(epoch), step ? loss_sum / static_cast<double>(step) : 0.0, seconds,
                static_cast<double>(epoch_samples) / std::max(seconds, 1e-9), accuracy);
    if (scaler.is_enabled()) {
      std::printf("GradScaler: scale %g, %lld steps skipped so far (inf/NaN gradients)\n", scaler.get_scale(),
                  static_cast<long long>(skipped_steps));
    }

    if (rank != 0) continue;  // rank 0 writes the checkpoint
    ember::Value ckpt = ember::Value::dict();
    ckpt["model"] = ember::Value(model->state_dict());
    ckpt["optimizer"] = optimizer.state_dict();
    ckpt["rng_state"] = ember::get_rng_state();
    if (scaler.is_enabled()) ckpt["scaler"] = scaler.state_dict();
    ckpt["epoch"] = epoch;
    ckpt["test_accuracy"] = accuracy;
    ckpt["seed"] = static_cast<int64_t>(args.seed);
    ember::save(ckpt, ckpt_path);
  }

  if (first_epoch > args.epochs) {
    accuracy = evaluate_all();
    if (rank == 0) std::printf("nothing to train: the checkpoint already covers %lld epochs\n", static_cast<long long>(args.epochs));
  }
#ifdef EMBER_HAVE_DISTRIBUTED
  if (args.distributed) {
    ddp.reset();
    ember::distributed::barrier();  // rank 0's checkpoint is complete before anyone exits
    ember::distributed::destroy_process_group();
  }
#endif
  if (rank != 0) return accuracy < args.min_accuracy ? 3 : 0;
  std::printf("final test accuracy: %.4f\ncheckpoint: %s (resume with --resume --epochs N)\n", accuracy,
              ckpt_path.c_str());
  if (!args.quantize.empty()) {
    try {
      report_quantization(model, args, train_set, train_data, test_set, out_dir, accuracy);
    } catch (const ember::Error& e) {
      std::cerr << "quantization failed: " << e.what() << "\n";
      return 1;
    }
  }
  if (!args.export_path.empty()) {
    try {
      export_model(model, test_set, args, accuracy);
    } catch (const ember::Error& e) {
      std::cerr << "export failed: " << e.what() << "\n";
      return 1;
    }
  }
  std::printf("summary: epochs=%lld train_seconds=%.3f samples_per_s=%.1f test_accuracy=%.4f peak_rss_mb=%.1f\n",
              static_cast<long long>(args.epochs - first_epoch + 1), train_seconds,
              train_seconds > 0 ? static_cast<double>(trained_samples) / train_seconds : 0.0, accuracy,
              peak_rss_mb());
  if (accuracy < args.min_accuracy) {
    std::fprintf(stderr, "test accuracy %.4f is below --min-accuracy %.4f\n", accuracy, args.min_accuracy);
    return 3;
  }
  return 0;
}
