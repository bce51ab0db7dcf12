// The second main job: a character-level transformer language model trained on the text of
// Debian's fortune cookies (/usr/share/games/fortunes). `make demo-lm` trains it for a few
// minutes; docs/char_lm.md shows a run.
//
//   char_lm [--epochs 3] [--steps-per-epoch 0] [--batch-size 16] [--accum 2] [--block 128]
//           [--layers 4] [--heads 4] [--dim 128] [--dropout 0] [--lr 3e-3] [--warmup 50]
//           [--weight-decay 0.1] [--clip 1] [--val-batches 0] [--threads 2] [--workers 0]
//           [--seed 0] [--data DIR] [--out DIR] [--resume] [--require-below unigram|bigram]
//           [--amp bf16]
//   char_lm --out DIR --sample "prompt" [--length 400] [--temperature 0.8] [--top-k 20]
//   char_lm --out DIR --check-cache
//
// Data: every fortune file is split into fortunes ("%" lines); every 10th fortune goes to
// validation. Characters are bytes; the vocabulary is the bytes that occur. The token ids are
// written once to DIR/train.bin and DIR/val.bin (uint16) and read back memory-mapped through
// ember::data::TokenDataset.
// Training: AdamW (weight decay on matrices only), linear warmup then cosine decay to 10% of
// --lr, gradient clipping, gradient accumulation over --accum micro-batches (declared to the
// optimizer, so the GradAccumulation guard checks it). An epoch is one pass over the training
// blocks, or --steps-per-epoch optimizer steps. After each epoch: validation loss in nats per
// character next to a unigram and a bigram model of the training text, a checkpoint
// (DIR/checkpoint.safetensors) and the loss curve (DIR/loss.svg).
// --sample loads the checkpoint and generates --length characters after the prompt with a KV
// cache. --check-cache compares the checkpoint's logits computed one token at a time through
// the KV cache with those of one pass over the whole sequence. --require-below makes the run fail (exit 3) when the
// final validation loss is not below that baseline; the smoke test uses it. --amp bf16 trains with
// mixed precision (docs/amp.md): the forward pass and the loss run under amp::AutocastGuard
// (the Linear layers and attention in bfloat16, LayerNorm, softmax and the loss in float32),
// the parameters, gradients and AdamW state stay float32; bfloat16 needs no GradScaler.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/options.h"
#include "model.h"

namespace data = ember::data;
namespace fs = std::filesystem;
using ember::Tensor;

namespace {

struct Args {
  int64_t epochs = 3, steps_per_epoch = 0, batch_size = 16, accum = 2, val_batches = 0;
  char_lm::Config model;
  double lr = 3e-3, weight_decay = 0.1, clip = 1.0;
  int64_t warmup = 50;
  int threads = 2, workers = 0;
  uint64_t seed = 0;
  std::string data_dir = "/usr/share/games/fortunes", out = "runs/char_lm", require_below;
  bool resume = false;
  std::string amp;  // "" or "bf16"
  bool sample = false, check_cache = false;
  std::string prompt;
  int64_t length = 400, top_k = 20;
  double temperature = 0.8;
};

[[noreturn]] void usage(const char* prog, const std::string& problem) {
  std::fprintf(stderr,
               "%s: %s\nusage: %s [--epochs N] [--steps-per-epoch N] [--batch-size N] [--accum N] [--block N] "
               "[--layers N] [--heads N] [--dim N] [--dropout X] [--lr X] [--warmup N] [--weight-decay X] [--clip X] "
               "[--val-batches N] [--threads N] [--workers N] [--seed N] [--data DIR] [--out DIR] [--resume] "
               "[--require-below unigram|bigram] [--amp bf16]\n       %s --out DIR --sample PROMPT [--length N] "
               "[--temperature X] [--top-k N]\n",
               prog, problem.c_str(), prog, prog);
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (examples::Options o(argc, argv, [&](const std::string& problem) { usage(argv[0], problem); }); o.next();) {
    // clang-format off
    if (o.is("--epochs")) a.epochs = o.int64();
    else if (o.is("--steps-per-epoch")) a.steps_per_epoch = o.int64();
    else if (o.is("--batch-size")) a.batch_size = o.int64();
    else if (o.is("--accum")) a.accum = o.int64();
    else if (o.is("--block")) a.model.block = o.int64();
    else if (o.is("--layers")) a.model.layers = o.int64();
    else if (o.is("--heads")) a.model.heads = o.int64();
    else if (o.is("--dim")) a.model.dim = o.int64();
    else if (o.is("--dropout")) a.model.dropout = o.real();
    else if (o.is("--lr")) a.lr = o.real();
    else if (o.is("--warmup")) a.warmup = o.int64();
    else if (o.is("--weight-decay")) a.weight_decay = o.real();
    else if (o.is("--clip")) a.clip = o.real();
    else if (o.is("--val-batches")) a.val_batches = o.int64();
    else if (o.is("--threads")) a.threads = o.integer();
    else if (o.is("--workers")) a.workers = o.integer();
    else if (o.is("--seed")) a.seed = o.uint64();
    else if (o.is("--data")) a.data_dir = o.str();
    else if (o.is("--out")) a.out = o.str();
    else if (o.is("--resume")) a.resume = true;
    else if (o.is("--require-below")) a.require_below = o.str();
    else if (o.is("--sample")) a.sample = true, a.prompt = o.str();
    else if (o.is("--check-cache")) a.check_cache = true;
    else if (o.is("--length")) a.length = o.int64();
    else if (o.is("--temperature")) a.temperature = o.real();
    else if (o.is("--top-k")) a.top_k = o.int64();
    else if (o.is("--amp")) a.amp = o.str();
    else o.unknown();
    // clang-format on
  }
  if (a.epochs < 1 || a.batch_size < 1 || a.accum < 1 || a.threads < 1 || a.workers < 0 || !(a.lr > 0) ||
      a.model.block < 2 || a.model.layers < 1 || a.model.heads < 1 || a.model.dim % a.model.heads != 0) {
    usage(argv[0],
          "epochs, batch size, accum, threads, layers, heads >= 1, block >= 2, workers >= 0, lr > 0, "
          "and dim a multiple of heads");
  }
  if (!a.amp.empty() && a.amp != "bf16") {
    usage(argv[0], "--amp is bf16, not " + a.amp + " (float16 would need a GradScaler; use bf16)");
  }
  if (!a.require_below.empty() && a.require_below != "unigram" && a.require_below != "bigram") {
    usage(argv[0], "--require-below is unigram or bigram, not " + a.require_below);
  }
  return a;
}

// ---- data ----

struct Corpus {
  std::vector<int64_t> vocab;  // token id -> byte
  std::vector<uint16_t> train, val;
};

// Every fortune file (not the .dat indexes, not the .u8 links), sorted by name, cut into
// fortunes at "%" lines; every 10th fortune is held out for validation.
Corpus read_fortunes(const std::string& dir) {
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && !e.is_symlink() && e.path().extension() != ".dat") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::string train_text, val_text;
  int64_t count = 0;
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string line, fortune;
    while (std::getline(in, line)) {
      if (line != "%") {
        fortune += line + "\n";
        continue;
      }
      if (!fortune.empty()) ((count++ % 10 == 9) ? val_text : train_text) += fortune + "\n";
      fortune.clear();
    }
    if (!fortune.empty()) ((count++ % 10 == 9) ? val_text : train_text) += fortune + "\n";
  }
  EMBER_CHECK(!train_text.empty() && !val_text.empty(), "[char_lm] no fortunes found in ", dir,
              " (install Debian's fortunes package: apt-get install fortunes)");
  Corpus c;
  std::vector<int64_t> id(256, -1);
  for (const std::string* t : {&train_text, &val_text})
    for (unsigned char ch : *t) id[ch] = 0;
  for (int b = 0; b < 256; ++b)
    if (id[b] == 0) id[b] = static_cast<int64_t>(c.vocab.size()), c.vocab.push_back(b);
  for (unsigned char ch : train_text) c.train.push_back(static_cast<uint16_t>(id[ch]));
  for (unsigned char ch : val_text) c.val.push_back(static_cast<uint16_t>(id[ch]));
  return c;
}

void write_tokens(const std::string& path, const std::vector<uint16_t>& tokens) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size() * 2));
  EMBER_CHECK(out.good(), "[char_lm] cannot write ", path);
}

// Cross-entropy (nats per character) on val of unigram and bigram models of train, add-one
// smoothed: what a transformer must beat to have learned more than letter frequencies.
std::pair<double, double> baselines(const Corpus& c) {
  const size_t V = c.vocab.size();
  std::vector<double> uni(V, 1.0), bi(V * V, 1.0), row(V, static_cast<double>(V));
  for (size_t i = 0; i < c.train.size(); ++i) {
    uni[c.train[i]] += 1;
    if (i > 0) bi[c.train[i - 1] * V + c.train[i]] += 1, row[c.train[i - 1]] += 1;
  }
  const double total = static_cast<double>(c.train.size() + V);
  double u = 0, b = 0;
  for (size_t i = 1; i < c.val.size(); ++i) {
    u -= std::log(uni[c.val[i]] / total);
    b -= std::log(bi[c.val[i - 1] * V + c.val[i]] / row[c.val[i - 1]]);
  }
  const double n = static_cast<double>(c.val.size() - 1);
  return {u / n, b / n};
}

// ---- training pieces ----

// Linear warmup to lr, then cosine decay to lr/10 at total_steps.
double lr_at(int64_t step, int64_t total_steps, const Args& a) {
  if (step < a.warmup) return a.lr * static_cast<double>(step + 1) / static_cast<double>(a.warmup);
  const double progress = std::min(
      1.0, static_cast<double>(step - a.warmup) / static_cast<double>(std::max<int64_t>(1, total_steps - a.warmup)));
  return a.lr * (0.1 + 0.9 * 0.5 * (1.0 + std::cos(M_PI * progress)));
}

// Mean validation loss over the first `max_batches` batches (0: all), eval mode, no grad.
double validation_loss(char_lm::Transformer& model, data::DataLoader& loader, int64_t max_batches) {
  ember::nn::EvalScope eval(model);
  double sum = 0;
  int64_t n = 0;
  for (data::Example& b : loader) {
    sum += char_lm::lm_loss(model, b.data, b.target).item<double>();
    if (++n == max_batches) break;
  }
  return n ? sum / static_cast<double>(n) : NAN;
}

struct History {
  std::vector<double> steps, losses;          // training loss, averaged per logged interval
  std::vector<double> val_steps, val_losses;  // after each epoch
};

// The loss curve as an SVG picture: training loss, validation loss per epoch, and the two
// baselines as dashed lines.
void write_svg(const std::string& path, const History& h, double unigram, double bigram) {
  const double W = 720, H = 420, L = 60, R = 20, T = 30, B = 50;
  double xmax = 1, ymax = unigram * 1.15, ymin = 1e9;
  for (double s : h.steps) xmax = std::max(xmax, s);
  for (double v : h.losses) ymin = std::min(ymin, v);
  for (double v : h.val_losses) ymin = std::min(ymin, v);
  ymin = std::max(0.0, std::floor(std::min(ymin, bigram) * 2 - 1) / 2);
  auto X = [&](double s) { return L + (W - L - R) * s / xmax; };
  auto Y = [&](double v) { return T + (H - T - B) * (1 - (std::min(v, ymax) - ymin) / (ymax - ymin)); };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << L << "\" y=\"18\" font-size=\"14\">char_lm on fortunes: loss (nats/char) against "
    << "optimizer step</text>\n";
  for (double v = std::ceil(ymin * 2) / 2; v <= ymax; v += 0.5) {
    o << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << Y(v) << "\" y2=\"" << Y(v)
      << "\" stroke=\"#ddd\"/><text x=\"" << L - 8 << "\" y=\"" << Y(v) + 4 << "\" text-anchor=\"end\">" << v
      << "</text>\n";
  }
  for (int i = 0; i <= 4; ++i) {
    const double s = std::round(xmax * i / 4);
    o << "<text x=\"" << X(s) << "\" y=\"" << H - B + 18 << "\" text-anchor=\"middle\">" << s << "</text>\n";
  }
  o << "<text x=\"" << (W + L) / 2 << "\" y=\"" << H - 12 << "\" text-anchor=\"middle\">optimizer step</text>\n";
  auto hline = [&](double v, const char* color, const char* label) {
    o << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << Y(v) << "\" y2=\"" << Y(v) << "\" stroke=\""
      << color << "\" stroke-dasharray=\"6 4\"/><text x=\"" << W - R - 4 << "\" y=\"" << Y(v) - 4
      << "\" text-anchor=\"end\" fill=\"" << color << "\">" << label << "</text>\n";
  };
  hline(unigram, "#888", "unigram baseline");
  hline(bigram, "#c60", "bigram baseline");
  o << "<polyline fill=\"none\" stroke=\"#2563eb\" stroke-width=\"1.5\" points=\"";
  for (size_t i = 0; i < h.steps.size(); ++i) o << X(h.steps[i]) << "," << Y(h.losses[i]) << " ";
  o << "\"/>\n";
  for (size_t i = 0; i < h.val_steps.size(); ++i) {
    o << "<circle cx=\"" << X(h.val_steps[i]) << "\" cy=\"" << Y(h.val_losses[i]) << "\" r=\"4\" fill=\"#dc2626\"/>\n";
  }
  o << "<text x=\"" << L + 10 << "\" y=\"" << H - B - 10 << "\" fill=\"#2563eb\">training loss</text>"
    << "<text x=\"" << L + 110 << "\" y=\"" << H - B - 10 << "\" fill=\"#dc2626\">validation loss (per epoch)</text>\n"
    << "</svg>\n";
  std::ofstream(path) << o.str();
}

ember::Value config_value(const char_lm::Config& c) {
  ember::Value v = ember::Value::dict();
  v["vocab"] = c.vocab;
  v["block"] = c.block;
  v["layers"] = c.layers;
  v["heads"] = c.heads;
  v["dim"] = c.dim;
  v["dropout"] = c.dropout;
  return v;
}

char_lm::Config config_from(const ember::Value& v) {
  char_lm::Config c;
  c.vocab = v.at("vocab").to_int();
  c.block = v.at("block").to_int();
  c.layers = v.at("layers").to_int();
  c.heads = v.at("heads").to_int();
  c.dim = v.at("dim").to_int();
  c.dropout = v.at("dropout").to_double();
  return c;
}

std::string decode(const std::vector<int64_t>& ids, const std::vector<int64_t>& vocab) {
  std::string s;
  for (int64_t i : ids) s += static_cast<char>(vocab[static_cast<size_t>(i)]);
  return s;
}

char_lm::Transformer load_model(const ember::Value& ckpt) {
  char_lm::Transformer model(config_from(ckpt.at("config")));
  model->load_state_dict(ckpt.at("model").to_tensor_dict());
  return model;
}

// --check-cache: logits of a random sequence, once in one pass and once token by token through
// the KV cache; they must agree (exit 3 when not).
int check_cache(const std::string& ckpt_path) {
  char_lm::Transformer model = load_model(ember::load(ckpt_path));
  const int64_t T = std::min<int64_t>(40, model->config.block);
  const Tensor ids = ember::randint(0, model->config.vocab, {1, T});
  ember::InferenceMode inference;
  ember::nn::EvalScope eval(model);
  const Tensor full = model->forward(ids);
  char_lm::KVCache cache = model->make_cache(1);
  std::vector<Tensor> steps;
  for (int64_t t = 0; t < T; ++t) steps.push_back(model->forward(ids.narrow(1, t, 1), &cache));
  const double diff = (ember::cat(steps, 1) - full).abs().max().item<double>();
  std::printf("KV cache check: max |cached - full| = %.3g over %lld positions\n", diff, static_cast<long long>(T));
  return diff < 1e-4 ? 0 : 3;
}

// --sample: the checkpoint's model continues the prompt.
int sample(const Args& args, const std::string& ckpt_path) {
  ember::Value ckpt = ember::load(ckpt_path);
  const std::vector<int64_t> vocab = ckpt.at("vocab").to_int_list();
  char_lm::Transformer model = load_model(ckpt);
  std::vector<int64_t> ids;
  for (unsigned char ch : args.prompt.empty() ? std::string("\n") : args.prompt) {
    auto it = std::find(vocab.begin(), vocab.end(), static_cast<int64_t>(ch));
    EMBER_CHECK(it != vocab.end(), "[char_lm] the prompt has a character the model never saw (byte ",
                static_cast<int>(ch), "); use characters from the fortunes text");
    ids.push_back(it - vocab.begin());
  }
  std::mt19937_64 rng(args.seed);
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<int64_t> out = char_lm::generate(model, ids, args.length, args.temperature, args.top_k, rng);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s\n", decode(out, vocab).c_str());
  std::printf("generated %lld characters in %.2f s (%.0f characters/s, KV cache, temperature %.2f, top-k %lld)\n",
              static_cast<long long>(args.length), s, static_cast<double>(args.length) / s, args.temperature,
              static_cast<long long>(args.top_k));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse(argc, argv);
  ember::set_num_threads(args.threads);
  ember::manual_seed(args.seed);
  const fs::path out_dir(args.out);
  const std::string ckpt_path = (out_dir / "checkpoint.safetensors").string();
  try {
    if (args.sample) return sample(args, ckpt_path);
    if (args.check_cache) return check_cache(ckpt_path);
  } catch (const ember::Error& e) {
    std::cerr << "cannot sample: " << e.what() << "\n";
    return 1;
  }

  Corpus corpus;
  try {
    corpus = read_fortunes(args.data_dir);
  } catch (const ember::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  fs::create_directories(out_dir);
  const std::string train_bin = (out_dir / "train.bin").string(), val_bin = (out_dir / "val.bin").string();
  write_tokens(train_bin, corpus.train);
  write_tokens(val_bin, corpus.val);
  const auto [unigram, bigram] = baselines(corpus);
  args.model.vocab = static_cast<int64_t>(corpus.vocab.size());

  auto train_set = std::make_shared<data::TokenDataset>(train_bin, args.model.block);
  auto val_set = std::make_shared<data::TokenDataset>(val_bin, args.model.block);
  data::DataLoader loader(train_set, data::DataLoaderOptions()
                                         .batch_size(args.batch_size)
                                         .shuffle(true)
                                         .drop_last(true)
                                         .num_workers(args.workers)
                                         .seed(args.seed));
  data::DataLoader val_loader(val_set, data::DataLoaderOptions().batch_size(args.batch_size * args.accum));

  char_lm::Transformer model(args.model);
  ember::optim::AdamW optimizer(char_lm::adamw_groups(*model, args.weight_decay),
                                ember::optim::AdamWOptions(args.lr).betas({0.9, 0.99}));
  optimizer.set_accumulation_steps(args.accum);
  const int64_t micro_per_epoch = static_cast<int64_t>(loader.size());
  const int64_t steps_per_epoch = args.steps_per_epoch > 0
                                      ? std::min(args.steps_per_epoch, micro_per_epoch / args.accum)
                                      : micro_per_epoch / args.accum;
  const int64_t total_steps = steps_per_epoch * args.epochs;

  History hist;
  int64_t first_epoch = 1, step = 0;
  if (args.resume) {
    try {
      ember::Value ckpt = ember::load(ckpt_path);
      EMBER_CHECK(ckpt.at("vocab").to_int_list() == corpus.vocab,
                  "[char_lm] the checkpoint's vocabulary differs from "
                  "this text's; train from scratch (without --resume) or use the same --data");
      model->load_state_dict(ckpt.at("model").to_tensor_dict());
      optimizer.load_state_dict(ckpt.at("optimizer"));
      ember::set_rng_state(ckpt.at("rng_state").to_tensor());
      first_epoch = ckpt.at("epoch").to_int() + 1;
      step = ckpt.at("step").to_int();
      hist.steps = ckpt.at("train_steps").to_double_list();
      hist.losses = ckpt.at("train_losses").to_double_list();
      hist.val_steps = ckpt.at("val_steps").to_double_list();
      hist.val_losses = ckpt.at("val_losses").to_double_list();
      std::printf("resumed from %s after epoch %lld (step %lld, validation loss %.4f)\n", ckpt_path.c_str(),
                  static_cast<long long>(first_epoch - 1), static_cast<long long>(step), hist.val_losses.back());
    } catch (const ember::Error& e) {
      std::cerr << "cannot resume: " << e.what() << "\n";
      return 1;
    }
  }

  int64_t n_params = 0;
  for (const Tensor& p : model->parameters()) n_params += p.numel();
  std::printf("fortunes: %zu training and %zu validation characters, vocabulary %lld\n", corpus.train.size(),
              corpus.val.size(), static_cast<long long>(args.model.vocab));
  std::printf("model: %lld layers, %lld heads, dim %lld, context %lld, %.2fM parameters (tied embedding)\n",
              static_cast<long long>(args.model.layers), static_cast<long long>(args.model.heads),
              static_cast<long long>(args.model.dim), static_cast<long long>(args.model.block),
              static_cast<double>(n_params) / 1e6);
  std::printf(
      "training: AdamW lr %g (warmup %lld, cosine), batch %lld x %lld accumulated, clip %g, %lld steps per "
      "epoch, %d threads%s\n",
      args.lr, static_cast<long long>(args.warmup), static_cast<long long>(args.batch_size),
      static_cast<long long>(args.accum), args.clip, static_cast<long long>(steps_per_epoch), args.threads,
      args.amp.empty() ? "" : ", mixed precision: autocast bf16");
  std::printf("baselines on validation: unigram %.4f, bigram %.4f nats/char\n", unigram, bigram);

  double val = hist.val_losses.empty() ? NAN : hist.val_losses.back();
  const int64_t tokens_per_step = args.batch_size * args.accum * args.model.block;
  const int64_t log_every = std::max<int64_t>(1, steps_per_epoch / 50);
  for (int64_t epoch = first_epoch; epoch <= args.epochs; ++epoch) {
    loader.set_epoch(epoch);
    data::ProgressBar bar(steps_per_epoch, "epoch " + std::to_string(epoch) + "/" + std::to_string(args.epochs));
    const auto start = std::chrono::steady_clock::now();
    optimizer.zero_grad();  // a micro-batch left over from the last epoch's end does not carry over
    int64_t micro = 0, epoch_steps = 0;
    double step_loss = 0, log_loss = 0;
    int64_t log_n = 0;
    for (data::Example& batch : loader) {
      Tensor loss;
      {
        ember::amp::AutocastGuard autocast(ember::kBFloat16, !args.amp.empty());  // forward and loss only
        loss = char_lm::lm_loss(model, batch.data, batch.target);
      }
      (loss / static_cast<double>(args.accum)).backward();
      step_loss += loss.item<double>() / static_cast<double>(args.accum);
      if (++micro % args.accum != 0) continue;
      ember::nn::utils::clip_grad_norm_(model->parameters(), args.clip);
      const double lr = lr_at(step, total_steps, args);
      for (auto& g : optimizer.param_groups()) g.set_lr(lr);
      optimizer.step();
      optimizer.zero_grad();
      ++step;
      log_loss += step_loss;
      ++log_n;
      bar.update(++epoch_steps, {{"loss", step_loss}, {"lr", lr}});
      step_loss = 0;
      if (log_n == log_every) {
        hist.steps.push_back(static_cast<double>(step));
        hist.losses.push_back(log_loss / static_cast<double>(log_n));
        log_loss = 0;
        log_n = 0;
      }
      if (epoch_steps == steps_per_epoch) break;
    }
    bar.close();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    val = validation_loss(model, val_loader, args.val_batches);
    hist.val_steps.push_back(static_cast<double>(step));
    hist.val_losses.push_back(val);
    std::printf(
        "epoch %lld: train loss %.4f, validation loss %.4f nats/char (unigram %.4f, bigram %.4f), %.1f s, "
        "%.0f tokens/s\n",
        static_cast<long long>(epoch), hist.losses.empty() ? NAN : hist.losses.back(), val, unigram, bigram, seconds,
        static_cast<double>(epoch_steps * tokens_per_step) / std::max(seconds, 1e-9));

    ember::Value ckpt = ember::Value::dict();
    ckpt["model"] = ember::Value(model->state_dict());
    ckpt["optimizer"] = optimizer.state_dict();
    ckpt["rng_state"] = ember::get_rng_state();
    ckpt["epoch"] = epoch;
    ckpt["step"] = step;
    ckpt["config"] = config_value(args.model);
    ckpt["vocab"] = ember::Value(corpus.vocab);
    ckpt["train_steps"] = ember::Value(hist.steps);
    ckpt["train_losses"] = ember::Value(hist.losses);
    ckpt["val_steps"] = ember::Value(hist.val_steps);
    ckpt["val_losses"] = ember::Value(hist.val_losses);
    ember::save(ckpt, ckpt_path);
    write_svg((out_dir / "loss.svg").string(), hist, unigram, bigram);
  }
  if (first_epoch > args.epochs) {
    std::printf("nothing to train: the checkpoint already covers %lld epochs\n", static_cast<long long>(args.epochs));
  }
  std::mt19937_64 rng(args.seed);
  const auto newline = std::find(corpus.vocab.begin(), corpus.vocab.end(), int64_t{'\n'});
  const std::vector<int64_t> text = char_lm::generate(model, {newline - corpus.vocab.begin()}, 300, 0.8, 20, rng);
  std::printf("sample (temperature 0.8, top-k 20):\n%s\n", decode(text, corpus.vocab).c_str());
  std::printf("final validation loss %.4f nats/char (unigram %.4f, bigram %.4f)\ncheckpoint: %s, loss curve: %s\n", val,
              unigram, bigram, ckpt_path.c_str(), (out_dir / "loss.svg").string().c_str());
  const double bar_value = args.require_below == "unigram" ? unigram : bigram;
  if (!args.require_below.empty() && !(val < bar_value)) {
    std::fprintf(stderr, "validation loss %.4f is not below the %s baseline %.4f\n", val, args.require_below.c_str(),
                 bar_value);
    return 3;
  }
  return 0;
}
