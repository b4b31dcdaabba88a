# Packaging: the bash completion's install rule and a Debian package built with CPack.
#
#   cmake --install BUILD                 binary, man page, bash completion, JSON docs and schema
#   cd BUILD && cpack -G DEB              pmcprof_<version>_<arch>.deb (see packaging/README.md)
#
# Included from the top-level CMakeLists.txt after its install() rules.
include(GNUInstallDirs)

# bash-completion loads completions/<command> on the first <TAB> after the command; under
# /usr/local it finds them through XDG_DATA_DIRS.
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/completion/pmcprof.bash
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
  RENAME pmcprof)

# The JSON reference, which `stat --help` and the man page point to, under the documentation
# directory; the JSON Schema and the jq mapping to perf's -j lines are data for tools, so they go
# under the data directory (minimal systems drop /usr/share/doc with dpkg path-excludes).
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/docs/json.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/docs/schema/pmcprof-1.schema.json
  DESTINATION ${CMAKE_INSTALL_DATADIR}/pmcprof/schema)
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/docs/perf-json.jq
  DESTINATION ${CMAKE_INSTALL_DATADIR}/pmcprof)

# ---- CPack: one binary .deb ----
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "pmcprof")
set(CPACK_PACKAGE_VENDOR "pmcprof")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
if(NOT DEFINED CPACK_PACKAGE_CONTACT)
  set(CPACK_PACKAGE_CONTACT "pmcprof maintainers <pmcprof@localhost>")
endif()
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "performance counters per CPU, task or kernel/user function, via eBPF")
set(CPACK_PACKAGE_DESCRIPTION
  "pmcprof counts hardware and software performance events the way perf stat does (on every
CPU, for a command, for a running task or per cgroup) and, with --func, measures the per-call
cost of a kernel function, a user function or a system call through eBPF: every call's counter
deltas, normalized for multiplexing, with its wall and on-CPU time. Text, CSV and JSON output.
pmcprof serve exports the counts to Prometheus (TLS, client certificates, basic auth); the
package ships its systemd unit (installed disabled, running as the system user pmcprof with
only the capabilities it needs), a Grafana dashboard and Prometheus alerting rules.")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_STRIP_FILES TRUE)
# Files copied into the package keep 0644/0755 whatever the umask of the build.
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
  OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)            # pmcprof_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION "devel")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
# Depends from dpkg-shlibdeps on the binary: libbpf1, libpfm4, libelf1, zlib1g, libstdc++6, ...
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "bash-completion, linux-perf, prometheus")
# postinst makes the service's system user with adduser.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)

# The service (pmcprof serve as a system user): maintainer scripts make the user and leave the
# unit disabled; /etc/default/pmcprof is a conffile (packaging/README.md).
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${CMAKE_CURRENT_SOURCE_DIR}/packaging/debian/postinst
  ${CMAKE_CURRENT_SOURCE_DIR}/packaging/debian/prerm
  ${CMAKE_CURRENT_SOURCE_DIR}/packaging/debian/postrm
  ${CMAKE_CURRENT_SOURCE_DIR}/packaging/debian/conffiles)

# Debian ships man pages gzipped (/usr/share/man/man1/pmcprof.1.gz): compress the staged copy.
# The same script stages the package-only files (the unit, /etc/default/pmcprof, ...), which
# `cmake --install` leaves out: they belong to a system-wide install by dpkg.
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_SOURCE_DIR}/packaging/cpack-pre-build.cmake)
set(CPACK_PMCPROF_MANDIR ${CMAKE_INSTALL_MANDIR})   # CPACK_* variables reach the script
set(CPACK_PMCPROF_SOURCE_DIR ${CMAKE_CURRENT_SOURCE_DIR})

# package_source: the tree without build directories and VCS data.
set(CPACK_SOURCE_GENERATOR "TGZ")
set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git/" "/build[^/]*/" "/_CPack_Packages/" "\\\\.deb$")

include(CPack)
