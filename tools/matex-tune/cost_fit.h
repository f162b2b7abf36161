// cost_fit.h - fitting seconds = alpha + beta * bytes to measured times.
//
// Weighted least squares on relative error (weights 1 / t^2), so that the
// microsecond times of small sizes count as much as the milliseconds of
// large ones. Negative parameters are not physical: a fit that gives one is
// redone with that parameter at 0. Cost: linear in the points.
// Preconditions: at least one point, every time above 0.
#pragma once

#include <vector>

#include "core/tuning_file.h"

namespace matexcomm {

void fit_alpha_beta(AlgorithmCost* cost);

}  // namespace matexcomm
