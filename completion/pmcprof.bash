# bash completion for pmcprof(1)                                  -*- shell-script -*-
#
# Installed as /usr/share/bash-completion/completions/pmcprof (bash-completion loads it on the
# first <TAB> after "pmcprof"); or source it from ~/.bashrc. Needs nothing from bash-completion:
# only bash builtins, so it also works where that package is not installed.
#
#   pmcprof <TAB>                      stat list doctor serve report diff
#   pmcprof report <TAB>               files (a saved run), '-' for standard input; diff too
#   pmcprof stat -<TAB>                every flag of stat
#   pmcprof stat -e task-c<TAB>        event names from `pmcprof list --names` (also after a
#                                      comma, a '{' or a ':' modifier: -e '{cycles,instr<TAB>')
#   pmcprof stat -G sys<TAB>           cgroup v2 directories (under its mount, comma lists)
#   pmcprof stat --backend <TAB>       auto fentry kprobe (and --aggregate, --by, --cgroup-backend)
#   pmcprof stat --func syscall:<TAB>  system calls with tracepoints (and tracepoint:CAT:NAME)
#   pmcprof stat --func usdt:FILE:<TAB> the file's USDT probes (readelf -n), also as either end
#                                      of --region [NAME=]START,END
#   pmcprof stat -M I<TAB>             metrics and metric groups (`pmcprof list --metrics`)
#   pmcprof stat -- make <TAB>         the command's own completion
#
# The flags come from a built-in list, merged with those `pmcprof SUBCOMMAND --help` prints, so
# flags added later complete too.

_pmcprof_subcommands="stat list doctor serve report diff"
_pmcprof_top_opts="-h --help -V --version"

# stat's flags; the first list takes an argument. serve takes the same plus --listen ADDR:PORT
# and --web.config.file FILE, but not those of stat's report (the *_report lists: intervals,
# layout, metrics).
_pmcprof_stat_args="-e --event -C --cpu -p --pid -t --tid --timeout --func --region --backend
  --aggregate --by --max-keys --top --buffer-pages --thread-state -G --cgroup --for-each-cgroup
  --cgroup-backend"
_pmcprof_stat_flags="-h --help -a --all-cpus -A --per-cpu --no-aggr --no-sched-hook --no-compensate -v --verbose
  -q --quiet --python"
_pmcprof_stat_report_args="-I --interval-print --interval-count -r --repeat -x --field-separator
  -o --output -M --metrics"
_pmcprof_stat_report_flags="-j --json --json-output --per-thread --per-core --per-die
  --per-socket --per-node --no-merge -B --big-num --no-big-num --metric-only --metric-no-group
  --metric-no-merge -d --detailed --summary --no-csv-summary"
_pmcprof_list_args=""
_pmcprof_list_flags="-h --help --all -j --json --names --metrics --metricgroups"
_pmcprof_doctor_args=""
_pmcprof_doctor_flags="-h --help -j --json"
_pmcprof_report_args="-i --input -x --field-separator --hist-linear"
_pmcprof_report_flags="-h --help -j --json --prometheus --no-big-num --hist"
_pmcprof_diff_args="-x --field-separator --threshold --alpha"
_pmcprof_diff_flags="-h --help -j --json"

# Options of SUBCOMMAND (as two lists: taking an argument, flags) from `pmcprof SUB --help`
# (CLI11's layout: "  -o,--output FILE   text", "  -a,--all-cpus   text"), cached per binary.
# Sets _pmcprof_help_args and _pmcprof_help_flags.
_pmcprof_help_options() {
  local bin=$1 sub=$2 key line names arg n
  key="$bin $sub"
  if [[ ${_pmcprof_help_key-} == "$key" ]]; then
    return
  fi
  _pmcprof_help_key=$key
  _pmcprof_help_args=""
  _pmcprof_help_flags=""
  while IFS= read -r line; do
    [[ $line =~ ^[[:space:]]+(-[-A-Za-z0-9.,]*)([[:space:]]([A-Z][A-Z0-9_:]*))? ]] || continue
    names=${BASH_REMATCH[1]}
    arg=${BASH_REMATCH[3]}
    for n in ${names//,/ }; do
      [[ $n == -* ]] || continue
      if [[ -n $arg ]]; then
        _pmcprof_help_args+=" $n"
      else
        _pmcprof_help_flags+=" $n"
      fi
    done
  done < <("$bin" "$sub" --help 2>/dev/null)
}

# The options of SUB: sets _pmcprof_opt_args (those taking an argument) and _pmcprof_opt_all.
_pmcprof_options() {
  local bin=$1 sub=$2 args flags
  case $sub in
    stat)
      args="$_pmcprof_stat_args $_pmcprof_stat_report_args"
      flags="$_pmcprof_stat_flags $_pmcprof_stat_report_flags"
      ;;
    serve) args="$_pmcprof_stat_args --listen --web.config.file" flags=$_pmcprof_stat_flags ;;
    list) args=$_pmcprof_list_args flags=$_pmcprof_list_flags ;;
    doctor) args=$_pmcprof_doctor_args flags=$_pmcprof_doctor_flags ;;
    report) args=$_pmcprof_report_args flags=$_pmcprof_report_flags ;;
    diff) args=$_pmcprof_diff_args flags=$_pmcprof_diff_flags ;;
    *) args="" flags=$_pmcprof_top_opts ;;
  esac
  if [[ -n $sub ]]; then
    _pmcprof_help_options "$bin" "$sub"
    args+=" $_pmcprof_help_args"
    flags+=" $_pmcprof_help_flags"
  fi
  # shellcheck disable=SC2086 # word lists of option names
  _pmcprof_opt_args=$(printf '%s\n' $args | sort -u)
  # shellcheck disable=SC2086
  _pmcprof_opt_all=$(printf '%s\n' $args $flags | sort -u)
}

_pmcprof_takes_arg() {
  local opt=$1 a
  for a in $2; do
    [[ $a == "$opt" ]] && return 0
  done
  return 1
}

# Event names into _pmcprof_events, cached per binary (`pmcprof list --names` walks libpfm4's
# tables).
_pmcprof_load_events() {
  local bin=$1
  if [[ ${_pmcprof_events_bin-} != "$bin" || -z ${_pmcprof_events-} ]]; then
    _pmcprof_events=$("$bin" list --names 2>/dev/null)
    _pmcprof_events_bin=$bin
  fi
}

# -M: a comma list of metrics and metric groups (`pmcprof list --metrics --names`,
# `--metricgroups`), cached per binary.
_pmcprof_complete_metrics() {
  local bin=$1 cur=$2 prefix part
  if [[ ${_pmcprof_metrics_bin-} != "$bin" || -z ${_pmcprof_metrics-} ]]; then
    _pmcprof_metrics=$("$bin" list --metrics --names 2>/dev/null; "$bin" list --metricgroups 2>/dev/null)
    _pmcprof_metrics_bin=$bin
  fi
  part=${cur##*,}
  prefix=${cur:0:${#cur}-${#part}}
  _pmcprof_add "$prefix" "$part" <<<"$_pmcprof_metrics"
}

# The cgroup v2 mount point, from /proc/self/mountinfo (fields after " - ": fstype source opts).
_pmcprof_cgroup2_mount() {
  local line rest
  while IFS= read -r line; do
    rest=${line#* - }
    if [[ $rest == cgroup2\ * ]]; then
      line=${line#* * * * }
      printf '%s\n' "${line%% *}"
      return 0
    fi
  done </proc/self/mountinfo
  return 1
}

# Adds "PREFIX + candidate" for every candidate (one a line on stdin) that starts with PART.
_pmcprof_add() {
  local prefix=$1 part=$2 c
  while IFS= read -r c; do
    [[ -n $c && $c == "$part"* ]] && _pmcprof_candidates+=("$prefix$c")
  done
}

# -e: a comma list of events, optionally in {groups}, each with :modifiers.
_pmcprof_complete_events() {
  local bin=$1 cur=$2 prefix part
  part=${cur##*[,\{]}
  prefix=${cur:0:${#cur}-${#part}}
  if [[ $part == *:* && $part != *::* ]] || [[ $part == *::*:* ]]; then
    # EVENT:modifiers (generic events) or PMU::EVENT:UMASK: nothing to offer but what is typed.
    return
  fi
  _pmcprof_load_events "$bin"
  _pmcprof_add "$prefix" "$part" <<<"$_pmcprof_events"
}

# -G, --for-each-cgroup: directories of the cgroup v2 hierarchy, relative to its mount ("/x" is
# under the mount too) or absolute; a comma list for -G.
_pmcprof_complete_cgroups() {
  local cur=$1 mnt prefix part d
  mnt=$(_pmcprof_cgroup2_mount) || return
  part=${cur##*,}
  prefix=${cur:0:${#cur}-${#part}}
  if [[ $part == "$mnt"/* ]]; then
    # An absolute path into the mount.
    while IFS= read -r d; do
      [[ -n $d ]] && _pmcprof_candidates+=("$prefix$d/")
    done < <(compgen -d -- "$part")
  else
    [[ $part == /?* && $mnt/ == "$part"* ]] && _pmcprof_candidates+=("$prefix$mnt/")
    local lead=""
    [[ $part == /* ]] && lead=/
    while IFS= read -r d; do
      [[ -n $d ]] && _pmcprof_candidates+=("$prefix$lead${d#"$mnt"/}/")
    done < <(compgen -d -- "$mnt/${part#/}")
  fi
  _pmcprof_nospace=1
}

# The tracefs events directory, if mounted.
_pmcprof_tracefs_events() {
  local dir
  for dir in /sys/kernel/tracing/events /sys/kernel/debug/tracing/events; do
    [[ -d $dir ]] && printf '%s\n' "$dir" && return 0
  done
  return 1
}

# usdt:FILE:PROVIDER:NAME: the file, then the probes `readelf -n` lists in it.
_pmcprof_complete_usdt() {
  local cur=$1 rest file line provider name
  rest=${cur#usdt:}
  if [[ $rest == *:* ]]; then
    file=${rest%%:*}
    command -v readelf >/dev/null 2>&1 || return
    [[ -f $file ]] || return
    while IFS= read -r line; do
      line=${line#"${line%%[![:space:]]*}"}
      case $line in
        Provider:*) provider=${line#Provider: } ;;
        Name:*)
          name=${line#Name: }
          [[ usdt:$file:$provider:$name == "$cur"* ]] &&
            _pmcprof_candidates+=("usdt:$file:$provider:$name")
          ;;
      esac
    done < <(readelf -n "$file" 2>/dev/null)
    mapfile -t _pmcprof_candidates < <(printf '%s\n' "${_pmcprof_candidates[@]}" | sort -u)
    return
  fi
  while IFS= read -r name; do
    if [[ -d $name ]]; then
      _pmcprof_candidates+=("usdt:$name/")
    else
      _pmcprof_candidates+=("usdt:$name:")
    fi
  done < <(compgen -f -- "$rest")
  _pmcprof_nospace=1
}

# --func: syscall:NAME from the syscall tracepoints, tracepoint:CATEGORY:NAME, usdt:FILE:...,
# kernel:, or a PATH (PATH:SYMBOL).
_pmcprof_complete_func() {
  local cur=$1 dir name events cat
  if [[ $cur == usdt:* ]]; then
    _pmcprof_complete_usdt "$cur"
    return
  fi
  if [[ $cur == tracepoint:* ]]; then
    events=$(_pmcprof_tracefs_events) || return
    cat=${cur#tracepoint:}
    if [[ $cat == *:* ]]; then
      cat=${cat%%:*}
      for name in "$events/$cat"/*/; do
        name=${name%/}
        name=${name##*/}
        [[ tracepoint:$cat:$name == "$cur"* ]] && _pmcprof_candidates+=("tracepoint:$cat:$name")
      done
    else
      for name in "$events"/*/; do
        name=${name%/}
        name=${name##*/}
        [[ tracepoint:$name: == "$cur"* ]] && _pmcprof_candidates+=("tracepoint:$name:")
      done
      _pmcprof_nospace=1
    fi
    return
  fi
  if [[ $cur == syscall:* ]]; then
    for dir in /sys/kernel/tracing/events/syscalls /sys/kernel/debug/tracing/events/syscalls; do
      [[ -d $dir ]] || continue
      for name in "$dir"/sys_enter_*; do
        name=${name##*/sys_enter_}
        [[ syscall:$name == "$cur"* ]] && _pmcprof_candidates+=("syscall:$name")
      done
      break
    done
    return
  fi
  [[ syscall: == "$cur"* ]] && _pmcprof_candidates+=("syscall:")
  [[ usdt: == "$cur"* ]] && _pmcprof_candidates+=("usdt:")
  [[ tracepoint: == "$cur"* ]] && _pmcprof_candidates+=("tracepoint:")
  [[ kernel: == "$cur"* ]] && _pmcprof_candidates+=("kernel:")
  [[ libc: == "$cur"* ]] && _pmcprof_candidates+=("libc:")
  if [[ $cur != *:* ]]; then
    while IFS= read -r name; do
      [[ -d $name ]] && name+=/
      _pmcprof_candidates+=("$name")
    done < <(compgen -f -- "$cur")
  fi
  _pmcprof_nospace=1
}

# A file to read or write (a report, a saved run), or '-' for standard output or input.
_pmcprof_complete_files() {
  local cur=$1 p
  while IFS= read -r p; do
    _pmcprof_candidates+=("$p")
  done < <(compgen -f -- "$cur")
  [[ - == "$cur"* ]] && _pmcprof_candidates+=("-")
  _pmcprof_filenames=1
}

# The value of option OPT, being typed as CUR.
_pmcprof_complete_value() {
  local bin=$1 opt=$2 cur=$3 p
  case $opt in
    -e | --event) _pmcprof_complete_events "$bin" "$cur" ;;
    -M | --metrics) _pmcprof_complete_metrics "$bin" "$cur" ;;
    -G | --cgroup | --for-each-cgroup) _pmcprof_complete_cgroups "$cur" ;;
    --backend) _pmcprof_add "" "$cur" <<<$'auto\nfentry\nkprobe' ;;
    --aggregate) _pmcprof_add "" "$cur" <<<$'auto\nkernel\nstream\nboth' ;;
    --thread-state) _pmcprof_add "" "$cur" <<<$'auto\ntask-storage\nhash' ;;
    --by)
      _pmcprof_add "" "$cur" <<<$'pid\ncomm\ncpu\ncgroup\narg0\narg0:str\narg1\narg1:str\narg2\narg2:str'
      ;;
    --max-keys) _pmcprof_add "" "$cur" <<<$'16\n64\n256\n1024' ;;
    --top) _pmcprof_add "" "$cur" <<<$'5\n10\n20' ;;
    --cgroup-backend) _pmcprof_add "" "$cur" <<<$'auto\nfd\nbpf' ;;
    --func) _pmcprof_complete_func "$cur" ;;
    --region)
      # [NAME=]START,END: the point being typed, after the comma (or a NAME=).
      p=${cur##*,}
      [[ $p == "$cur" && $p == *=* && ${p%%=*} != *[:/]* ]] && p=${p#*=}
      local lead=${cur:0:${#cur}-${#p}} n0=${#_pmcprof_candidates[@]} k
      _pmcprof_complete_func "$p"
      for ((k = n0; k < ${#_pmcprof_candidates[@]}; k++)); do
        _pmcprof_candidates[k]="$lead${_pmcprof_candidates[k]}"
      done
      _pmcprof_nospace=1
      ;;
    -o | --output | -i | --input) _pmcprof_complete_files "$cur" ;;
    -p | --pid | -t | --tid)
      for p in /proc/[0-9]*; do
        p=${p#/proc/}
        [[ $p == "$cur"* ]] && _pmcprof_candidates+=("$p")
      done
      ;;
    -x | --field-separator) _pmcprof_add "" "$cur" <<<$',\n;' ;;
    --threshold) _pmcprof_add "" "$cur" <<<$'5\n10\n20' ;;
    --alpha) _pmcprof_add "" "$cur" <<<$'0.001\n0.01\n0.05' ;;
    --interval-count) _pmcprof_add "" "$cur" <<<$'1\n5\n10' ;;
    --buffer-pages) _pmcprof_add "" "$cur" <<<$'1\n2\n4\n8\n16\n32\n64\n128\n256' ;;
    -C | --cpu)
      for p in /sys/devices/system/cpu/cpu[0-9]*; do
        p=${p##*/cpu}
        [[ $p =~ ^[0-9]+$ && $p == "$cur"* ]] && _pmcprof_candidates+=("$p")
      done
      ;;
    --listen) _pmcprof_add "" "$cur" <<<$'127.0.0.1:\n[::1]:\n0.0.0.0:'
      _pmcprof_nospace=1 ;;
    --web.config.file)
      # YAML files and directories (to walk into).
      while IFS= read -r p; do
        [[ -d $p || $p == *.yml || $p == *.yaml ]] && _pmcprof_candidates+=("$p")
      done < <(compgen -f -- "$cur")
      _pmcprof_filenames=1
      ;;
  esac
}

_pmcprof() {
  local bin words=() cword cur i w sub="" opt val line bash_cur strip c
  bin=${COMP_WORDS[0]}
  [[ $bin == \~/* ]] && bin=$HOME/${bin#\~/}
  command -v "$bin" >/dev/null 2>&1 || bin=pmcprof

  # bash splits words at COMP_WORDBREAKS (':' and '=' among them): "cycles:u,task-c" arrives as
  # three words. Split the line at blanks only, and hand bash back just the part it replaces.
  if [[ -n ${COMP_LINE-} ]]; then
    line=${COMP_LINE:0:${COMP_POINT:-${#COMP_LINE}}}
    read -r -a words <<<"$line"
    [[ $line == *[[:space:]] || ${#words[@]} -eq 0 ]] && words+=("")
    cword=$((${#words[@]} - 1))
  else
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
  fi
  cur=${words[cword]}
  bash_cur=${COMP_WORDS[COMP_CWORD]}
  # After a break character ("--event=", "cycles:") bash inserts at the cursor.
  [[ $bash_cur == [=:] ]] && bash_cur=""
  # Inside an open quote ('{cycles,instr) readline keeps the quote: complete what follows it.
  [[ $cur == [\'\"]* ]] && cur=${cur:1}
  [[ $bash_cur == [\'\"]* ]] && bash_cur=${bash_cur:1}

  _pmcprof_candidates=()
  _pmcprof_nospace=""
  _pmcprof_filenames=""

  # The subcommand, and (stat) where the profiled command starts.
  local cmd_at=-1 skip=""
  for ((i = 1; i < cword; i++)); do
    w=${words[i]}
    if [[ -n $skip ]]; then
      skip=""
      continue
    fi
    if [[ -z $sub ]]; then
      [[ $w == -* ]] && continue
      sub=$w
      _pmcprof_options "$bin" "$sub"
      continue
    fi
    if [[ $w == -- ]]; then
      cmd_at=$((i + 1))
      break
    fi
    if [[ $w == -* ]]; then
      [[ $w != *=* ]] && _pmcprof_takes_arg "$w" "$_pmcprof_opt_args" && skip=1
      continue
    fi
    if [[ $sub == stat ]]; then
      cmd_at=$i
      break
    fi
  done

  if ((cmd_at >= 0 && cmd_at <= cword)); then
    # `pmcprof stat [options] [--] COMMAND ARGS`: complete as for COMMAND.
    if ((cmd_at == cword)); then
      mapfile -t COMPREPLY < <(compgen -c -- "$cur" | sort -u)
    elif declare -F _command_offset >/dev/null; then
      _command_offset "$(( COMP_CWORD - (cword - cmd_at) ))"
    else
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      compopt -o filenames 2>/dev/null
    fi
    return 0
  fi

  if [[ -z $sub ]]; then
    if [[ $cur == -* ]]; then
      _pmcprof_add "" "$cur" <<<"${_pmcprof_top_opts// /$'\n'}"
    else
      _pmcprof_add "" "$cur" <<<"${_pmcprof_subcommands// /$'\n'}"
    fi
  elif [[ $skip && $cword -gt 1 ]]; then
    # The word after an option that takes an argument.
    _pmcprof_complete_value "$bin" "${words[cword - 1]}" "$cur"
  elif [[ $cur == --*=* ]]; then
    opt=${cur%%=*}
    val=${cur#*=}
    _pmcprof_complete_value "$bin" "$opt" "$val"
    for i in "${!_pmcprof_candidates[@]}"; do
      _pmcprof_candidates[i]="$opt=${_pmcprof_candidates[i]}"
    done
  elif [[ $cur == -e?* && $cur != -e[-=]* ]] && [[ $sub == stat || $sub == serve ]]; then
    # -eEVENTS, glued.
    _pmcprof_complete_events "$bin" "${cur#-e}"
    for i in "${!_pmcprof_candidates[@]}"; do
      _pmcprof_candidates[i]="-e${_pmcprof_candidates[i]}"
    done
  elif [[ $cur == -* ]]; then
    _pmcprof_add "" "$cur" <<<"$_pmcprof_opt_all"
  elif [[ $sub == list ]]; then
    _pmcprof_load_events "$bin"
    _pmcprof_add "" "$cur" <<<"$_pmcprof_events"
  elif [[ $sub == report || $sub == diff ]]; then
    _pmcprof_complete_files "$cur"
  elif [[ $sub == stat ]]; then
    mapfile -t COMPREPLY < <(compgen -c -- "$cur" | sort -u)
    return 0
  fi

  # Hand bash back only what it replaces: the candidate minus what precedes its current word.
  COMPREPLY=()
  strip=$((${#cur} - ${#bash_cur}))
  ((strip < 0)) && strip=0
  for c in "${_pmcprof_candidates[@]}"; do
    [[ ${c:0:strip} == "${cur:0:strip}" ]] && COMPREPLY+=("${c:strip}")
  done
  [[ -n $_pmcprof_nospace ]] && compopt -o nospace 2>/dev/null
  [[ -n $_pmcprof_filenames ]] && compopt -o filenames 2>/dev/null
  return 0
}

complete -F _pmcprof pmcprof
