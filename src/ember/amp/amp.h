#pragma once
// Mixed precision: autocast (AutocastGuard) and dynamic loss scaling (GradScaler).
// docs/amp.md describes both and the autocast op table.

#include "ember/amp/autocast.h"
#include "ember/amp/grad_scaler.h"
