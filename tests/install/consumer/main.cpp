#include <ember/ember.h>

#include <iostream>

int main() {
  ember::Tensor t = ember::arange(6).reshape({2, 3}).t();
  std::cout << t.sizes() << " " << t.strides() << "\n";
  return 0;
}
