# tools/tmem/ (the benches included) uses only the public API and the
# testing APIs (typedmem/testing.h, tmemrt/testing.h): no tmem__/TMEM__ or
# tmrt__/TMRT__ name (internal functions are visible in the static
# libraries, so the include path alone would not catch a hand-written
# prototype), no include of a src/ header of the library or of the runtime.
file(GLOB_RECURSE files ${SRC}/tools/tmem/*.c ${SRC}/tools/tmem/*.h)
set(_lib "base|core|os|heap|plan|bind|io|surface|kv|model|trace|stats|device|gpu|backend")
set(_rt "kern|forward|session|sample|tok|convert|image|vision|util|rt_internal")
set(bad "")
foreach(f ${files})
  file(STRINGS ${f} lines REGEX "tmem__|TMEM__|tmrt__|TMRT__|#include \"(${_lib}|${_rt})[/.]")
  foreach(l IN LISTS lines)
    string(REPLACE ";" "," l "${l}") # one line, one item
    list(APPEND bad "${f}: ${l}")
  endforeach()
endforeach()
list(LENGTH files n)
if(n EQUAL 0)
  message(FATAL_ERROR "no tool sources found under ${SRC}/tools/tmem")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/../regress/check_report.cmake)
check_report(bad "@N@ line(s) reach library or runtime internals")
message("PASS: ${n} tool files use the public API only")
