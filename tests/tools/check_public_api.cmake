# tools/tmem/ uses only the public API: no tmem__/TMEM__ name (internal
# functions are visible in the static library, so the include path alone
# would not catch a hand-written prototype) and no include of a src/ header.
file(GLOB_RECURSE files ${SRC}/tools/tmem/*.c ${SRC}/tools/tmem/*.h)
# The benches still time internals (tools/tmem/bench/): not yet on the public API.
list(FILTER files EXCLUDE REGEX "/tools/tmem/bench/")
set(bad "")
foreach(f ${files})
  file(STRINGS ${f} lines REGEX "tmem__|TMEM__|#include \"(base|core|os|heap|plan|bind|io|surface|kv|model|trace|stats|device|gpu|backend)/")
  foreach(l ${lines})
    list(APPEND bad "${f}: ${l}")
  endforeach()
endforeach()
list(LENGTH files n)
if(n EQUAL 0)
  message(FATAL_ERROR "no tool sources found under ${SRC}/tools/tmem")
endif()
if(bad)
  string(REPLACE ";" "\n" bad "${bad}")
  message(FATAL_ERROR "tools reach library internals:\n${bad}")
endif()
message("PASS: ${n} tool files use the public API only")
