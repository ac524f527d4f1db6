#include "tuning/calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace atl::tuning {
namespace {

using algo::Algo;

/// The model at explicit parameters; beta in microseconds per byte (0 = infinite bandwidth).
double eval(const Sample& s, int nranks, double overheadUs, double latUs, double betaUsPerByte, double penalty) {
  ModelParams m;
  m.stepOverheadUs = overheadUs;
  m.treeBwPenalty = m.rhdBwPenalty = m.rdBwPenalty = penalty;
  const double bw = betaUsPerByte > 0 ? 1.0 / (betaUsPerByte * 1e3) : std::numeric_limits<double>::infinity();
  return predictUs(s, nranks, LinkParams{bw, latUs}, m);
}

// Relative least squares (weights 1/T^2): the sizes span six orders of magnitude, and an absolute
// fit would ignore every latency-bound sample.
double weight(const Sample& s) { return 1.0 / (s.us * s.us); }

bool finiteAll(std::initializer_list<double> xs) {
  for (double x : xs)
    if (!std::isfinite(x)) return false;
  return true;
}

}  // namespace

double predictUs(const Sample& s, int nranks, const LinkParams& link, const ModelParams& m) {
  SelectInput in;
  in.coll = algo::Coll::AllReduce;
  in.bytes = s.bytes;
  in.nranks = nranks;
  in.nIslands = 1;
  in.minIslandSize = in.maxIslandSize = nranks;
  in.intraBwGBs = in.interBwGBs = link.bwGBs;
  in.intraLatUs = in.interLatUs = link.latUs;
  in.stepOverheadUs = m.stepOverheadUs;
  in.treeBwPenalty = m.treeBwPenalty;
  in.rhdBwPenalty = m.rhdBwPenalty;
  in.rdBwPenalty = m.rdBwPenalty;
  in.maxChannels = 2;
  return estimateUs(s.algo, in);
}

bool fitLink(const std::vector<Sample>& samples, int nranks, double priorOverheadUs, LinkFit* out, std::string* error) {
  if (nranks < 2) return *error = "calibration needs at least 2 ranks", false;
  // Hop time and inverse bandwidth from the ring: T = a * X + b * Y.
  double sxx = 0, sxy = 0, syy = 0, sxt = 0, syt = 0;
  int rings = 0;
  for (const Sample& s : samples) {
    if (s.algo != Algo::Ring || !(s.us > 0)) continue;
    const double x = eval(s, nranks, 0, 1, 0, 1), y = eval(s, nranks, 0, 0, 1, 1), w = weight(s);
    sxx += w * x * x, sxy += w * x * y, syy += w * y * y, sxt += w * x * s.us, syt += w * y * s.us;
    ++rings;
  }
  const double det = sxx * syy - sxy * sxy;
  if (rings < 2 || !(det > 1e-12 * sxx * syy))
    return *error = "ring samples at two or more sizes are needed", false;
  const double alpha = (sxt * syy - syt * sxy) / det;
  const double beta = (sxx * syt - sxy * sxt) / det;
  if (!(beta > 0) || !finiteAll({alpha, beta}))
    return *error = "the ring's bandwidth is not determined: measure larger sizes", false;
  LinkFit fit;
  fit.alphaUs = std::max(alpha, 0.0);

  // One-shot pays the overhead once per peer but the latency once, which separates the two:
  // T = o * X + (alpha - o) * Y + beta * Z.
  double num = 0, den = 0;
  for (const Sample& s : samples) {
    if (s.algo != Algo::Direct || !(s.us > 0)) continue;
    const double x = eval(s, nranks, 1, 0, 0, 1), y = eval(s, nranks, 0, 1, 0, 1), z = eval(s, nranks, 0, 0, 1, 1);
    if (!finiteAll({x, y, z})) continue;  // too large for one-shot
    const double w = weight(s), d = x - y;
    num += w * d * (s.us - fit.alphaUs * y - beta * z);
    den += w * d * d;
  }
  if (den > 0) {
    fit.stepOverheadUs = std::clamp(num / den, 0.0, fit.alphaUs);
    fit.overheadFitted = true;
  } else {
    fit.stepOverheadUs = std::min(priorOverheadUs, fit.alphaUs);
  }
  fit.link = {1.0 / (beta * 1e3), fit.alphaUs - fit.stepOverheadUs};

  // Each penalty scales only its algorithm's bandwidth term: T = A0 + P * B. Samples whose
  // bandwidth term is negligible carry no information about P and get no say (B ~ 0).
  auto penalty = [&](Algo a) {
    double n = 0, d = 0, best = 0;
    for (const Sample& s : samples) {
      if (s.algo != a || !(s.us > 0)) continue;
      const double a0 = eval(s, nranks, fit.stepOverheadUs, fit.link.latUs, beta, 0);
      const double b = eval(s, nranks, fit.stepOverheadUs, fit.link.latUs, beta, 1) - a0;
      if (!finiteAll({a0, b})) continue;
      const double w = weight(s);
      n += w * b * (s.us - a0);
      d += w * b * b;
      best = std::max(best, b / s.us);
    }
    // Undetermined unless some sample spent a tenth of its time on bandwidth.
    return best >= 0.1 && d > 0 ? std::clamp(n / d, 0.25, 20.0) : 0.0;
  };
  fit.treeBwPenalty = penalty(Algo::Tree);
  fit.rhdBwPenalty = penalty(Algo::RecursiveHalvingDoubling);
  fit.rdBwPenalty = penalty(Algo::RecursiveDoubling);
  *out = fit;
  return true;
}

}  // namespace atl::tuning
