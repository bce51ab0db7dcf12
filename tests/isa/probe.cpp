// Runs one kernel under the CPU level EMBER_CPU_CAPABILITY asks for and prints what it
// chose: the CTest cases in tests/CMakeLists.txt ("isa.*") check the overrides and the
// errors for unknown or unsupported levels. With --unsupported it sets the variable to
// the first level this CPU lacks (exit 77, "skipped", when it has them all). With --bits it
// prints a hash of the bits of kernels whose lanes are fixed so that every level gives the
// same result (Note [Fixed-lane accumulation], Note [Cross entropy's exp]);
// isa/same_bits.sh compares the hashes across the levels the CPU has.

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>

#include "ember/core/cpu_capability.h"
#include "ember/ember.h"

namespace {

// FNV-1a over a float32 tensor's bits.
uint64_t hash_bits(const ember::Tensor& t) {
  const ember::Tensor c = t.contiguous();
  const auto* p = static_cast<const unsigned char*>(c.data_ptr());
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < c.nbytes(); ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

int print_bits() {
  ember::manual_seed(7);
  // Row lengths that leave tails after the 16-, 8- and 256-wide blocks.
  ember::Tensor x = (ember::randn({37, 1003}) * 4).requires_grad_();
  ember::Tensor t = ember::randint(0, 1003, {37});
  ember::Tensor loss = ember::nn::functional::cross_entropy(x, t);
  loss.backward();
  std::cout << "capability: " << ember::cpu_capability_name() << "\n" << std::hex;
  std::cout << "cross_entropy " << hash_bits(loss.detach()) << " grad " << hash_bits(x.grad()) << "\n";
  ember::Tensor y = ember::randn({300, 517});
  // (softmax is left out: its exp is Sleef's at the AVX levels and libm's at the baseline.)
  std::cout << "sum " << hash_bits(y.sum(1)) << " sum0 " << hash_bits(y.sum(0)) << " var "
            << hash_bits(y.var({1})) << " var0 " << hash_bits((y + 100).var({0})) << "\n";
  // Column tiles with several row chunks and a narrow last column block, merged in order.
  ember::Tensor z = ember::randn({2100, 2100}) + 100;
  std::cout << "var0 tiles " << hash_bits(z.var({0})) << " sum0 tiles " << hash_bits(z.sum(0)) << "\n";
  // The few-tap weight gradient (Note [Few-tap convolutions]): 7 channels and 9 taps leave
  // remainders in every block shape; the same lanes at every level.
  ember::Tensor cx = ember::randn({3, 1, 13, 11}), cw = ember::randn({7, 1, 3, 3}).requires_grad_();
  ember::nn::functional::conv2d(cx, cw, {}, 1, 1).backward(ember::randn({3, 7, 13, 11}));
  std::cout << "conv_dw " << hash_bits(cw.grad()) << "\n";
  // Layer norm's float lanes (Note [Layer norm in float lanes], Note [Fused layer-norm
  // backward]): widths with whole 256-value blocks, a partial block and a tail under 32, with
  // and without the affine parameters.
  for (int64_t width : {1003, 517, 29}) {
    ember::Tensor lx = (ember::randn({41, width}) * 3 + 1).requires_grad_();
    ember::Tensor lw = (ember::rand({width}) + 0.5).requires_grad_();
    ember::Tensor lb = ember::randn({width}).requires_grad_();
    ember::Tensor gy = ember::randn({41, width});
    ember::Tensor ly = ember::nn::functional::layer_norm(lx, {width}, lw, lb);
    ly.backward(gy);
    std::cout << "layer_norm" << std::dec << width << std::hex << " " << hash_bits(ly.detach()) << " dx "
              << hash_bits(lx.grad()) << " dw " << hash_bits(lw.grad()) << " db " << hash_bits(lb.grad());
    lx.mutable_grad() = ember::Tensor();
    ember::Tensor plain = ember::nn::functional::layer_norm(lx, {width});
    plain.backward(gy);
    std::cout << " plain " << hash_bits(plain.detach()) << " dx " << hash_bits(lx.grad()) << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--bits") == 0) return print_bits();
  if (argc > 1 && std::strcmp(argv[1], "--unsupported") == 0) {
    const char* missing = nullptr;
    for (auto c : {ember::CpuCapability::AVX512, ember::CpuCapability::AVX2}) {
      if (!ember::cpu_supports(c)) missing = ember::to_string(c);
    }
    if (missing == nullptr) {
      std::cout << "this CPU supports every level; nothing to refuse\n";
      return 77;
    }
    setenv("EMBER_CPU_CAPABILITY", missing, 1);
  }
  try {
    // A kernel call decides the level; the result must not depend on it beyond rounding.
    ember::Tensor x = ember::arange(0, 64, ember::kFloat32).div(16);
    const float s = ember::exp(x).sum().item<float>();
    std::cout << "capability: " << ember::cpu_capability_name() << "\n";
    std::cout << "sum(exp(x)) = " << s << "\n";
    return (s > 831.0f && s < 831.1f) ? 0 : 1;
  } catch (const ember::Error& e) {
    std::cout << "error: " << e.what() << "\n";
    return 2;
  }
}
