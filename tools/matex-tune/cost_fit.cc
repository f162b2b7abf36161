// cost_fit.cc - see cost_fit.h.
#include "cost_fit.h"

#include <algorithm>

namespace matexcomm {

void fit_alpha_beta(AlgorithmCost* cost) {
  // Normal equations of sum w (a + b n - t)^2 with w = 1 / t^2.
  double sw = 0, sn = 0, snn = 0, st = 0, snt = 0;
  for (const TimedSize& point : cost->measured) {
    const double w = 1 / (point.seconds * point.seconds);
    const double n = static_cast<double>(point.bytes);
    sw += w;
    sn += w * n;
    snn += w * n * n;
    st += w * point.seconds;
    snt += w * n * point.seconds;
  }
  const double det = sw * snn - sn * sn;
  double alpha = det > 0 ? (st * snn - sn * snt) / det : st / sw;
  double beta = det > 0 ? (sw * snt - sn * st) / det : 0;
  if (beta < 0) {  // latency alone
    beta = 0;
    alpha = st / sw;
  } else if (alpha < 0) {  // bandwidth alone
    alpha = 0;
    beta = snn > 0 ? snt / snn : 0;
  }
  cost->alpha_seconds = alpha;
  cost->beta_seconds_per_byte = beta;
}

}  // namespace matexcomm
