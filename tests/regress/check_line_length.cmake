# Line length (issue 12; STYLE: short lines), checked on every .c/.h file.
#
#   cmake -DROOT=<source tree> [-DMAX=120] -P tests/regress/check_line_length.cmake
#
# Looks under src/, runtime/, tools/, bench/ and include/ of ROOT. Fails
# (FATAL_ERROR, naming each file:line and its length) when a line is longer
# than MAX bytes (default 120; new code aims at 100, this is the hard limit).
# Bytes, not characters: a line of UTF-8 text counts its bytes.
cmake_minimum_required(VERSION 3.16)
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source tree> [-DMAX=120] -P check_line_length.cmake")
endif()
if(NOT MAX)
  set(MAX 120)
endif()
math(EXPR _over "${MAX} + 1")
# CMake regexes have no {n,}: spell out MAX+1 non-newline bytes
string(REPEAT "[^\n]" ${_over} _long_line)

set(_files "")
foreach(dir src runtime tools bench include)
  file(GLOB_RECURSE _found ${ROOT}/${dir}/*.c ${ROOT}/${dir}/*.h)
  list(APPEND _files ${_found})
endforeach()
list(SORT _files)

# One-byte stand-ins for the characters that would break CMake list splitting
# (; separates, [ ] group), so each line stays one element of its length.
string(ASCII 1 _semi)
string(ASCII 2 _open)
string(ASCII 3 _close)
set(_bad "")
set(_nbad 0)
list(LENGTH _files _nfiles)
foreach(f IN LISTS _files)
  file(READ ${f} _text)
  if(NOT _text MATCHES "${_long_line}")
    continue() # the common case: no line to look at one by one
  endif()
  string(REPLACE ";" "${_semi}" _text "${_text}")
  string(REPLACE "[" "${_open}" _text "${_text}")
  string(REPLACE "]" "${_close}" _text "${_text}")
  string(REPLACE "\n" ";" _lines "${_text}")
  file(RELATIVE_PATH _rel ${ROOT} ${f})
  set(_no 0)
  foreach(line IN LISTS _lines)
    math(EXPR _no "${_no} + 1")
    string(LENGTH "${line}" _len)
    if(_len GREATER MAX)
      string(APPEND _bad "\n  ${_rel}:${_no}: ${_len} bytes")
      math(EXPR _nbad "${_nbad} + 1")
    endif()
  endforeach()
endforeach()

if(_nbad GREATER 0)
  message(FATAL_ERROR "${_nbad} line(s) over ${MAX} bytes:${_bad}\n"
                      "wrap them (one condition per line, aligned arguments, split literals)")
endif()
message(STATUS "line length: ${_nfiles} files, no line over ${MAX} bytes")
