# BPF build helpers in the style of libbpf-bootstrap's bpf_object():
#   bpf/NAME.bpf.c --clang -target bpf--> NAME.bpf.o --bpftool gen skeleton--> NAME.skel.h

find_program(BPF_CLANG NAMES clang clang-14 REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /usr/local/sbin REQUIRED)

if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|amd64")
  set(BPF_TARGET_ARCH x86)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
  set(BPF_TARGET_ARCH arm64)
else()
  set(BPF_TARGET_ARCH ${CMAKE_SYSTEM_PROCESSOR})
endif()

# vmlinux.h comes from the build host's BTF: a native arm64 build has arm64's register layout in
# it; a cross build from x86 does not, and bpf/func.bpf.c then declares what it reads.
set(BPF_ARCH_DEFINES "")
if(BPF_TARGET_ARCH STREQUAL "arm64" AND NOT CMAKE_CROSSCOMPILING)
  set(BPF_ARCH_DEFINES -DPMCPROF_HAVE_USER_PT_REGS)
endif()

# -Wno-unused-function: bpf/pmcprof.h's static helpers, not every object uses every one.
# -Wno-unused-parameter: libbpf's BPF_PROG() declares ctx and every argument of the hook, used
# or not (sched_switch's preempt, ...).
set(BPF_WARNINGS -Wall -Wextra -Wno-unused-function -Wno-unused-parameter)
if(PMCPROF_WERROR)
  list(APPEND BPF_WARNINGS -Werror)
endif()

set(BPF_GEN_DIR ${CMAKE_BINARY_DIR}/bpf)
file(MAKE_DIRECTORY ${BPF_GEN_DIR})

# vmlinux.h: from the running kernel's BTF when it has one, else the checked-in copy.
function(pmcprof_vmlinux_h out_dir_var)
  set(out ${BPF_GEN_DIR}/vmlinux.h)
  set(fallback ${CMAKE_SOURCE_DIR}/bpf/vmlinux/vmlinux_x86_64.h)
  if(EXISTS /sys/kernel/btf/vmlinux)
    add_custom_command(OUTPUT ${out}
      COMMAND ${BPFTOOL} btf dump file /sys/kernel/btf/vmlinux format c > ${out}.tmp
      COMMAND ${CMAKE_COMMAND} -E rename ${out}.tmp ${out}
      COMMENT "Generating vmlinux.h from /sys/kernel/btf/vmlinux"
      VERBATIM)
  else()
    message(STATUS "No /sys/kernel/btf/vmlinux: using the checked-in ${fallback}")
    add_custom_command(OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -E copy ${fallback} ${out}
      DEPENDS ${fallback}
      COMMENT "Using checked-in vmlinux.h")
  endif()
  add_custom_target(vmlinux_h DEPENDS ${out})
  set(${out_dir_var} ${BPF_GEN_DIR} PARENT_SCOPE)
endfunction()

# bpf_object(NAME SOURCE [DEPENDS headers...]) -> target NAME_skel producing NAME.skel.h
function(bpf_object name source)
  cmake_parse_arguments(ARG "" "" "DEPENDS" ${ARGN})
  set(obj ${BPF_GEN_DIR}/${name}.bpf.o)
  set(skel ${BPF_GEN_DIR}/${name}.skel.h)
  set(src ${CMAKE_SOURCE_DIR}/${source})
  set(deps)
  foreach(d ${ARG_DEPENDS})
    list(APPEND deps ${CMAKE_SOURCE_DIR}/${d})
  endforeach()
  add_custom_command(OUTPUT ${obj}
    COMMAND ${BPF_CLANG} -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_${BPF_TARGET_ARCH} ${BPF_ARCH_DEFINES}
            ${BPF_WARNINGS}
            -I${BPF_GEN_DIR} -I${CMAKE_SOURCE_DIR}/bpf
            -c ${src} -o ${obj}
    DEPENDS ${src} ${deps} ${BPF_GEN_DIR}/vmlinux.h
    COMMENT "BPF: compiling ${source}"
    VERBATIM)
  add_custom_command(OUTPUT ${skel}
    COMMAND ${BPFTOOL} gen skeleton ${obj} name ${name}_bpf > ${skel}.tmp
    COMMAND ${CMAKE_COMMAND} -E rename ${skel}.tmp ${skel}
    DEPENDS ${obj}
    COMMENT "BPF: generating skeleton ${name}.skel.h"
    VERBATIM)
  add_custom_target(${name}_skel DEPENDS ${skel})
  add_dependencies(${name}_skel vmlinux_h)
endfunction()

function(pmcprof_add_skeleton target name)
  add_dependencies(${target} ${name}_skel)
  target_include_directories(${target} PRIVATE ${BPF_GEN_DIR})
endfunction()
