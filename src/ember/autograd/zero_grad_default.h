#pragma once
// What zero_grad() does when not told: ember (like PyTorch 2) sets gradients to none, so
// no memory is held and no kernel runs for gradients the next backward overwrites;
// libtorch 1.13's C++ API zeroes them. ember/torch.h selects libtorch's behaviour.

namespace ember {

void set_zero_grad_sets_to_none(bool set_to_none);
bool zero_grad_sets_to_none();

}  // namespace ember
