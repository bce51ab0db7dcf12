#pragma once
// Internal: the parameters of every live nn::Module, for the profiler's memory by category
// (Note [Memory by category] in profiler/profiler.h): a model trained, or only run,
// without an optimizer still has its parameters counted as parameters.

#include <vector>

#include "ember/core/tensor.h"

namespace ember::nn::detail {

// Every registered parameter of every module alive now (a module shared by two parents,
// or a shallow copy, gives its parameters twice: callers count storages once). Reads the
// modules unsynchronised: call it from the thread that builds and runs them.
std::vector<Tensor> live_module_parameters();

}  // namespace ember::nn::detail
