# The layering rule, checked on every #include line (cmake -P this file).
#
#   cmake -DROOT=<source tree> -P tests/regress/check_layering.cmake
#
# Each layer of src/ may include only the layers listed for it (and its own
# files); the list is the layer order of README's architecture map, bottom-up,
# and a layer may name only layers declared before it. Public headers
# (include/typedmem/*.h) belong to the layer that implements them; a source
# file may include a public header of its own or an allowed layer, and a
# public header may include only headers of layers at or below its own in the
# order. The runtime (runtime/) sees only include/typedmem/ and itself.
#
# Includes are resolved as the compiler resolves them, not trusted by their
# spelling: an include without a '/' must be a file of the includer's own
# directory (src/) or of the runtime's tree (runtime/: its directory, then
# runtime/src and runtime/include); no include may climb with "..". A
# `*_internal.h` is private to its directory (and the directories below it):
# a file of another directory that includes it is reported even when the
# layers would allow it; the layers' contracts are `internal.h` and named
# headers.
# Fails (FATAL_ERROR, naming each file:line) on any violation.
cmake_minimum_required(VERSION 3.16)
if(NOT ROOT AND NOT LAYERING_TABLE_ONLY)
  message(FATAL_ERROR "usage: cmake -DROOT=<source tree> -P check_layering.cmake")
endif()

# ---- the layers, bottom-up, with what each may include ----
set(LAYERS base os backend core heap device plan bind io surface kv model trace stats gpu)
set(ALLOW_base "")
set(ALLOW_os base)
set(ALLOW_backend base os)
set(ALLOW_core base os backend)
set(ALLOW_heap base os backend core)
set(ALLOW_device base os backend core heap)
set(ALLOW_plan base os) # os: the exact search's second thread, nothing else
set(ALLOW_bind base os backend core heap plan)
set(ALLOW_io base os backend core plan)
set(ALLOW_surface base os backend core heap)
set(ALLOW_kv base os backend core heap device)
set(ALLOW_model base os backend core heap plan surface kv)
set(ALLOW_trace base os backend core)
set(ALLOW_stats base os backend core heap device)
set(ALLOW_gpu base os backend core heap device surface)

# Public headers -> the layer that implements them.
set(PUBLIC_common base)
set(PUBLIC_status base)
set(PUBLIC_placement base)
set(PUBLIC_system os)
set(PUBLIC_parse core)
set(PUBLIC_context core)
set(PUBLIC_heap heap)
set(PUBLIC_device device)
set(PUBLIC_plan plan)
set(PUBLIC_plan_heap bind)
set(PUBLIC_plan_io io)
set(PUBLIC_surface surface)
set(PUBLIC_kv kv)
set(PUBLIC_json model)
set(PUBLIC_safetensors model)
set(PUBLIC_model model)
set(PUBLIC_trace trace)
set(PUBLIC_testing trace) # the testing API (not installed): the trace hook
set(PUBLIC_gpu gpu)
set(PUBLIC_vulkan gpu)
set(PUBLIC_cuda gpu)
set(PUBLIC_typedmem gpu) # the umbrella: everything

set(violations "")
macro(violation file line what)
  list(APPEND violations "${file}:${line}: ${what}")
endmacro()

# The order itself: a layer may allow only layers declared before it.
set(seen "")
foreach(l IN LISTS LAYERS)
  foreach(a IN LISTS ALLOW_${l})
    if(NOT a IN_LIST seen)
      violation("check_layering.cmake" 0 "layer ${l} allows ${a}, which is not below it")
    endif()
  endforeach()
  list(APPEND seen ${l})
endforeach()

# The layer of a file under src/ (path relative to src/).
function(layer_of rel out)
  string(REGEX MATCH "^[^/]+" dir "${rel}")
  set(${out} "${dir}" PARENT_SCOPE)
endfunction()

# Every "..." include of a file, as a list of "line|path".
function(includes_of file out)
  file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  set(res "")
  file(STRINGS "${file}" all)
  set(n 0)
  foreach(l IN LISTS all)
    math(EXPR n "${n} + 1")
    if(l MATCHES "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\"")
      list(APPEND res "${n}|${CMAKE_MATCH_1}")
    endif()
  endforeach()
  set(${out} "${res}" PARENT_SCOPE)
endfunction()

# A `*_internal.h` (path `target`, relative to ROOT) may be included only from
# its own directory or one below it (`from`, relative to ROOT).
macro(private_check file line inc target from)
  if("${target}" MATCHES "_internal\\.h$")
    get_filename_component(_owner "${target}" DIRECTORY)
    string(FIND "${from}/" "${_owner}/" _at)
    if(NOT _at EQUAL 0)
      violation("${file}" ${line} "includes ${inc}, private to ${_owner}/")
    endif()
  endif()
endmacro()

function(index_of layer out)
  list(FIND LAYERS "${layer}" i)
  set(${out} ${i} PARENT_SCOPE)
endfunction()

if(LAYERING_TABLE_ONLY)
  return() # included by check_calls.cmake for the table and layer_of
endif()

# ---- src/ ----
file(GLOB_RECURSE src_files RELATIVE "${ROOT}/src" "${ROOT}/src/*.c" "${ROOT}/src/*.h")
set(checked 0)
foreach(rel IN LISTS src_files)
  layer_of("${rel}" me)
  if(NOT me IN_LIST LAYERS)
    violation("src/${rel}" 0 "directory '${me}' is not a declared layer (add it to the map)")
    continue()
  endif()
  includes_of("${ROOT}/src/${rel}" incs)
  foreach(entry IN LISTS incs)
    string(REPLACE "|" ";" parts "${entry}")
    list(GET parts 0 line)
    list(GET parts 1 inc)
    math(EXPR checked "${checked} + 1")
    get_filename_component(mydir "src/${rel}" DIRECTORY)
    if(inc MATCHES "(^|/)\\.\\.(/|$)")
      violation("src/${rel}" ${line} "includes ${inc}: no include climbs with '..'")
      continue()
    endif()
    if(NOT inc MATCHES "/")
      if(me STREQUAL "gpu" AND inc MATCHES "\\.spv\\.h$")
        continue() # generated shader, built next to the GPU backend
      endif()
      if(NOT EXISTS "${ROOT}/${mydir}/${inc}")
        violation("src/${rel}" ${line} "includes ${inc}, which is not a file of ${mydir}/")
      endif()
      continue() # a file of the same directory: the same layer
    endif()
    if(inc MATCHES "^typedmem/([a-z_]+)\\.h$")
      set(owner "${PUBLIC_${CMAKE_MATCH_1}}")
      if(NOT owner)
        violation("src/${rel}" ${line} "public header ${inc} has no layer (add it to the map)")
      elseif(NOT owner STREQUAL me AND NOT owner IN_LIST ALLOW_${me})
        violation("src/${rel}" ${line} "${me} includes ${inc} of layer ${owner}: upward")
      endif()
      continue()
    endif()
    if(NOT EXISTS "${ROOT}/src/${inc}")
      if(me STREQUAL "gpu" AND inc MATCHES "\\.spv\\.h$")
        continue() # generated shader, built next to the GPU backend
      endif()
      violation("src/${rel}" ${line} "includes ${inc}, which is not a file of src/")
      continue()
    endif()
    layer_of("${inc}" them)
    if(NOT them STREQUAL me AND NOT them IN_LIST ALLOW_${me})
      violation("src/${rel}" ${line} "${me} includes ${inc} of layer ${them}: upward")
    else()
      private_check("src/${rel}" ${line} "${inc}" "src/${inc}" "${mydir}")
    endif()
  endforeach()
endforeach()

# ---- include/typedmem/: public headers include only their own or lower layers ----
file(GLOB pub_files RELATIVE "${ROOT}/include/typedmem" "${ROOT}/include/typedmem/*.h")
foreach(h IN LISTS pub_files)
  string(REGEX REPLACE "\\.h$" "" stem "${h}")
  set(me "${PUBLIC_${stem}}")
  if(NOT me)
    violation("include/typedmem/${h}" 0 "public header without a layer (add it to the map)")
    continue()
  endif()
  index_of(${me} mine)
  includes_of("${ROOT}/include/typedmem/${h}" incs)
  foreach(entry IN LISTS incs)
    string(REPLACE "|" ";" parts "${entry}")
    list(GET parts 0 line)
    list(GET parts 1 inc)
    string(REGEX REPLACE "^(typedmem/)?([a-z_]+)\\.h$" "\\2" istem "${inc}")
    set(owner "${PUBLIC_${istem}}")
    if(NOT owner)
      violation("include/typedmem/${h}" ${line} "includes ${inc}: not a public header")
      continue()
    endif()
    index_of(${owner} theirs)
    if(theirs GREATER mine)
      violation("include/typedmem/${h}" ${line}
                "${me} header includes ${inc} of layer ${owner}: upward")
    endif()
  endforeach()
endforeach()

# ---- runtime/: the public API and itself only ----
# Each include resolved as the compiler would (the includer's directory,
# then runtime/src, runtime/include), then normalised: it must land inside
# runtime/ (or be a public header of include/typedmem/), whatever path led
# there ("../../../src/core/internal.h" exists, and is refused).
if(EXISTS "${ROOT}/runtime")
  file(GLOB_RECURSE rt_files RELATIVE "${ROOT}" "${ROOT}/runtime/*.c" "${ROOT}/runtime/*.h")
  foreach(rel IN LISTS rt_files)
    includes_of("${ROOT}/${rel}" incs)
    get_filename_component(dir "${ROOT}/${rel}" DIRECTORY)
    get_filename_component(mydir "${rel}" DIRECTORY)
    foreach(entry IN LISTS incs)
      string(REPLACE "|" ";" parts "${entry}")
      list(GET parts 0 line)
      list(GET parts 1 inc)
      if(inc MATCHES "^typedmem/[a-z_]+\\.h$" AND EXISTS "${ROOT}/include/${inc}")
        continue()
      endif()
      set(found "")
      foreach(cand "${dir}/${inc}" "${ROOT}/runtime/src/${inc}" "${ROOT}/runtime/include/${inc}")
        if(NOT found AND EXISTS "${cand}")
          get_filename_component(found "${cand}" ABSOLUTE)
        endif()
      endforeach()
      get_filename_component(rt_root "${ROOT}/runtime" ABSOLUTE)
      string(FIND "${found}" "${rt_root}/" at)
      if(NOT found OR NOT at EQUAL 0)
        violation("${rel}" ${line} "the runtime includes ${inc}: not the public API")
        continue()
      endif()
      file(RELATIVE_PATH target "${ROOT}" "${found}")
      private_check("${rel}" ${line} "${inc}" "${target}" "${mydir}")
    endforeach()
  endforeach()
endif()

include(${CMAKE_CURRENT_LIST_DIR}/check_report.cmake)
check_report(violations "layering: @N@ upward or private include(s)")
list(LENGTH src_files nfiles)
message(STATUS "layering: ${nfiles} files of src/, ${checked} includes, none upward")
