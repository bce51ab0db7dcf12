#pragma once
// ember::optim: optimizers, learning-rate schedulers and gradient clipping (docs/optim.md).

#include "ember/optim/adagrad.h"
#include "ember/optim/adam.h"
#include "ember/optim/clip_grad.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizer.h"
#include "ember/optim/rmsprop.h"
#include "ember/optim/sgd.h"
