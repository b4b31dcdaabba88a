# Cross build for Debian arm64 (aarch64-linux-gnu) on a Debian x86-64 host, multi-arch style:
#   dpkg --add-architecture arm64
#   apt-get install g++-aarch64-linux-gnu libc6-dev-arm64-cross libbpf-dev:arm64 libelf-dev:arm64 \
#     zlib1g-dev:arm64 libpfm4-dev:arm64 libmicrohttpd-dev:arm64 libgnutls28-dev:arm64 \
#     libcrypt-dev:arm64 libre2-dev:arm64
#   cmake -S . -B build/arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
#     -DPMCPROF_ARM64_EXTRA_ROOT=DIR     # libyaml-cpp-dev:arm64 unpacked there, see below
# (scripts/install-deps.sh installs them; tests/guest/test_guest_arm64_pmu.py runs this build.)
# Headers and libraries come from the arm64 multi-arch directories (/usr/lib/aarch64-linux-gnu,
# /usr/include/aarch64-linux-gnu); the architecture-independent headers in /usr/include
# (libbpf, libpfm4, CLI11, nlohmann-json) serve both builds. Build tools (clang -target bpf,
# bpftool) are the host's: the BPF object is target-neutral bytecode.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# pkg-config: only the arm64 .pc files (and the architecture-independent ones).
set(_pc_libdir "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
# arm64 libraries whose -dev package cannot be installed beside the amd64 one (libyaml-cpp-dev is
# not multi-arch), unpacked with dpkg -x into PMCPROF_ARM64_EXTRA_ROOT with their .pc files
# pointing there: tests/guest/guest.py cross-build prepares it.
set(PMCPROF_ARM64_EXTRA_ROOT "" CACHE PATH "dpkg -x root of extra arm64 -dev packages")
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES PMCPROF_ARM64_EXTRA_ROOT)
if(PMCPROF_ARM64_EXTRA_ROOT)
  set(_pc_libdir "${PMCPROF_ARM64_EXTRA_ROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${_pc_libdir}")
endif()
set(ENV{PKG_CONFIG_LIBDIR} "${_pc_libdir}")
set(ENV{PKG_CONFIG_PATH} "")

# Never pick up an x86-64 library by accident (find_library would otherwise search
# /usr/lib/x86_64-linux-gnu through the host's implicit link directories).
set(CMAKE_IGNORE_PATH /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/cmake
    /lib64 /usr/lib64)

# Programs run on the build host; libraries, headers and CMake packages are looked up as usual
# (multi-arch: the arm64 ones live beside the host's under /usr).
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)

# The binaries run in the arm64 guest, where build-tree paths mean nothing: no RUNPATH.
set(CMAKE_SKIP_BUILD_RPATH ON)
