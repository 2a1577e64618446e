# "Only os/ calls the OS" (README, docs/os.md), checked on every source of
# src/ outside src/os/ (cmake -P this file):
#
#   cmake -DROOT=<source tree> -P tests/regress/check_os_calls.cmake
#
# A call is a listed name followed by '(' in code: comments, string and
# character literals are skipped, and so are member calls (`be->write(`,
# `x.read(`) and longer names (`tmem__os_read(`). The list is the system
# interface typedmem uses or could reach for: processes and environment,
# files and streams, memory mapping, sockets, clocks and sleeps, dynamic
# loading, threads (every pthread_*, C11 thrd_/mtx_/cnd_/tss_*). The OS headers
# that declare them (pthread.h, dlfcn.h, unistd.h, sys/*.h, ...) may not be
# included either. snprintf and the other formatting into memory are not
# OS calls. The one exception is base's assertion failure (base/status.c),
# below the OS layer by design: it prints to stderr and aborts.
# Fails (FATAL_ERROR, naming each file:line and the call).
cmake_minimum_required(VERSION 3.16)
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source tree> -P check_os_calls.cmake")
endif()

set(OS_CALLS
  getenv secure_getenv setenv unsetenv putenv sysconf getpid getppid getrlimit setrlimit prctl syscall
  fork vfork execv execve execvp waitpid kill raise signal sigaction abort exit _exit atexit
  fopen fdopen freopen fclose fflush fwrite fread fputs fputc fgets fprintf vfprintf printf vprintf puts perror
  open openat creat close read write pread pwrite lseek ftruncate fsync fstat stat lstat fcntl ioctl
  unlink rename mkstemp mkdir rmdir opendir readdir closedir
  mmap munmap mprotect madvise mlock munlock mincore msync memfd_create
  socket socketpair connect bind listen accept send recv sendmsg recvmsg
  clock_gettime gettimeofday time nanosleep usleep sleep sched_yield
  dlopen dlsym dlclose dlerror dladdr dl_iterate_phdr)
set(OS_PREFIXES pthread_ thrd_ mtx_ cnd_ tss_ call_once)
set(OS_HEADERS pthread.h threads.h dlfcn.h link.h unistd.h fcntl.h signal.h dirent.h sched.h "sys/[a-z_]+\\.h")
# file -> calls allowed there, with the reason above
set(ALLOW_base/status.c fprintf abort)

string(REPLACE ";" "|" _names "${OS_CALLS}")
string(REPLACE ";" "|" _prefixes "${OS_PREFIXES}")
string(REPLACE ";" "|" _headers "${OS_HEADERS}")
string(REPLACE "." "\\." _headers "${_headers}")
string(REPLACE "\\\\." "\\." _headers "${_headers}")
set(CALL_RE "(^|[^A-Za-z0-9_.>])((${_names})|((${_prefixes})[A-Za-z0-9_]*))[ \t]*\\(")
set(HEADER_RE "^[ \t]*#[ \t]*include[ \t]*<(${_headers})>")

set(violations "")
# One line of code without its comments and literals; `in_comment` carries a
# block comment over lines (PARENT_SCOPE).
function(strip_line line in_comment out out_in_comment)
  set(code "")
  set(rest "${line}")
  set(inc ${in_comment})
  # literals first: a "/*" inside a string is not a comment
  string(REGEX REPLACE "\"([^\"\\\\]|\\\\.)*\"" "\"\"" rest "${rest}")
  string(REGEX REPLACE "'([^'\\\\]|\\\\.)'" "''" rest "${rest}")
  while(NOT rest STREQUAL "")
    if(inc)
      string(FIND "${rest}" "*/" e)
      if(e EQUAL -1)
        set(rest "")
      else()
        math(EXPR e "${e} + 2")
        string(SUBSTRING "${rest}" ${e} -1 rest)
        set(inc OFF)
      endif()
    else()
      string(FIND "${rest}" "/*" b)
      string(FIND "${rest}" "//" l)
      if(l GREATER -1 AND (b EQUAL -1 OR l LESS b))
        string(SUBSTRING "${rest}" 0 ${l} part)
        string(APPEND code "${part}")
        set(rest "")
      elseif(b GREATER -1)
        string(SUBSTRING "${rest}" 0 ${b} part)
        string(APPEND code "${part} ")
        math(EXPR b "${b} + 2")
        string(SUBSTRING "${rest}" ${b} -1 rest)
        set(inc ON)
      else()
        string(APPEND code "${rest}")
        set(rest "")
      endif()
    endif()
  endwhile()
  set(${out} "${code}" PARENT_SCOPE)
  set(${out_in_comment} ${inc} PARENT_SCOPE)
endfunction()

file(GLOB_RECURSE files RELATIVE "${ROOT}/src" "${ROOT}/src/*.c" "${ROOT}/src/*.h")
set(nfiles 0)
foreach(rel IN LISTS files)
  if(rel MATCHES "^os/")
    continue()
  endif()
  math(EXPR nfiles "${nfiles} + 1")
  # cheap pass: only files with a candidate line get the careful one
  file(STRINGS "${ROOT}/src/${rel}" cand REGEX "${CALL_RE}|${HEADER_RE}")
  if(NOT cand)
    continue()
  endif()
  file(STRINGS "${ROOT}/src/${rel}" all)
  set(n 0)
  set(in_comment OFF)
  foreach(line IN LISTS all)
    math(EXPR n "${n} + 1")
    if(line MATCHES "${HEADER_RE}")
      list(APPEND violations "src/${rel}:${n}: includes <${CMAKE_MATCH_1}>, an OS header")
      continue()
    endif()
    strip_line("${line}" ${in_comment} code in_comment)
    set(code " ${code}")
    while(code MATCHES "${CALL_RE}")
      set(name "${CMAKE_MATCH_2}")
      if(NOT name IN_LIST ALLOW_${rel})
        list(APPEND violations "src/${rel}:${n}: calls ${name}()")
      endif()
      string(FIND "${code}" "${name}" at)
      string(LENGTH "${name}" len)
      math(EXPR at "${at} + ${len}")
      string(SUBSTRING "${code}" ${at} -1 code)
    endwhile()
  endforeach()
endforeach()

include(${CMAKE_CURRENT_LIST_DIR}/check_report.cmake)
check_report(violations "os calls: @N@ OS call(s) outside src/os/")
message(STATUS "os calls: ${nfiles} files of src/ outside src/os/, no OS call")
