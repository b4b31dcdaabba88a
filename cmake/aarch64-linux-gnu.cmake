# Cross build for Debian arm64 (aarch64-linux-gnu) on a Debian x86-64 host, multi-arch style:
#   dpkg --add-architecture arm64
#   apt-get install g++-aarch64-linux-gnu libc6-dev-arm64-cross \
#     libbpf-dev:arm64 libelf-dev:arm64 zlib1g-dev:arm64 libpfm4-dev:arm64
#   cmake -S . -B build/arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
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
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# Never pick up an x86-64 library by accident (find_library would otherwise search
# /usr/lib/x86_64-linux-gnu through the host's implicit link directories).
set(CMAKE_IGNORE_PATH /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/cmake
    /lib64 /usr/lib64)

# Programs run on the build host; libraries, headers and CMake packages are looked up as usual
# (multi-arch: the arm64 ones live beside the host's under /usr).
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
