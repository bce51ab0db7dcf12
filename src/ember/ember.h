#pragma once
// The umbrella header: #include <ember/ember.h> gives the whole public C++ API.

#include "ember/core/allocator.h"
#include "ember/core/device.h"
#include "ember/core/dtype.h"
#include "ember/core/error.h"
#include "ember/core/generator.h"
#include "ember/core/half.h"
#include "ember/core/parallel.h"
#include "ember/core/print.h"
#include "ember/core/scalar.h"
#include "ember/core/tensor.h"
#include "ember/core/tensor_options.h"
#include "ember/ops/creation.h"
#include "ember/ops/type_promotion.h"
#include "ember/ops/view.h"
