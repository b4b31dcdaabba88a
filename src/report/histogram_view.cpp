// Views of a per-call histogram: its sparse JSON buckets and back, and the coarser rows
// --hist draws (log2 and linear), each an exact sum of whole buckets.
#include "pmcprof/report/histogram_view.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "pmcprof/report/number_format.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

using ojson = nlohmann::ordered_json;

constexpr std::uint32_t kLastBucket = Histogram::kBuckets - 1;

// A bucket bound in the distribution's unit: an integer for ns and counts (no "128.0").
ojson bound_json(std::uint64_t raw, double resolution) {
  if (resolution == 1) return raw;
  return static_cast<double>(raw) * resolution;
}

// Whether `value` is the bound `raw` written by bound_json: exactly, up to the last digits a
// writer other than pmcprof (a notebook re-saving the file) may round differently.
bool same_bound(double value, std::uint64_t raw, double resolution) {
  const double want = static_cast<double>(raw) * resolution;
  return std::fabs(value - want) <= 1e-9 * std::max(std::fabs(want), resolution);
}

[[noreturn]] void refuse(std::size_t i, const std::string& entry, const std::string& why) {
  throw UserError("JSON buckets: entry " + std::to_string(i) + " " + quote(entry) + " " + why,
                  "buckets are written by pmcprof -j (docs/json.md); was the file edited?");
}

template <typename Json>
std::string entry_text(const Json& e) {
  return e.dump(-1, ' ', false, Json::error_handler_t::replace);
}

template <typename Json>
std::uint32_t bucket_of_entry(const Json& e, std::size_t i, double resolution) {
  const std::string text = entry_text(e);
  if (!e.is_array() || e.size() != 3) refuse(i, text, "is not [lower, upper, count]");
  if (!e[0].is_number() || e[0].template get<double>() < 0)
    refuse(i, text, "has no lower bound (a number >= 0)");
  const double lower = e[0].template get<double>();
  const double raw = std::round(lower / resolution);
  if (!(raw < 18446744073709551616.0)) refuse(i, text, "is past the histogram's range");
  const std::uint32_t b = Histogram::bucket_of(static_cast<std::uint64_t>(raw));
  const bool open = b == kLastBucket;
  if (!same_bound(lower, Histogram::bucket_lower(b), resolution) ||
      (open ? !e[1].is_null()
            : !e[1].is_number() ||
                  !same_bound(e[1].template get<double>(), Histogram::bucket_upper(b), resolution)))
    refuse(i, text, "is not a bucket of pmcprof's histogram");
  if (!e[2].is_number_unsigned() &&
      !(e[2].is_number_integer() && e[2].template get<long long>() >= 0))
    refuse(i, text, "has no count (a whole number >= 0)");
  return b;
}

template <typename Json>
Histogram from_buckets(const Json& buckets, double resolution) {
  if (!(resolution > 0) || !std::isfinite(resolution))
    throw UserError("JSON buckets: resolution " + std::to_string(resolution) + " is not > 0");
  if (!buckets.is_array())
    throw UserError("JSON buckets: " + quote(entry_text(buckets)) + " is not an array",
                    "buckets are written by pmcprof -j (docs/json.md); was the file edited?");
  Histogram h;
  std::optional<std::uint32_t> previous;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    const auto& e = buckets[i];
    const std::uint32_t b = bucket_of_entry(e, i, resolution);
    if (previous && b <= *previous) refuse(i, entry_text(e), "is not above the entry before it");
    previous = b;
    h.add_bucket(b, e[2].template get<std::uint64_t>());
  }
  return h;
}

}  // namespace

ojson histogram_buckets_json(const Histogram& h, double resolution) {
  ojson out = ojson::array();
  for (const auto& [b, n] : h.buckets()) {
    ojson entry = ojson::array();
    entry.push_back(bound_json(Histogram::bucket_lower(b), resolution));
    entry.push_back(b == kLastBucket ? ojson(nullptr)
                                     : bound_json(Histogram::bucket_upper(b), resolution));
    entry.push_back(n);
    out.push_back(std::move(entry));
  }
  return out;
}

// ---- rows ----

std::vector<HistRow> fold_buckets(const Histogram& h, const std::vector<std::uint64_t>& edges) {
  std::vector<HistRow> rows;
  if (edges.empty()) return {{0, std::nullopt, h.count()}};
  if (edges.front() > 0) rows.push_back({0, edges.front(), 0});
  for (std::size_t i = 0; i + 1 < edges.size(); ++i) rows.push_back({edges[i], edges[i + 1], 0});
  rows.push_back({edges.back(), std::nullopt, 0});
  const std::size_t first_edge_row = edges.front() > 0 ? 1 : 0;
  for (const auto& [b, n] : h.buckets()) {
    // The row of the bucket's lower bound; the bucket ends at or before the row's upper bound
    // because the edges are bucket bounds.
    const auto above = std::upper_bound(edges.begin(), edges.end(), Histogram::bucket_lower(b));
    const auto edge = static_cast<std::size_t>(above - edges.begin());
    rows[edge == 0 ? 0 : first_edge_row + edge - 1].count += n;
  }
  return rows;
}

namespace {

// Without the empty rows before the first call and after the last (as bcc and bpftrace).
std::vector<HistRow> trimmed(std::vector<HistRow> rows) {
  const auto full = [](const HistRow& r) { return r.count > 0; };
  const auto first = std::find_if(rows.begin(), rows.end(), full);
  if (first == rows.end()) return {};
  const auto last = std::find_if(rows.rbegin(), rows.rend(), full).base();
  return {first, last};
}

}  // namespace

std::vector<HistRow> log2_rows(const Histogram& h) {
  std::vector<std::uint64_t> edges{0};
  // 2^41: the last power of two below the open bucket (which starts at 0.99 x 2^42).
  for (std::uint64_t p = 1; p <= Histogram::bucket_lower(kLastBucket); p *= 2) edges.push_back(p);
  return trimmed(fold_buckets(h, edges));
}

std::uint64_t nearest_bucket_bound(double raw) {
  if (!(raw > 0)) return 0;
  const std::uint64_t top = Histogram::bucket_lower(kLastBucket);
  if (raw >= static_cast<double>(top)) return top;
  const std::uint32_t b = Histogram::bucket_of(static_cast<std::uint64_t>(raw));
  const std::uint64_t lo = Histogram::bucket_lower(b), hi = Histogram::bucket_upper(b);
  return raw - static_cast<double>(lo) <= static_cast<double>(hi) - raw ? lo : hi;
}

LinearRows linear_rows(const Histogram& h, const HistLinear& range, double resolution) {
  LinearRows out;
  std::vector<std::uint64_t> edges;
  const auto steps =
      static_cast<std::uint64_t>(std::ceil((range.max - range.min) / range.step - 1e-9));
  for (std::uint64_t i = 0; i <= steps; ++i) {
    const double value = i == steps ? range.max : range.min + static_cast<double>(i) * range.step;
    const double raw = value / resolution;
    const std::uint64_t edge = nearest_bucket_bound(raw);
    out.moved |= std::fabs(static_cast<double>(edge) - raw) > 1e-9 * std::max(1.0, raw);
    if (edges.empty() || edge > edges.back()) edges.push_back(edge);
  }
  out.rows = trimmed(fold_buckets(h, edges));
  return out;
}

// ---- drawing ----

namespace {

constexpr std::size_t kBarWidth = 40;  // bcc's stars_max

// bcc's _stars: the count's share of the largest row, rounded down.
std::string bar(std::uint64_t count, std::uint64_t largest) {
  const auto n = static_cast<std::size_t>(
      static_cast<double>(kBarWidth) * static_cast<double>(count) / static_cast<double>(largest));
  return std::string(std::min(n, kBarWidth), '*');
}

// A bound in the quantity's unit (a metric's), to 6 significant digits.
std::string real_bound(std::uint64_t raw, double resolution) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.6g", static_cast<double>(raw) * resolution);
  return buf;
}

// The range column: "lo -> hi" (hi inclusive) for whole numbers, "[lo, hi)" for others.
std::vector<std::string> range_labels(const std::vector<HistRow>& rows, const std::string& column,
                                      double resolution) {
  std::vector<std::string> labels;
  if (resolution != 1) {
    for (const auto& r : rows)
      labels.push_back("[" + real_bound(r.lower, resolution) + ", " +
                       (r.upper ? real_bound(*r.upper, resolution) : "...") + ")");
    return labels;
  }
  // bcc's "%10d -> %-10d", wider when a number or the column's name needs it.
  std::size_t width = std::max<std::size_t>(10, (column.size() + 2) / 2);
  for (const auto& r : rows)
    width = std::max(
        {width, std::to_string(r.lower).size(), r.upper ? std::to_string(*r.upper - 1).size() : 3});
  for (const auto& r : rows)
    labels.push_back(pad_left(std::to_string(r.lower), width) + " -> " +
                     pad_right(r.upper ? std::to_string(*r.upper - 1) : "...", width));
  return labels;
}

}  // namespace

std::string draw_rows(const std::vector<HistRow>& rows, const std::string& column,
                      double resolution, const std::string& indent) {
  if (rows.empty()) return {};
  const auto labels = range_labels(rows, column, resolution);
  std::size_t label_width = std::max<std::size_t>(24, column.size() + 5);  // bcc's 24 at least
  for (const auto& l : labels) label_width = std::max(label_width, l.size());
  std::uint64_t largest = 0;
  for (const auto& r : rows) largest = std::max(largest, r.count);
  std::string out =
      indent + "     " + pad_right(column, label_width - 5) + " : count     distribution\n";
  for (std::size_t i = 0; i < rows.size(); ++i)
    out += indent + pad_left(labels[i], label_width) + " : " +
           pad_right(std::to_string(rows[i].count), 8) + " |" +
           pad_right(bar(rows[i].count, largest), kBarWidth) + "|\n";
  return out;
}

// ---- JSON layout ----

namespace {

// The end of the array of plain values opening at `open` ('['): the index of its ']', or npos
// when it holds a string, an object or an array.
std::size_t scalar_array_end(std::string_view s, std::size_t open) {
  const std::size_t end = s.find_first_of("[]{\"", open + 1);
  return end != std::string_view::npos && s[end] == ']' ? end : std::string_view::npos;
}

// "\n    1,\n    2\n  " -> "1, 2"
std::string one_line(std::string_view inside) {
  std::string out;
  for (const auto& part : split(inside, ',')) {
    if (!out.empty()) out += ", ";
    out += trim(part);
  }
  return out;
}

}  // namespace

std::string compact_scalar_arrays(std::string_view pretty) {
  std::string out;
  out.reserve(pretty.size());
  bool in_string = false;
  for (std::size_t i = 0; i < pretty.size(); ++i) {
    const char c = pretty[i];
    out += c;
    if (in_string) {
      if (c == '\\' && i + 1 < pretty.size())
        out += pretty[++i];
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[') {
      const std::size_t end = scalar_array_end(pretty, i);
      if (end == std::string_view::npos) continue;
      out += one_line(pretty.substr(i + 1, end - i - 1));
      out += ']';
      i = end;
    }
  }
  return out;
}

Histogram histogram_from_buckets(const nlohmann::json& buckets, double resolution) {
  return from_buckets(buckets, resolution);
}

Histogram histogram_from_buckets(const nlohmann::ordered_json& buckets, double resolution) {
  return from_buckets(buckets, resolution);
}

}  // namespace pmcprof
