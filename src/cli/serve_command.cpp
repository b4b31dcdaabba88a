// `pmcprof serve`: counts continuously (stat's events, --func, -G) and serves /metrics in the
// Prometheus text format. One per host; a Prometheus server scrapes the fleet.
//
// Two sides that never wait for each other: the measurement thread (this one: the run loop,
// the counters, the per-call stream) and the serving threads (libmicrohttpd's). A scrape asks
// the measurement thread for the totals through a LiveFeed and renders them itself.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <ctime>
#include <iostream>
#include <stop_token>
#include <thread>
#include <variant>

#include "pmcprof/cli/stat_options.hpp"
#include "pmcprof/platform/system.hpp"
#include "pmcprof/report/prometheus.hpp"
#include "pmcprof/run/counting_run.hpp"
#include "pmcprof/run/function_session.hpp"
#include "pmcprof/run/http_server.hpp"
#include "pmcprof/run/live_feed.hpp"
#include "pmcprof/run/web_config.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

constexpr const char* kIndexPage =
    "<html><head><title>pmcprof</title></head><body><h1>pmcprof</h1><ul>"
    "<li><a href=\"/metrics\">/metrics</a>: the counts so far, for Prometheus</li>"
    "<li><a href=\"/-/healthy\">/-/healthy</a>: 200 while pmcprof serves</li>"
    "<li><a href=\"/-/ready\">/-/ready</a>: 200 while pmcprof counts</li>"
    "</ul></body></html>\n";

// How long a scrape waits for the measurement thread before it gives up with 503. The
// measurement thread answers between two drains of the stream: normally well under 1 ms.
constexpr std::chrono::milliseconds kLiveTimeout{5000};

// The pages, answered on the serving threads.
class Pages {
 public:
  Pages(LiveFeed& feed, const char* mode) : feed_(feed), mode_(mode) {}

  HttpResponse handle(const HttpRequest& req) {
    HttpResponse r;
    if (req.path == "/") {
      r.content_type = "text/html; charset=utf-8";
      r.body = kIndexPage;
      return r;
    }
    if (req.path == "/-/healthy") {
      r.content_type = "text/plain; charset=utf-8";
      r.body = "pmcprof is Healthy.\n";
      return r;
    }
    if (req.path == "/-/ready") {
      r.content_type = "text/plain; charset=utf-8";
      const bool live = feed_.live();
      r.status = live ? 200 : 503;
      r.body = live ? "pmcprof is Ready.\n" : "pmcprof is not counting (starting or stopping).\n";
      return r;
    }
    if (req.path != "/metrics") {
      r.status = 404;
      r.content_type = "text/plain; charset=utf-8";
      r.body = "not found: try /metrics\n";
      return r;
    }
    PrometheusStatus status;
    status.mode = mode_;
    auto report = feed_.request(kLiveTimeout);
    if (!report && feed_.live()) {
      r.status = 503;
      r.content_type = "text/plain; charset=utf-8";
      r.body = "pmcprof's measurement did not answer within 5 s\n";
      return r;
    }
    status.scrapes = ++scrapes_;
    status.up = static_cast<bool>(report);
    if (!report) {
      r.body = render_prometheus(nullptr, nullptr, status);
    } else if (const auto* c = std::get_if<CountingReport>(report.get())) {
      r.body = render_prometheus(c, nullptr, status);
    } else {
      r.body = render_prometheus(nullptr, &std::get<FunctionReport>(*report), status);
    }
    return r;
  }

 private:
  LiveFeed& feed_;
  const char* mode_;
  std::atomic<std::uint64_t> scrapes_{0};
};

// SIGHUP re-reads the web config (as every Prometheus exporter's reload does) and never ends
// serve. It stays blocked in every thread (blocked here before any thread is started, and
// inherited) and is taken by this thread alone with sigtimedwait; the run loop's signalfd
// takes only SIGINT and SIGTERM.
class ReloadOnHangup {
 public:
  // Blocks SIGHUP in the calling thread, and so in every thread it starts from here on.
  static void block() {
    sigset_t hup;
    sigemptyset(&hup);
    sigaddset(&hup, SIGHUP);
    if (pthread_sigmask(SIG_BLOCK, &hup, nullptr) != 0)
      throw SystemError("pthread_sigmask(SIGHUP) failed");
  }

  explicit ReloadOnHangup(HttpServer& server)
      : server_(server), thread_([this](const std::stop_token& stop) { run(stop); }) {}

 private:
  void run(const std::stop_token& stop) {
    sigset_t hup;
    sigemptyset(&hup);
    sigaddset(&hup, SIGHUP);
    // Woken every 200 ms to see whether serve is stopping (no signal to wake it with).
    const timespec tick{0, 200L * 1000 * 1000};
    while (!stop.stop_requested()) {
      if (sigtimedwait(&hup, nullptr, &tick) == SIGHUP) server_.reload("SIGHUP");
    }
  }
  HttpServer& server_;
  std::jthread thread_;
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
  ReloadOnHangup::block();
  const ListenAddress address = parse_listen_address(opts.listen);
  const WebConfig web =
      opts.web_config_file.empty() ? WebConfig{} : load_web_config(opts.web_config_file);
  StatOptions stat = opts.stat;
  // Serving is continuous and host-wide unless a process is named.
  if (!stat.pid && !stat.tid && !stat.cpu_list) stat.all_cpus = true;
  validate_stat_options(stat);

  LiveFeed feed;
  Pages pages(feed, stat.function_mode() ? "function" : "counting");
  const HttpLimits limits;
  // Each connection is a descriptor, beside the counters' (which raise the limit further).
  raise_nofile_limit(limits.max_connections + 256);
  // Bind first: a port in use fails before anything is opened or attached. From here on,
  // scrapes are answered (pmcprof_up 0 until counting is live).
  HttpServer server(
      address, web, [&](const HttpRequest& req) { return pages.handle(req); }, limits,
      stat.verbose);
  ReloadOnHangup reloader(server);
  // However the run ends (an error too), requests waiting for the feed are released before
  // the server stops and joins its threads.
  struct FeedCloser {
    LiveFeed& feed;
    ~FeedCloser() { feed.set_source({}); }
  } closer{feed};
  PfmLibrary pfm;
  EventResolver resolver(pfm);
  auto specs = stat.events_given ? parse_event_list(join(stat.events, ",")) : default_events();
  auto groups = resolver.resolve(specs);
  if (!opts.stat.quiet) std::cerr << "pmcprof: serving " << server.url() << "/metrics\n";

  if (stat.function_mode()) {
    FunctionPlan plan = make_function_plan(stat, std::move(groups), resolver);
    // Lossless cumulative sums in the kernel, unless a breakdown needs the stream.
    if (plan.aggregate == AggregateChoice::both) plan.aggregate = AggregateChoice::kernel;
    plan.readers.push_back(feed.reader());
    plan.on_live = [&](LiveFeed::Source live) { feed.set_source(std::move(live)); };
    run_function_mode(plan, nullptr);
    return kExitOk;
  }
  CountingPlan plan = make_counting_plan(stat, groups, {});
  plan.readers.push_back(feed.reader());
  plan.on_live = [&](LiveFeed::Source live) { feed.set_source(std::move(live)); };
  run_counting(plan, nullptr);
  return kExitOk;
}

}  // namespace pmcprof
