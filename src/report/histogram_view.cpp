// Views of a per-call histogram: its sparse JSON buckets and back.
#include "pmcprof/report/histogram_view.hpp"

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

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
