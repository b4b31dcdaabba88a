#include "pmcprof/cli/choices.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "pmcprof/report/number_format.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

AggregateChoice parse_aggregate_choice(const std::string& text) {
  if (text == "auto") return AggregateChoice::automatic;
  if (text == "stream") return AggregateChoice::stream;
  if (text == "kernel") return AggregateChoice::kernel;
  if (text == "both") return AggregateChoice::both;
  throw UserError("unknown --aggregate " + quote(text), "use auto, kernel, stream or both");
}

Breakdown parse_breakdown(const std::string& text) {
  if (text == "pid") return Breakdown::pid;
  if (text == "comm") return Breakdown::comm;
  if (text == "cpu") return Breakdown::cpu;
  if (text == "cgroup") return Breakdown::cgroup;
  throw UserError("unknown --by " + quote(text),
                  "use --by pid, comm, cpu, cgroup, or argN / argN:str (a start point's "
                  "arguments)");
}

BackendRequest parse_backend_request(std::string_view text) {
  if (text == "auto") return BackendRequest::automatic;
  if (text == "fentry") return BackendRequest::fentry;
  if (text == "kprobe") return BackendRequest::kprobe;
  throw UserError("unknown --backend " + quote(text), "use auto, fentry or kprobe");
}

ThreadStore parse_thread_store(const std::string& text) {
  if (text == "auto") return ThreadStore::automatic;
  if (text == "task-storage") return ThreadStore::task_storage;
  if (text == "hash") return ThreadStore::hash;
  throw UserError("unknown --thread-state " + quote(text), "use auto, task-storage or hash");
}

std::size_t validate_buffer_pages(long long pages) {
  if (pages < 1 || pages > 65536 || (pages & (pages - 1)) != 0)
    throw UserError("invalid --buffer-pages " + std::to_string(pages) +
                        ": it must be a power of two between 1 and 65536",
                    "e.g. --buffer-pages 256 (1 MiB per CPU with 4 KiB pages)");
  return static_cast<std::size_t>(pages);
}

namespace {

std::string printf_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

constexpr const char* kHistLinearHint =
    "e.g. --hist-linear=0,2ms,100us (times) or --hist-linear=0,5000,250 (counts), as bpftrace's "
    "lhist(min, max, step)";

// One value of --hist-linear: a decimal number and an optional time unit (its factor to ns).
struct LinearValue {
  double value = 0;
  std::optional<double> unit_ns;
};

LinearValue parse_linear_value(std::string_view word, std::string_view whole) {
  std::size_t digits = 0;
  while (digits < word.size() &&
         (std::isdigit(static_cast<unsigned char>(word[digits])) || word[digits] == '.'))
    ++digits;
  const std::string number(word.substr(0, digits));
  const std::string_view unit = word.substr(digits);
  const bool one_point = number.find('.') == number.rfind('.');
  if (number.empty() || number.front() == '.' || number.back() == '.' || !one_point)
    throw UserError(
        "invalid --hist-linear " + quote(whole) + ": " + quote(word) + " is not a number",
        kHistLinearHint);
  LinearValue v{std::strtod(number.c_str(), nullptr), std::nullopt};
  if (unit == "ns")
    v.unit_ns = 1;
  else if (unit == "us")
    v.unit_ns = 1e3;
  else if (unit == "ms")
    v.unit_ns = 1e6;
  else if (unit == "s")
    v.unit_ns = 1e9;
  else if (!unit.empty())
    throw UserError("invalid --hist-linear " + quote(whole) + ": unknown unit " + quote(unit) +
                        " in " + quote(word),
                    "times take ns, us, ms or s; counts and metrics take no unit");
  return v;
}

}  // namespace

HistLinear parse_hist_linear(std::string_view text) {
  const auto words = split(text, ',');
  if (words.size() != 3)
    throw UserError("invalid --hist-linear " + quote(text) + ": give MIN,MAX,STEP",
                    kHistLinearHint);
  LinearValue v[3];
  bool any_unit = false;
  for (std::size_t i = 0; i < 3; ++i) {
    v[i] = parse_linear_value(words[i], text);
    any_unit |= v[i].unit_ns.has_value();
  }
  HistLinear range;
  range.time = any_unit;
  range.text = std::string(text);
  double* out[3] = {&range.min, &range.max, &range.step};
  for (std::size_t i = 0; i < 3; ++i) {
    // A range of times: every value in a unit, but 0 is 0 in any unit.
    if (any_unit && !v[i].unit_ns && v[i].value != 0)
      throw UserError("invalid --hist-linear " + quote(text) + ": " + quote(words[i]) +
                          " has no unit, the others do",
                      "give every value of a range of times its unit (ns, us, ms, s)");
    *out[i] = v[i].value * v[i].unit_ns.value_or(1);
  }
  if (!(range.max > range.min))
    throw UserError("invalid --hist-linear " + quote(text) + ": MAX must be above MIN",
                    kHistLinearHint);
  if (!(range.step > 0))
    throw UserError("invalid --hist-linear " + quote(text) + ": STEP must be above 0",
                    kHistLinearHint);
  const double rows = std::ceil((range.max - range.min) / range.step - 1e-9);
  if (rows > static_cast<double>(kMaxHistLinearRows))
    throw UserError("invalid --hist-linear " + quote(text) + ": " + format_grouped(rows, 0) +
                        " rows, more than " + std::to_string(kMaxHistLinearRows),
                    "take a larger STEP, or --hist for powers of two");
  return range;
}

double parse_decimal_option(std::string_view text, std::string_view option, double min, double max,
                            const std::string& hint, bool above_min) {
  const std::string name(option);
  const bool digits = !text.empty() && text.find_first_not_of("0123456789.") == std::string::npos;
  if (!digits || text.front() == '.' || text.back() == '.' || text.find('.') != text.rfind('.'))
    throw UserError("invalid " + name + " " + quote(text) + ": not a decimal number", hint);
  const double v = std::strtod(std::string(text).c_str(), nullptr);
  if (v > max || v < min || (above_min && v == min))
    throw UserError("invalid " + name + " " + quote(text) + ": out of range (" +
                        (above_min ? "above " : "") + printf_number(min) + " to " +
                        printf_number(max) + ")",
                    hint);
  return v;
}

namespace {

// --hist's comma list; a comma inside an event's pmu/term=a,term=b/ stays in its name.
std::vector<std::string> split_hist_list(std::string_view text) {
  std::vector<std::string> out{""};
  bool in_terms = false;
  for (char c : text) {
    if (c == '/') in_terms = !in_terms;
    if (c == ',' && !in_terms)
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

}  // namespace

HistOptions hist_choice(bool hist_flag, const std::string& quantities,
                        const std::optional<std::string>& linear,
                        const std::vector<HistName>& names) {
  HistOptions hist;
  hist.draw = hist_flag || linear;
  if (!hist.draw) return hist;
  if (linear) hist.linear = parse_hist_linear(*linear);
  if (quantities.empty()) return hist;
  std::vector<std::string> all;
  for (const auto& n : names) all.push_back(n.name);
  for (const auto& name : split_hist_list(quantities)) {
    const auto it =
        std::find_if(names.begin(), names.end(), [&](const HistName& n) { return n.name == name; });
    if (it == names.end()) {
      const auto close = closest_matches(name, all);
      throw UserError("--hist: " + (name.empty() ? std::string("an empty name") : quote(name)) +
                          " is not a quantity of this run",
                      (close.empty() ? "" : "did you mean '" + join(close, "', '") + "'? ") +
                          "it draws " + join(all, ", "));
    }
    if (hist.linear && hist.linear->time && !it->time)
      throw UserError("--hist-linear=" + hist.linear->text + " is a range of times, and " +
                          quote(name) + " is not a time",
                      "name times with it (--hist=wall), or give the range without units");
    hist.quantities.push_back(name);
  }
  return hist;
}

}  // namespace pmcprof
