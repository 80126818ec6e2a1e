# SPDX-License-Identifier: MIT
# The API reference: target `topopreempt_docs` runs doxygen over the public headers
# (include/topopreempt/ outside detail/, and the C interface's header) into
# <build>/docs/reference/html. It is also the documentation check: any doxygen warning, such as
# a public entity without a doc comment, fails the target (docs/reference/Doxyfile.in), and so
# does an undocumented enum value (docs/reference/check_enumerators.py).
# Not part of `all`: build it by name. Defined only where doxygen is found.

find_package(Doxygen QUIET)
if(NOT DOXYGEN_FOUND)
  message(STATUS "topopreempt: doxygen not found; no target topopreempt_docs "
                 "(apt-get install doxygen, or -DTOPOPREEMPT_BUILD_DOCS=OFF to silence this)")
  return()
endif()
# The filter that shows the C header's plain comments to doxygen is a Python script.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "topopreempt: python3 not found; no target topopreempt_docs")
  return()
endif()

set(TOPOPREEMPT_DOCS_OUTPUT "${PROJECT_BINARY_DIR}/docs/reference")
configure_file("${PROJECT_SOURCE_DIR}/docs/reference/Doxyfile.in"
               "${TOPOPREEMPT_DOCS_OUTPUT}/Doxyfile" @ONLY)

file(GLOB_RECURSE _topopreempt_public_headers CONFIGURE_DEPENDS
     "${PROJECT_SOURCE_DIR}/include/topopreempt/*.hpp")
list(FILTER _topopreempt_public_headers EXCLUDE REGEX "/detail/")
set(_topopreempt_docs_stamp "${TOPOPREEMPT_DOCS_OUTPUT}/html/index.html")
add_custom_command(
  OUTPUT "${_topopreempt_docs_stamp}"
  COMMAND "${DOXYGEN_EXECUTABLE}" "${TOPOPREEMPT_DOCS_OUTPUT}/Doxyfile"
  # Doxygen does not warn about an undocumented value of a documented enum: checked from its XML.
  COMMAND "${Python3_EXECUTABLE}" "${PROJECT_SOURCE_DIR}/docs/reference/check_enumerators.py"
          "${TOPOPREEMPT_DOCS_OUTPUT}/xml"
  DEPENDS ${_topopreempt_public_headers}
          "${PROJECT_SOURCE_DIR}/integrations/c_api/include/topopreempt_c.h"
          "${PROJECT_SOURCE_DIR}/docs/reference/mainpage.md"
          "${PROJECT_SOURCE_DIR}/docs/reference/c_doc_filter.py"
          "${PROJECT_SOURCE_DIR}/docs/reference/check_enumerators.py"
          "${TOPOPREEMPT_DOCS_OUTPUT}/Doxyfile"
  WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
  COMMENT "Doxygen: the API reference in ${TOPOPREEMPT_DOCS_OUTPUT}/html (fails on any warning)"
  VERBATIM)
add_custom_target(topopreempt_docs DEPENDS "${_topopreempt_docs_stamp}")
