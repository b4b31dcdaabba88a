#pragma once

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cstddef>
#include <vector>

namespace pmcprof {

// Looks `key` up in a PERCPU map and calls fn(value) once per possible CPU (the kernel lays
// the values out 8-byte aligned, one per possible CPU). Nothing is called when the key is absent.
template <typename T, typename Fn>
void for_each_cpu_value(int map_fd, const void* key, Fn&& fn) {
  const int ncpus = libbpf_num_possible_cpus();
  const std::size_t stride = (sizeof(T) + 7) & ~std::size_t{7};
  std::vector<unsigned char> buf(stride * static_cast<std::size_t>(ncpus));
  if (bpf_map_lookup_elem(map_fd, key, buf.data()) != 0) return;
  for (int c = 0; c < ncpus; ++c) fn(*reinterpret_cast<const T*>(buf.data() + stride * c));
}

}  // namespace pmcprof
