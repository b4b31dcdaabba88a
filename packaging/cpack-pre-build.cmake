# CPACK_PRE_BUILD_SCRIPTS (cmake/Packaging.cmake): runs after CPack installed the project into
# its staging directory, before it builds the package. Compresses the man pages as Debian policy
# wants (gzip -9n: no file name or time stamp inside, so the package is reproducible), and
# stages the files only the package installs (the service and its configuration).
if(NOT CPACK_TEMPORARY_INSTALL_DIRECTORY OR NOT CPACK_PMCPROF_MANDIR OR NOT CPACK_PMCPROF_SOURCE_DIR)
  message(FATAL_ERROR "cpack-pre-build.cmake runs from cpack (cmake/Packaging.cmake)")
endif()
file(GLOB_RECURSE _files LIST_DIRECTORIES false "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*")
foreach(f IN LISTS _files)
  if(f MATCHES "/${CPACK_PMCPROF_MANDIR}/man[1-9]/[^/]+\\.[1-9]$")
    execute_process(COMMAND gzip -9nf "${f}" RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "gzip ${f} failed (${rc})")
    endif()
  endif()
endforeach()

# Package-only files: source (packaging/...) -> path in the package.
set(_src ${CPACK_PMCPROF_SOURCE_DIR}/packaging)
set(_staged
  "pmcprof.service|lib/systemd/system/pmcprof.service"
  "pmcprof.default|etc/default/pmcprof"
  "web-config.yml|usr/share/doc/pmcprof/examples/web-config.yml"
  "grafana/pmcprof-dashboard.json|usr/share/pmcprof/grafana/pmcprof-dashboard.json"
  "prometheus/pmcprof-rules.yml|usr/share/pmcprof/prometheus/pmcprof-rules.yml")
foreach(entry IN LISTS _staged)
  string(REPLACE "|" ";" pair "${entry}")
  list(GET pair 0 from)
  list(GET pair 1 to)
  get_filename_component(dir "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/${to}" DIRECTORY)
  get_filename_component(name "${to}" NAME)
  file(MAKE_DIRECTORY "${dir}")
  file(COPY_FILE "${_src}/${from}" "${dir}/${name}")
  file(CHMOD "${dir}/${name}" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
endforeach()
