#pragma once
// ember::nn: modules, layers, functional forms and initialisation.

#include "ember/nn/functional.h"
#include "ember/nn/init.h"
#include "ember/nn/module.h"
#include "ember/nn/modules/activation.h"
#include "ember/nn/modules/container.h"
#include "ember/nn/modules/linear.h"
#include "ember/nn/loss.h"
// Convolution and pooling layers.
#include "ember/nn/modules/conv.h"
#include "ember/nn/modules/pooling.h"
