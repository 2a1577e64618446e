# Every global symbol an archive defines carries the library's prefix
# (STYLE: public tmem_/tmrt_, internal tmem__/tmrt__), so nothing collides
# with an application's names when the static libraries are linked in.
#
#   cmake -DNM=<nm> -DARCHIVES="a.a;b.a" -DPREFIX=<regex> -P check_prefix.cmake
#
# Fails (FATAL_ERROR, naming each archive and symbol) on a defined global
# symbol that does not match ^PREFIX.
cmake_minimum_required(VERSION 3.16)
if(NOT NM OR NOT ARCHIVES OR NOT PREFIX)
  message(FATAL_ERROR "usage: cmake -DNM=nm -DARCHIVES=a.a -DPREFIX=regex -P check_prefix.cmake")
endif()
set(bad "")
set(total 0)
foreach(a IN LISTS ARCHIVES)
  execute_process(COMMAND ${NM} -g --defined-only ${a} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${a}")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  foreach(l IN LISTS lines)
    if(l MATCHES "^[0-9a-fA-F]+ [A-Za-z] ([^ ]+)$")
      set(sym "${CMAKE_MATCH_1}")
      # ASan's ODR indicator for a global (__odr_asan.NAME): check NAME.
      string(REGEX REPLACE "^__odr_asan[.]" "" sym "${sym}")
      math(EXPR total "${total} + 1")
      if(NOT sym MATCHES "^(${PREFIX})")
        get_filename_component(an ${a} NAME)
        list(APPEND bad "${an}: ${sym}")
      endif()
    endif()
  endforeach()
endforeach()
include(${CMAKE_CURRENT_LIST_DIR}/check_report.cmake)
check_report(bad "prefix: @N@ global symbol(s) without the prefix ${PREFIX}")
message(STATUS "prefix: ${total} global symbols, all ${PREFIX}")
