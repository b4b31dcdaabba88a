#include "pmcprof/cli/saved_input.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "pmcprof/events/event_resolver.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/fd.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

std::string read_all(int fd, const std::string& name) {
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n == 0) return text;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw UserError("cannot read " + name + ": " + errno_string(errno),
                      "give the JSON file 'pmcprof stat -j -o FILE' wrote");
    }
    text.append(buf, static_cast<std::size_t>(n));
  }
}

// Event name -> kind through libpfm4, for files without "attr". Only plain names (no PMU
// terms, no tracepoint, no model PMU::EVENT): perf's generic events, which is all a derived
// metric keys on, resolve the same on every machine. libpfm4 is started on the first lookup.
class GenericKinds {
 public:
  std::optional<EventKind> operator()(const std::string& event) {
    EventSpec spec;
    try {
      spec = parse_event(event);
    } catch (const UserError&) {
      return std::nullopt;
    }
    if (spec.slashed || spec.name.find(':') != std::string::npos) return std::nullopt;
    try {
      if (!pfm_) pfm_ = std::make_unique<PfmLibrary>();
      const ResolvedEvent e = EventResolver(*pfm_).resolve(spec);
      return EventKind{e.attr.type, e.attr.config};
    } catch (const Error&) {
      return std::nullopt;
    }
  }

 private:
  std::unique_ptr<PfmLibrary> pfm_;
};

}  // namespace

LoadedRun load_saved_run(const std::string& path) {
  LoadedRun loaded;
  std::string text;
  if (path == "-") {
    loaded.name = "standard input";
    text = read_all(STDIN_FILENO, loaded.name);
  } else {
    loaded.name = quote(path, 120);
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd)
      throw UserError("cannot read " + loaded.name + ": " + errno_string(errno),
                      "give the JSON file 'pmcprof stat -j -o FILE' wrote");
    text = read_all(fd.get(), loaded.name);
  }
  auto kinds = std::make_shared<GenericKinds>();
  loaded.run = read_saved_run(text, loaded.name,
                              [kinds](const std::string& event) { return (*kinds)(event); });
  return loaded;
}

}  // namespace pmcprof
