#include "pmcprof/stream/histogram.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "pmcprof.h"

namespace pmcprof {

static_assert(Histogram::kBuckets == PMCPROF_HIST_BUCKETS);
static_assert(PMCPROF_HIST_EXACT == 128 && PMCPROF_HIST_PER_OCTAVE == 42);

namespace {

// First and one-past-last step (of 128 per octave) of each bucket of an octave, from the
// table the BPF side uses.
struct StepRange {
  std::uint32_t first, end;
};
const std::array<StepRange, PMCPROF_HIST_PER_OCTAVE>& step_ranges() {
  static const auto ranges = [] {
    std::array<StepRange, PMCPROF_HIST_PER_OCTAVE> r{};
    for (std::uint32_t k = 0; k < PMCPROF_HIST_PER_OCTAVE; ++k) r[k] = {PMCPROF_HIST_EXACT, 0};
    for (std::uint32_t s = 0; s < PMCPROF_HIST_EXACT; ++s) {
      auto& k = r[pmcprof_hist_step_bucket[s]];
      k.first = std::min(k.first, s);
      k.end = std::max(k.end, s + 1);
    }
    return r;
  }();
  return ranges;
}

}  // namespace

std::uint32_t Histogram::bucket_of(std::uint64_t v) {
  return pmcprof_hist_bucket(v);
}

std::uint64_t Histogram::bucket_lower(std::uint32_t b) {
  if (b < kExact) return b;
  if (b >= kBuckets) b = kBuckets - 1;
  const std::uint32_t octave = (b - kExact) / kPerBlock;  // exponent - 7
  const StepRange r = step_ranges()[(b - kExact) % kPerBlock];
  return (std::uint64_t{kExact} + r.first) << octave;
}

std::uint64_t Histogram::bucket_upper(std::uint32_t b) {
  if (b < kExact) return b + 1;
  if (b >= kBuckets - 1) return std::numeric_limits<std::uint64_t>::max();
  const std::uint32_t octave = (b - kExact) / kPerBlock;
  const StepRange r = step_ranges()[(b - kExact) % kPerBlock];
  return (std::uint64_t{kExact} + r.end) << octave;
}

double Histogram::representative(std::uint32_t b) {
  const double lo = static_cast<double>(bucket_lower(b));
  if (b >= kBuckets - 1) return lo;
  const double hi = static_cast<double>(bucket_upper(b) - 1);
  return lo == hi ? lo : 2 * lo * hi / (lo + hi);
}

void Histogram::add_bucket(std::uint32_t b, std::uint64_t n) {
  if (n == 0) return;
  if (b >= kBuckets) b = kBuckets - 1;
  if (blocks_.empty()) blocks_.resize(kBlocks);
  auto& block = blocks_[block_of(b)];
  if (block.empty()) block.assign(block_size(block_of(b)), 0);
  block[index_in_block(b)] += n;
  total_ += n;
}

std::uint64_t Histogram::bucket_count(std::uint32_t b) const {
  if (b >= kBuckets || blocks_.empty()) return 0;
  const auto& block = blocks_[block_of(b)];
  return block.empty() ? 0 : block[index_in_block(b)];
}

std::vector<Histogram::Bucket> Histogram::buckets() const {
  std::vector<Bucket> out;
  for (std::uint32_t k = 0; k < blocks_.size(); ++k)
    for (std::uint32_t i = 0; i < blocks_[k].size(); ++i)
      if (blocks_[k][i]) out.push_back({first_bucket(k) + i, blocks_[k][i]});
  return out;
}

void Histogram::merge(const Histogram& o) {
  for (std::uint32_t k = 0; k < o.blocks_.size(); ++k)
    for (std::uint32_t i = 0; i < o.blocks_[k].size(); ++i)
      add_bucket(first_bucket(k) + i, o.blocks_[k][i]);
}

void Histogram::subtract(const Histogram& o) {
  total_ = 0;
  for (std::uint32_t k = 0; k < blocks_.size(); ++k) {
    for (std::uint32_t i = 0; i < blocks_[k].size(); ++i) {
      const std::uint64_t minus = o.bucket_count(first_bucket(k) + i);
      auto& c = blocks_[k][i];
      c = c > minus ? c - minus : 0;
      total_ += c;
    }
  }
}

std::uint64_t Histogram::count_below(std::uint64_t v) const {
  std::uint64_t n = 0;
  for (std::uint32_t k = 0; k < blocks_.size(); ++k)
    for (std::uint32_t i = 0; i < blocks_[k].size(); ++i)
      if (bucket_upper(first_bucket(k) + i) <= v) n += blocks_[k][i];
  return n;
}

double Histogram::percentile(double p, double min, double max) const {
  if (total_ == 0) return 0;
  p = std::clamp(p, 0.0, 1.0);
  // Nearest rank (1-based).
  const double rank = std::max(1.0, std::ceil(p * static_cast<double>(total_)));
  std::uint64_t seen = 0;
  for (std::uint32_t k = 0; k < blocks_.size(); ++k) {
    for (std::uint32_t i = 0; i < blocks_[k].size(); ++i) {
      seen += blocks_[k][i];
      if (static_cast<double>(seen) >= rank)
        return std::clamp(representative(first_bucket(k) + i), min, max);
    }
  }
  return max;
}

double Histogram::lowest_value() const {
  for (std::uint32_t k = 0; k < blocks_.size(); ++k)
    for (std::uint32_t i = 0; i < blocks_[k].size(); ++i)
      if (blocks_[k][i]) return static_cast<double>(bucket_lower(first_bucket(k) + i));
  return 0;
}

double Histogram::highest_value() const {
  for (std::uint32_t k = static_cast<std::uint32_t>(blocks_.size()); k-- > 0;)
    for (std::uint32_t i = static_cast<std::uint32_t>(blocks_[k].size()); i-- > 0;)
      if (blocks_[k][i]) {
        const std::uint32_t b = first_bucket(k) + i;
        return b >= kBuckets - 1 ? static_cast<double>(bucket_lower(b))
                                 : static_cast<double>(bucket_upper(b) - 1);
      }
  return 0;
}

}  // namespace pmcprof
