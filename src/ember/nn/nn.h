#pragma once
// ember::nn: modules, layers, functional forms and initialisation.

#include "ember/nn/functional.h"
#include "ember/nn/init.h"
#include "ember/nn/evaluate.h"
#include "ember/nn/module.h"
#include "ember/nn/modules/activation.h"
#include "ember/nn/modules/container.h"
#include "ember/nn/modules/parameter_containers.h"
#include "ember/nn/modules/linear.h"
#include "ember/nn/loss.h"
// Normalisation, embedding and bilinear layers.
#include "ember/nn/modules/batchnorm.h"
#include "ember/nn/modules/bilinear.h"
#include "ember/nn/modules/embedding.h"
#include "ember/nn/modules/normalization.h"
// ---- recurrent layers, attention, transformer (helper rnn) ----
#include "ember/nn/modules/attention.h"
#include "ember/nn/modules/rnn.h"
#include "ember/nn/modules/transformer.h"
// Convolution and pooling layers.
#include "ember/nn/modules/conv.h"
#include "ember/nn/modules/pooling.h"
#include "ember/nn/functional_extra.h"
#include "ember/nn/modules/extra.h"
