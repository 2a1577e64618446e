# What every check script of tests/regress/ ends with (include() it):
#   check_report(<list variable> <header>)
# fails (FATAL_ERROR) with "<header>:" and one item a line when the list is
# not empty; "@N@" in the header becomes the item count.
function(check_report items header)
  list(LENGTH ${items} n)
  if(n GREATER 0)
    string(REPLACE "@N@" "${n}" header "${header}")
    string(REPLACE ";" "\n  " text "${${items}}")
    message(FATAL_ERROR "${header}:\n  ${text}")
  endif()
endfunction()
