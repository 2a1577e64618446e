/* A planted violation for regress/prefix_catches_unprefixed: one prefixed
 * and one unprefixed global function, as a runtime file would define them. */
int tmrt__fixture_ok(int x);
int kern_fixture_bad(int x);
int tmrt__fixture_ok(int x) { return x + 1; }
int kern_fixture_bad(int x) { return x - 1; }
