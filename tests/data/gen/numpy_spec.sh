#!/bin/sh
# CTest wrapper of check_spec_numpy.py: runs it with the first python3 that
# has numpy (the PATH's, then Debian's), else skips with exit 77.
for py in python3 /usr/bin/python3; do
    if "$py" -c 'import numpy' 2>/dev/null; then
        exec "$py" "$(dirname "$0")/check_spec_numpy.py" "$1"
    fi
done
echo "SKIP: no python3 with numpy (apt-get install python3-numpy)"
exit 77
