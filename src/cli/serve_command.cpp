// `pmcprof serve`: counts continuously (stat's events, --func, -G) and serves /metrics in the
// Prometheus text format. One per host; a Prometheus server scrapes the fleet.
#include <iostream>

#include "pmcprof/cli/stat_options.hpp"
#include "pmcprof/report/prometheus.hpp"
#include "pmcprof/run/counting_run.hpp"
#include "pmcprof/run/function_session.hpp"
#include "pmcprof/run/http_server.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

constexpr const char* kIndexPage =
    "<html><head><title>pmcprof</title></head><body><h1>pmcprof</h1>"
    "<p><a href=\"/metrics\">/metrics</a></p></body></html>\n";

// Answers HTTP requests from whatever the run has made live so far.
template <typename Report>
class MetricsPage {
 public:
  explicit MetricsPage(const char* mode) : mode_(mode) {}
  void set_live(std::function<Report()> live) { live_ = std::move(live); }

  HttpResponse handle(const std::string& method, const std::string& path) {
    HttpResponse r;
    if (method != "GET" && method != "HEAD") {
      r.status = 405;
      r.body = "only GET\n";
      return r;
    }
    if (path == "/") {
      r.content_type = "text/html; charset=utf-8";
      r.body = kIndexPage;
      return r;
    }
    if (path != "/metrics") {
      r.status = 404;
      r.body = "not found: try /metrics\n";
      return r;
    }
    PrometheusStatus status;
    status.mode = mode_;
    status.scrapes = ++scrapes_;
    status.up = static_cast<bool>(live_);
    if (!live_) {
      r.body = render_prometheus(nullptr, nullptr, status);
    } else {
      Report report = live_();
      r.body = render(report, status);
    }
    return r;
  }

 private:
  static std::string render(const CountingReport& r, const PrometheusStatus& s) {
    return render_prometheus(&r, nullptr, s);
  }
  static std::string render(const FunctionReport& r, const PrometheusStatus& s) {
    return render_prometheus(nullptr, &r, s);
  }
  const char* mode_;
  std::function<Report()> live_;
  std::uint64_t scrapes_ = 0;
};

void validate_serve(const ServeOptions& opts) {
  const StatOptions& s = opts.stat;
  if (!s.command.empty())
    throw UserError("serve counts until stopped; it does not run a command",
                    "use pmcprof stat -- CMD for one command");
  if (s.interval_ms || s.repeat > 1 || s.csv_separator || s.json || s.output)
    throw UserError("-I, -r, -x, -j and -o are for stat; serve answers scrapes of /metrics",
                    "see 'pmcprof serve --help'");
}

}  // namespace

int run_serve_command(const ServeOptions& opts) {
  validate_serve(opts);
  const ListenAddress address = parse_listen_address(opts.listen);
  StatOptions stat = opts.stat;
  // Serving is continuous and host-wide unless a process is named.
  if (!stat.pid && !stat.tid && !stat.cpu_list) stat.all_cpus = true;
  validate_stat_options(stat);

  // Bind first: a port in use fails before anything is opened or attached.
  HttpServer server(address);
  PfmLibrary pfm;
  EventResolver resolver(pfm);
  auto specs = stat.events_given ? parse_event_list(join(stat.events, ",")) : default_events();
  auto groups = resolver.resolve(specs);
  if (!opts.stat.quiet) std::cerr << "pmcprof: serving http://" << address.text() << "/metrics\n";

  if (!stat.funcs.empty()) {
    MetricsPage<FunctionReport> page("function");
    FunctionPlan plan = make_function_plan(stat, std::move(groups));
    // Lossless cumulative sums in the kernel, unless a breakdown needs the stream.
    if (plan.aggregate == AggregateChoice::both) plan.aggregate = AggregateChoice::kernel;
    plan.readers.push_back({server.fd(), [&] {
                              server.serve_one([&](auto& m, auto& p) { return page.handle(m, p); });
                            }});
    plan.on_live = [&](std::function<FunctionReport()> live) { page.set_live(std::move(live)); };
    run_function_mode(plan, nullptr);
    return kExitOk;
  }
  MetricsPage<CountingReport> page("counting");
  CountingPlan plan = make_counting_plan(stat, std::move(groups));
  plan.readers.push_back({server.fd(), [&] {
                            server.serve_one([&](auto& m, auto& p) { return page.handle(m, p); });
                          }});
  plan.on_live = [&](std::function<CountingReport()> live) { page.set_live(std::move(live)); };
  run_counting(plan, nullptr);
  return kExitOk;
}

}  // namespace pmcprof
