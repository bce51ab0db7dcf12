// A first look at ember tensors: creation, views sharing storage, copies, printing.
// Run with `make demo`.

#include <ember/ember.h>

#include <iostream>

int main() {
  using namespace ember;
  manual_seed(0);

  Tensor a = arange(12).reshape({3, 4});
  std::cout << "a = arange(12).reshape({3, 4})\n" << a << "\n";
  std::cout << "sizes " << a.sizes() << ", strides " << a.strides()
            << ", contiguous: " << std::boolalpha << a.is_contiguous() << "\n\n";

  Tensor at = a.t();
  std::cout << "a.t() is a view: strides " << at.strides() << ", shares storage with a: "
            << at.is_alias_of(a) << ", contiguous: " << at.is_contiguous() << "\n";
  try {
    at.view({12});
  } catch (const Error& e) {
    std::cout << "a.t().view({12}) refuses: " << e.what() << "\n";
  }
  Tensor flat = at.reshape({12});
  std::cout << "a.t().reshape({12}) copies instead:\n" << flat << "\n\n";

  Tensor row = a[1];
  row.fill_(-1);
  std::cout << "writing through the view a[1] changes a (version " << a._version() << "):\n"
            << a << "\n\n";

  std::cout << "randn({2, 3}) with seed 0:\n" << randn({2, 3}) << "\n";
  std::cout << "linspace(0, 1, 5, kFloat64):\n" << linspace(0, 1, 5, kFloat64) << "\n";
  std::cout << "eye(3, kInt32):\n" << eye(3, kInt32) << "\n";
  std::cout << "ones({2}, kHalf).requires_grad_():\n" << ones({2}, kHalf).requires_grad_() << "\n";

  MemoryStats s = memory_stats();
  std::cout << "\nmemory: " << s.allocated_bytes << " bytes held, peak " << s.peak_allocated_bytes
            << ", " << s.num_allocations << " allocations\n";
  return 0;
}
