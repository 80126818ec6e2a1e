# SPDX-License-Identifier: MIT
# Fails the configure step early when include/topopreempt/version.hpp disagrees with project().
include_guard(GLOBAL)

function(topopreempt_check_header_version header)
  file(STRINGS "${header}" _defines REGEX "^#define TOPOPREEMPT_VERSION_(MAJOR|MINOR|PATCH) ")
  set(_parts "")
  foreach(_part MAJOR MINOR PATCH)
    set(_value "")
    foreach(_line IN LISTS _defines)
      if(_line MATCHES "^#define TOPOPREEMPT_VERSION_${_part} +([0-9]+)")
        set(_value "${CMAKE_MATCH_1}")
      endif()
    endforeach()
    list(APPEND _parts "${_value}")
  endforeach()
  list(JOIN _parts "." _header_version)
  if(NOT _header_version STREQUAL PROJECT_VERSION)
    message(FATAL_ERROR "${header} says version '${_header_version}' but project() says "
                        "'${PROJECT_VERSION}'")
  endif()
endfunction()
