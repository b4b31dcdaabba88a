# pmcprof -j (schema pmcprof/1) to perf stat -j lines (perf 6.1): jq -c -f docs/perf-json.jq
# One perf object per counter; see docs/json.md, "perf stat -j and pmcprof -j".
(.interval // null) as $t
| .counters[]
| (if $t then {"interval": $t} else {} end)
+ (if .cpu != null then {"cpu": (.cpu | tostring)} else {} end)
+ (if .aggregate then
     (if .aggregate.tid then {"thread": .aggregate.id}
      else {(if .aggregate.core != null then "core" elif .aggregate.die != null then "die"
             elif .aggregate.node != null then "node" else "socket" end): .aggregate.id,
            "aggregate-number": .aggregate.cpus} end)
   else {} end)
+ {"counter-value": (if .status == "ok" then (if .unit == "ns" then .value / 1e6 else .value end | tostring)
                     elif .status == "not-counted" then "<not counted>" else "<not supported>" end),
   "unit": (if .unit == "ns" then "msec" elif .unit == "count" then "" else .unit end),
   "event": .event}
+ (if .cgroup then {"cgroup": .cgroup} else {} end)
+ {"event-runtime": .running_ns, "pcnt-running": (.running_pct // 100),
   "metric-value": (.metric.value // 0),
   "metric-unit": ((.metric.unit // "") | sub("^% "; ""))}
