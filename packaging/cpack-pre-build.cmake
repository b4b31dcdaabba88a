# CPACK_PRE_BUILD_SCRIPTS (cmake/Packaging.cmake): runs after CPack installed the project into
# its staging directory, before it builds the package. Compresses the man pages as Debian policy
# wants (gzip -9n: no file name or time stamp inside, so the package is reproducible).
if(NOT CPACK_TEMPORARY_INSTALL_DIRECTORY OR NOT CPACK_PMCPROF_MANDIR)
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
