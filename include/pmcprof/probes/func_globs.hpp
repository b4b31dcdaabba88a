#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pmcprof/probes/elf_symbols.hpp"
#include "pmcprof/probes/target_spec.hpp"
#include "pmcprof/util/error.hpp"

namespace pmcprof {

// --func wildcards, as bpftrace and bcc's funccount take them: a glob (fnmatch(3): *, ?,
// [...]) in the function part of a --func target stands for every function of its kind whose
// name it matches (an ELF file's functions, the syscalls, the kernel's attachable functions),
// each measured in its own row as if given by its own --func. All pure but the callers'
// listing of the names.

// True when `name` holds a glob character (*, ? or [).
bool is_glob(std::string_view name);

// A well-formed glob of function-name characters: identifier characters, * and ?, and
// terminated [...] expressions (a [...] may hold !, ^, -, and [:class:]).
bool valid_glob(std::string_view pattern);

// The position of the last ':' of `text` outside a [...] expression ([[:digit:]] holds
// colons that do not separate a file from a symbol), or npos.
std::size_t last_colon_outside_brackets(std::string_view text);

// The names of `candidates` that `pattern` matches (fnmatch, no flags), once each, in row
// order: by name ignoring leading underscores, then the fewest underscores first, so an alias
// (getpid beside __getpid) sorts before its underscored twins and is the one kept.
std::vector<std::string> glob_matches(const std::string& pattern,
                                      const std::vector<std::string>& candidates);

// `glob` as --func would have named one of its matches: "./w:burn_*" -> "./w:burn_a",
// "syscall:getp*" -> "syscall:getppid", "vfs_*" -> "vfs_read".
FuncTarget expanded_target(const FuncTarget& glob, const std::string& name);

// The refusal of a glob that matched nothing: one line naming it and where it looked
// (`where`: "function in /bin/x", "syscall"), the closest names there are and how to list them
// (`list_hint`) as the hint.
UserError no_match_error(const FuncTarget& glob, const std::string& where,
                         const std::vector<std::string>& names, const std::string& list_hint);

// One row a --func stands for, before duplicates are dropped.
struct TargetRow {
  FuncTarget target;
  // What makes two rows one function: a user function's file and offset, a syscall's or a
  // kernel function's name; "" (a USDT probe, a tracepoint): never the same as another row.
  std::string identity;
  std::optional<std::size_t> glob;  // the index of the --func glob it matched, if it did
  std::optional<ElfFunction> user;  // a user function, resolved while listing the rows
};

// A glob's match dropped as a function an earlier row already measures.
struct DroppedRow {
  std::size_t glob = 0;  // the --func it matched
  std::string text;      // what it would have been called
  std::string same_as;   // the row that measures it
};

// Keeps the first row of each function: a glob's match that an earlier row measures (an alias
// at the same address, overlapping globs, a --func that names one of a glob's matches) is
// dropped, and so is a --func named after a glob that matched it. Two --func that each name
// the same function are both kept: resolve_targets refuses them as before, in one line.
std::vector<DroppedRow> drop_duplicate_rows(std::vector<TargetRow>& rows);

// Refuses rows past `limit` (with `regions` --region beside them): one line naming the glob
// that takes the count past it, how many functions it matched and the limit; the hint says to
// narrow it. `targets` are the --func as given (rows' `glob` indexes them).
void check_row_limit(const std::vector<TargetRow>& rows, const std::vector<FuncTarget>& targets,
                     std::size_t regions, std::size_t limit);

// -v: one line per glob, what it matched (and what it left out: duplicates, `skipped` notes
// indexed by glob).
std::vector<std::string> describe_expansions(
    const std::vector<TargetRow>& rows, const std::vector<DroppedRow>& dropped,
    const std::vector<FuncTarget>& targets,
    const std::vector<std::pair<std::size_t, std::string>>& skipped = {});

}  // namespace pmcprof
